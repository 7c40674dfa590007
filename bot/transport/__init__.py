"""How the app meets Slack: HTTP, Socket Mode, or the local mock Slack server for tests and the demo."""
