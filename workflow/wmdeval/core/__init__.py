"""Shared types below every layer: Parquet schemas and I/O, method names, config,
coverage checks and small statistics. Imports nothing else from wmdeval."""
