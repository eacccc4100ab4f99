"""The `brain` command: parse, call the core, render; every command behind one error boundary.

Each area of commands lives in its own module here and registers itself on `app` (cli/app.py).
"""

from __future__ import annotations

from brain._cli.app import app, arrange

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the full command line (the fast path in `brain/__main__.py` comes first)."""
    _register()
    app()


def _register() -> None:
    # Importing a command module registers its commands on `app`.
    from brain._cli import (  # noqa: F401
        assistants,
        corrections,
        daemon,
        git,
        hosted,
        hosted_users,  # after `hosted`: its `user` group joins `brain hosted`
        ingestion,
        links,
        notes,
        serve,
        upkeep,
    )

    arrange()
