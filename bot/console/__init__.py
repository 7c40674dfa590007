"""The local console: the ops channel and a clickable node topology in the browser, with no Slack workspace.

Everything the page shows comes from what the bot really sent to the mock Slack server; everything the page
does goes to the bot through the signed injector, as Slack would send it.
"""
