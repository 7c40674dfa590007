"""The local telemetry store: Parquet samples by node and day, a SQLite database beside them, windowed reads."""
