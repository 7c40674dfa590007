"""Bolt listeners by concern: slash commands, interactive actions, mentions and thread messages.

Each listener acks at once and does its work in a lazy listener, inside Slack's three seconds.
"""
