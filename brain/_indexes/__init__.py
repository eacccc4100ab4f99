"""Rebuildable caches under .brain/: catalog, full text, vectors, the embedder."""
