"""Turning outside text into memory: chunking documents and parsing conversation transcripts."""
