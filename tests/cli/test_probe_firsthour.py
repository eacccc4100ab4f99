"""The first hour from a clean clone (docs/lab/probe-firsthour.md): a terminal that is not
UTF-8, `brain init` next to git and other vaults, `mcp-config --write` on odd settings files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from brain.testing import tree_digest
from tests.mcp.test_mcp_config import _write_in_pty, cursor_settings

ROOT = Path(__file__).resolve().parents[2]


def brain(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m brain` as a person's shell runs it: its own process, its own HOME."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home), "BRAIN_DAEMON": "off"}
    return subprocess.run(
        [sys.executable, "-m", "brain", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        env={**full, **env},
        check=False,
    )


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_terminal_that_is_not_utf8_gets_answers_not_a_traceback(
    vault: Path, tmp_path: Path, encoding: str
) -> None:
    title = "Café in Zürich — 日本"
    said = brain("remember", title, "--vault", str(vault), home=tmp_path, PYTHONIOENCODING=encoding)
    assert said.returncode == 0, said.stderr
    assert "Traceback" not in said.stderr and "Remembered" in said.stdout
    found = brain(
        "recall",
        "Zürich",
        "--json",
        "--vault",
        str(vault),
        home=tmp_path,
        PYTHONIOENCODING=encoding,
    )
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["hits"][0]["title"] == title  # exact, in ASCII escapes


# `brain init` ---------------------------------------------------------------------------------


def test_init_inside_a_vault_is_refused_and_the_vault_is_unchanged(
    vault: Path, tmp_path: Path
) -> None:
    before = tree_digest(vault)
    inner = vault / "main" / "Knowledge" / "notes"
    made = brain("init", str(inner), home=tmp_path)
    assert made.returncode == 2, made.stdout
    assert f"is inside the vault {vault}" in made.stderr and "Traceback" not in made.stderr
    assert tree_digest(vault) == before


def test_init_into_the_clone_of_an_empty_repository_keeps_the_repository(
    tmp_path: Path,
) -> None:
    clone = tmp_path / "notes"
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    made = brain("init", str(clone), "--git", home=tmp_path)
    assert made.returncode == 0, made.stderr
    assert (clone / "brain.yaml").is_file() and (clone / ".git" / "HEAD").is_file()
    log = subprocess.run(
        ["git", "-C", str(clone), "log", "--format=%s"], capture_output=True, text=True
    )
    assert log.stdout.strip() == "brain: start the vault's history"


def test_a_file_where_the_vault_goes_gets_a_way_out(tmp_path: Path) -> None:
    (tmp_path / "brain").write_text("a file\n")
    for args in (["init"], ["recall", "anything"]):
        said = brain(*args, home=tmp_path, BRAIN_VAULT="")
        assert said.returncode == 2
        assert "is a file" in said.stderr and "--vault PATH or BRAIN_VAULT" in said.stderr
    assert (tmp_path / "brain").read_text() == "a file\n"


# `brain mcp-config --write` -------------------------------------------------------------------


def test_write_refuses_a_settings_file_that_is_not_utf8(vault: Path, tmp_path: Path) -> None:
    settings = tmp_path / ".cursor" / "mcp.json"
    settings.parent.mkdir()
    settings.write_bytes(b"\xff\xfe{\x00}\x00")  # UTF-16, as some Windows editors save it
    said = brain("mcp-config", "cursor", "--write", "--vault", str(vault), home=tmp_path)
    assert said.returncode == 2 and "Traceback" not in said.stderr
    assert "is not UTF-8 text; nothing was written" in said.stderr
    assert settings.read_bytes() == b"\xff\xfe{\x00}\x00"


def test_write_through_a_linked_settings_file_keeps_the_link(vault: Path, tmp_path: Path) -> None:
    home, settings, original = cursor_settings(tmp_path)
    kept = tmp_path / "dotfiles" / "mcp.json"
    kept.parent.mkdir()
    settings.rename(kept)
    settings.symlink_to(kept)
    code, shown = _write_in_pty(vault, home, "yes")
    assert code == 0, shown
    assert settings.is_symlink() and settings.resolve() == kept.resolve()
    assert "brain" in json.loads(kept.read_text())["mcpServers"]
    assert [p.read_text() for p in kept.parent.glob("*.bak")] == [original]


def test_write_reads_past_a_byte_order_mark(vault: Path, tmp_path: Path) -> None:
    home, settings, original = cursor_settings(tmp_path)
    settings.write_bytes(b"\xef\xbb\xbf" + original.encode())  # as Windows Notepad saves it
    code, shown = _write_in_pty(vault, home, "yes")
    assert code == 0, shown
    written = settings.read_bytes()
    assert not written.startswith(b"\xef\xbb\xbf")
    assert sorted(json.loads(written)["mcpServers"]) == ["brain", "files"]
    [backup] = settings.parent.glob("*.bak")
    assert backup.read_bytes() == b"\xef\xbb\xbf" + original.encode()
