"""The node picture: a scene laid out from the topology graph and the diagnosis, drawn as PNG or SVG."""
