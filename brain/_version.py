"""This installation's version, read from the package metadata (one source: pyproject.toml)."""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "brain-memory"


def version() -> str:
    """The installed version of brain, e.g. "0.1.0" ("unknown" when run from a bare checkout)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"
