"""The public surface: docs/python-api.md's example runs as written, and `brain.__all__` is
what that page documents, every name importable from `brain` itself."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types
from pathlib import Path

import brain

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "python-api.md"


def test_the_python_api_example_runs_as_written(tmp_path: Path) -> None:
    example = re.search(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert example is not None
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path), "BRAIN_DAEMON": "off"}
    done = subprocess.run(
        [sys.executable, "-c", example.group(1)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "Launch date" in done.stdout and "no note with id 01JE2Z3K4M5N6P7Q8R9S0T1V2W" in done.stdout
    )


def test_every_public_name_is_importable_and_documented() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert len(brain.__all__) == len(set(brain.__all__))
    for name in brain.__all__:
        assert getattr(brain, name) is not None, name
        assert f"`{name}" in page, f"{name} is public but docs/python-api.md does not name it"


def test_kind_status_and_visibility_are_the_words_in_the_files() -> None:
    from brain._model import KINDS, LOCAL_ONLY, STATUSES, VISIBILITIES

    words = ("singleton", "dated", "titled", "thread", "recall", "document", "chunk", "log")
    assert words == KINDS and [k.value for k in brain.Kind] == list(words)
    assert STATUSES == ("active", "dormant", "archived", "resolved", "superseded")
    assert VISIBILITIES == ("normal", "private", "local-only") and LOCAL_ONLY == "local-only"
    plain = (*KINDS, *STATUSES, *VISIBILITIES, LOCAL_ONLY)
    assert all(type(word) is str for word in plain)  # what reaches YAML, SQL and JSON
    assert brain.Status.ACTIVE == "active" and f"{brain.Visibility.LOCAL_ONLY}/x" == "local-only/x"


def test_the_package_offers_its_api_and_nothing_else() -> None:
    assert dir(brain) == sorted(brain.__all__)
    # Python binds each submodule on the package once it is imported: those are internal
    # modules (the page says so); any other public-looking name is a leak.
    stray = [
        name
        for name, value in vars(brain).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    ]
    assert stray == []


def test_every_member_of_a_brain_is_documented_as_api_or_as_internal() -> None:
    api, _, internal = PAGE.read_text(encoding="utf-8").partition("\n## Internal\n")
    assert internal, "docs/python-api.md has no Internal section"

    def named(name: str, text: str) -> bool:
        return re.search(rf"`{re.escape(name)}\b", text) is not None

    members = [name for name in dir(brain.Brain) if not name.startswith("_")]
    assert [m for m in members if named(m, api) == named(m, internal)] == []


def test_a_vault_is_opened_from_a_str_path_as_from_a_path(tmp_path: Path) -> None:
    """`brain.open_vault("~/brain")` raised a TypeError traceback: the API wanted a `Path`."""
    where = str(tmp_path / "vault")
    assert brain.init_vault(where)
    with brain.open_vault(where, embedder=None, sparse=None) as memory:
        note = memory.remember("The launch moved to May", title="Launch")
        assert memory.root == Path(where)
    with brain.open_vault(_Where(where), embedder=None, sparse=None) as memory:
        assert memory.expand(note.id, touch=False).title == "Launch"


class _Where:
    """A path-like object that is not a `Path`."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __fspath__(self) -> str:
        return self.path
