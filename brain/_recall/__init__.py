"""Recall: scope, retrieve, fuse, rank and describe the memories that answer a query."""
