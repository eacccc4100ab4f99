"""The vault under git: commits per operation, history and undo, merge drivers."""
