"""brain in shell scripts, cron and pipelines (docs/lab/probe-scripting.md): arguments that are
not UTF-8, tables read by `grep`, a transcript piped in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from brain.testing import tree_digest

ROOT = Path(__file__).resolve().parents[2]


def brain(
    *args: str | bytes, home: Path, stdin: bytes = b"", cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """`python -m brain` as a script runs it: its own process, stdout a pipe, no terminal."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home), "BRAIN_DAEMON": "off"}
    done = subprocess.run(
        [sys.executable, "-m", "brain", *args],
        input=stdin,
        capture_output=True,
        env={**full, **env},
        cwd=cwd,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


def test_an_argument_that_is_not_utf8_gets_one_line_and_changes_nothing(
    vault: Path, tmp_path: Path
) -> None:
    # `brain remember "$(cat notes-latin1.txt)"`: the shell hands over Latin-1 bytes.
    before = tree_digest(vault)
    cases: list[tuple[str | bytes, ...]] = [
        ("remember", b"caf\xe9 au lait"),
        ("remember", "plain text", "--title", b"caf\xe9"),
        ("remember", "plain text", "--tags", b"caf\xe9"),
        ("recall", b"caf\xe9"),
        ("recall", b"caf\xe9", "--json"),
        ("list", "--node", b"K\xe9"),
    ]
    for args in cases:
        said = brain(*args, "--vault", str(vault), home=tmp_path)
        assert said.returncode == 2, (args, said.stderr)
        assert "Traceback" not in said.stderr, args
        assert "is not UTF-8: byte 0xe9" in said.stderr and said.stdout == "", args
    assert tree_digest(vault) == before


def test_a_vault_in_a_folder_named_in_another_encoding_is_refused_with_its_name(
    vault: Path, tmp_path: Path
) -> None:
    latin = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9"))
    vault.rename(latin)
    by_env = brain("list", home=tmp_path, BRAIN_VAULT=str(latin))
    from_inside = brain("list", home=tmp_path, cwd=latin)
    for said, how in ((by_env, "BRAIN_VAULT"), (from_inside, "the current folder")):
        assert said.returncode == 2, said.stderr
        assert "Traceback" not in said.stderr
        assert f"path b'{tmp_path}/caf\\xe9' ({how}) is not UTF-8" in said.stderr
    made = brain("init", bytes(tmp_path) + b"/n\xe9", home=tmp_path)
    assert made.returncode == 2 and "argument 2 is not UTF-8" in made.stderr
    assert not Path(os.fsdecode(bytes(tmp_path) + b"/n\xe9")).exists()


def test_a_table_piped_to_grep_keeps_its_long_paths_whole(vault: Path, tmp_path: Path) -> None:
    folder = tmp_path / ("a-folder-name-long-enough-to-pass-eighty-columns" * 2) / "notes"
    folder.mkdir(parents=True)
    settings = vault / "brain.yaml"
    text = settings.read_text(encoding="utf-8")
    settings.write_text(
        text.replace("connectors: {}", f"connectors:\n  docs: {{path: {folder}}}"),
        encoding="utf-8",
    )
    said = brain("connectors", "--vault", str(vault), home=tmp_path, COLUMNS="80")
    assert said.returncode == 0, said.stderr
    row = next(line for line in said.stdout.splitlines() if "docs" in line)
    assert str(folder) in row and "not confirmed on this machine" in row


def test_ingest_reads_a_transcript_piped_to_it(vault: Path, tmp_path: Path) -> None:
    chat = b"# Kettle\n\n**User:** the kettle is orange\n\n**Assistant:** noted, orange\n"
    seed = b'{"title": "Sofa", "transcript": [{"role": "user", "content": "a lilac sofa"}]}'
    for piped, title in ((chat, "Kettle"), (seed, "Sofa")):
        said = brain("ingest", "-", "--json", "--vault", str(vault), home=tmp_path, stdin=piped)
        assert said.returncode == 0, said.stderr
        assert len(json.loads(said.stdout)["added"]) == 1
        found = brain("list", "--node", "Memory", "--json", "--vault", str(vault), home=tmp_path)
        assert title in [note["title"] for note in json.loads(found.stdout)["notes"]]
    again = brain("ingest", "-", "--json", "--vault", str(vault), home=tmp_path, stdin=chat)
    assert len(json.loads(again.stdout)["unchanged"]) == 1
    before = tree_digest(vault)
    latin = brain("ingest", "-", "--vault", str(vault), home=tmp_path, stdin=b"**User:** caf\xe9")
    assert latin.returncode == 2
    assert latin.stderr == "error: stdin: not UTF-8 text (bad byte at offset 13)\n"
    assert tree_digest(vault) == before
