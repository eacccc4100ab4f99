"""The hosted brain: many tenants behind `brain serve --http`, users and tokens in PostgreSQL."""
