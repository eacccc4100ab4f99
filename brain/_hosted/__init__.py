"""A hosted brain: many users' brains in PostgreSQL (or folders), served over HTTP with tokens."""
