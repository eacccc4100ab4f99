"""A hosted brain: many tenants' vaults in one PostgreSQL with pgvector, behind the same Brain."""
