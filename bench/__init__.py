"""Retrieval benchmarks for brain (LoCoMo, Maharana et al., ACL 2024; eval only)."""
