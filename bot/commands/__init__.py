"""Subcommands of the `fabricbot` command line."""
