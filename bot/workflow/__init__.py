"""The ticket workflow: the mock tracker (`tracker`), filing a draft as one transaction (`filing`), verifying repairs
(`verification`), and the states a draft and a ticket move through (`states`). It knows nothing of Slack's
messages; the listeners call it."""
