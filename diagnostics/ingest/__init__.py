"""Readers: raw input -> normalized tables (or, for the snapshot format, Snapshot models)."""
