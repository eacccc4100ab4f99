"""The source of truth: note files, settings and index.json in the vault folder."""
