"""fabricbot's face: the Slack app, its transports, the mock tracker and the command line."""
