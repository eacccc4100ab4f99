"""`forget --purge` rewrites the vault's git history (asked at a real terminal, never without
one, never over MCP), and the forgetting check finds every trace, or says "no trace"."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from mcp import Client

from brain._brain import open_vault
from brain._clock import FixedClock
from brain._errors import InvalidInput
from brain._git.repo import enable
from brain._mcp_server import build_server
from brain._notes import purging
from brain.testing import tree_digest
from tests.cli.test_connect_terminal import _read_until as read_pty

ROOT = Path(__file__).resolve().parents[2]
TOKEN = b"zqxvortlemint"  # in no other text anywhere
TITLE = "Quillfeather ledger"
TEXT = "The zqxvortlemint recipe lives behind the third brick of the old orchard wall."
ME = ["-c", "user.name=Person", "-c", "user.email=person@example.org"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *ME, *args], capture_output=True, check=True)
    return done.stdout.decode()


def _env(vault: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "BRAIN_VAULT": str(vault),
        "NO_COLOR": "1",
        "COLUMNS": "400",
    }


def _brain(vault: Path, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload]
        [sys.executable, "-m", "brain", *args],
        capture_output=True,
        text=True,
        env=_env(vault),
        cwd=ROOT,
        check=False,
        **kwargs,
    )


def _secret(vault: Path, clock: FixedClock, *, under_git: bool = True) -> str:
    """A vault (under git, pushed to a bare remote) holding one note with a unique token."""
    if under_git:
        enable(vault)
    brain = open_vault(vault, clock=clock)
    try:
        note = brain.remember(TEXT, title=TITLE)
        brain.remember("Pears want a sunny wall and a dry winter.", title="Pears")
        brain.recall("zqxvortlemint recipe")  # the caches hold it too
    finally:
        brain.close()
    return note.id


def _traces_of(vault: Path, *needles: bytes) -> list[str]:
    """Every file under the vault whose raw bytes hold one of the needles (any case)."""
    found = []
    for path in sorted(vault.rglob("*")):
        if path.is_file():
            data = path.read_bytes().lower()
            if any(n.lower() in data for n in needles):
                found.append(path.relative_to(vault).as_posix())
    return found


def _read_until(fd: int, marker: bytes, seen: bytearray, limit: float = 120.0) -> None:
    read_pty(fd, marker, seen, limit)  # a rewrite of history may take longer than a connect


def _in_pty(vault: Path, args: list[str], answer: str | None) -> tuple[int, str]:
    """brain in a pseudo-terminal; answer None types the code shown (a person reading it)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session leader whose controlling terminal is the pty
        try:
            os.chdir(ROOT)
            os.execve(sys.executable, [sys.executable, "-m", "brain", *args], _env(vault))
        finally:
            os._exit(127)
    seen = bytearray()
    _read_until(fd, b"to rewrite the history: ", seen)
    found = re.search(rb"Type the code ([A-Z0-9]+) to rewrite the history", bytes(seen))
    assert found, seen.decode("utf-8", "replace")
    typed = found.group(1).decode().lower() if answer is None else answer
    os.write(fd, typed.encode() + b"\n")
    _read_until(fd, b"\0never", seen)  # to the end of output
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), seen.decode("utf-8", "replace")


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    return bare


def test_purge_at_a_terminal_leaves_no_byte_and_keeps_the_persons_commits(
    vault: Path, clock: FixedClock, remote: Path
) -> None:
    note_id = _secret(vault, clock)
    brain = open_vault(vault, clock=clock)
    brain.sleep()  # the day's log names it, in a commit
    brain.close()
    day_log = f"main/Insights/Logs/{clock.now().date().isoformat()}.md"
    assert "Quillfeather" in git(vault, "show", f"HEAD:{day_log}")
    git(vault, "remote", "add", "origin", str(remote))
    git(vault, "push", "-q", "origin", "HEAD", "HEAD:refs/heads/elsewhere")
    git(vault, "fetch", "-q", "origin")
    (vault / "mine.txt").write_text("my own words\n")
    git(vault, "add", "mine.txt")
    git(vault, "commit", "-q", "-m", "my own commit on top")
    assert _traces_of(vault / ".git", TOKEN) or git(vault, "log", "-p", "--all").count("zqxvortle")

    code, shown = _in_pty(vault, ["forget", note_id, "--purge"], None)
    assert code == 0, shown
    # Said first: the note, the commits to rewrite, the paths, the remote.
    assert TITLE in shown and "commit(s) from" in shown
    assert "main/Knowledge/Inbox/Quillfeather ledger.md" in shown
    # After: which remote keeps the old history, and the exact command (never run by brain).
    command = f"git -C {vault} push --force origin --all"
    assert "Remote origin" in shown and "still holds the old history" in shown
    assert "its branch elsewhere has no local branch of that name" in shown
    assert command in shown.replace("\r\n", "\n").replace("\n  ", " ")
    assert git(remote, "log", "--all", "--format=%s").count("Quillfeather") == 1  # not pushed

    # The person's commit is kept, rewritten; the rest of the vault is as it was.
    log = git(vault, "log", "--format=%s %an")
    assert "my own commit on top Person" in log and "Pears" in log
    assert (vault / "mine.txt").read_text() == "my own words\n"
    assert not git(vault, "status", "--porcelain")

    assert _brain(vault, "sleep").returncode == 0
    needles = (TOKEN, b"quillfeather", note_id.encode())
    assert _traces_of(vault, *needles) == []  # every file, .git's packs and reflogs included
    objects = subprocess.run(
        ["git", "-C", str(vault), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout
    assert not any(n in objects.lower() for n in needles)  # decompressed, not one object
    check = _brain(vault, "doctor", "--forgotten", note_id)
    assert check.returncode == 0 and "no trace" in check.stdout, check.stdout

    # The command brain printed replaces the history at the remote.
    subprocess.run(command, shell=True, check=True, capture_output=True)  # brain's own
    branch = git(vault, "branch", "--show-current").strip()
    assert git(remote, "rev-parse", branch) == git(vault, "rev-parse", "HEAD")


def test_without_purge_the_check_finds_the_note_in_git(vault: Path, clock: FixedClock) -> None:
    note_id = _secret(vault, clock)
    assert _brain(vault, "forget", note_id).returncode == 0
    assert _brain(vault, "sleep").returncode == 0
    assert not (vault / "main/Knowledge/Inbox/Quillfeather ledger.md").exists()
    check = _brain(vault, "doctor", "--forgotten", note_id)
    assert check.returncode == 1, check.stdout
    # The blob of the note and the commit that named it: id, title and text all found.
    assert re.search(r"trace \.git object \w+ \(blob\): id ×1, title ×1, text ×\d+", check.stdout)
    assert re.search(r"trace \.git object \w+ \(commit\): id ×1, title ×1", check.stdout)


def test_forget_and_sleep_in_a_files_vault_leave_no_byte(vault: Path, clock: FixedClock) -> None:
    note_id = _secret(vault, clock, under_git=False)
    assert _brain(vault, "forget", note_id).returncode == 0
    # Before the sleep the caches still hold it: the check says where.
    before = _brain(vault, "doctor", "--forgotten", note_id)
    assert before.returncode == 1 and "trace .brain/" in before.stdout, before.stdout
    assert _brain(vault, "sleep").returncode == 0
    assert _traces_of(vault, TOKEN, b"quillfeather", note_id.encode()) == []
    after = _brain(vault, "doctor", "--forgotten", note_id, "--json")
    assert after.returncode == 0 and '"traces": []' in after.stdout
    # The record itself holds no word of the note.
    record = (vault / ".brain" / "forgotten.json").read_bytes().lower()
    assert TOKEN not in record and b"quillfeather" not in record


def test_a_revert_purges_only_the_forgotten_version(vault: Path, clock: FixedClock) -> None:
    enable(vault)
    brain = open_vault(vault, clock=clock)
    try:
        old = brain.remember("The gate code is plainold.", title="Gate")
        new = brain.correct(old.id, "The gate code is zqxvortlemint.")
    finally:
        brain.close()
    code, shown = _in_pty(vault, ["forget", new.id, "--purge"], None)
    assert code == 0, shown
    assert "plainold" in (vault / "main/Knowledge/Inbox/Gate.md").read_text()
    objects = subprocess.run(
        ["git", "-C", str(vault), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout
    assert TOKEN not in objects and new.id.encode() not in objects
    assert b"plainold" in objects  # the version kept keeps its history


def test_no_terminal_refuses_and_changes_nothing(vault: Path, clock: FixedClock) -> None:
    note_id = _secret(vault, clock)
    before, head = tree_digest(vault), git(vault, "rev-parse", "HEAD")
    result = _brain(
        vault, "forget", note_id, "--purge", "--yes", input="yes\n", start_new_session=True
    )
    assert result.returncode == 2
    assert "confirmed by you at a terminal" in result.stderr
    assert "nothing was forgotten" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert tree_digest(vault) == before and git(vault, "rev-parse", "HEAD") == head


def test_a_wrong_code_changes_nothing(vault: Path, clock: FixedClock) -> None:
    note_id = _secret(vault, clock)
    before = tree_digest(vault)
    code, shown = _in_pty(vault, ["forget", note_id, "--purge"], "yes")
    assert code == 2 and "not confirmed" in shown
    assert tree_digest(vault) == before


def test_uncommitted_changes_by_hand_refuse_before_anything(vault: Path, clock: FixedClock) -> None:
    note_id = _secret(vault, clock)
    (vault / "README.md").write_text("changed by hand\n")
    before = tree_digest(vault)
    result = _brain(vault, "forget", note_id, "--purge", start_new_session=True)
    assert result.returncode == 2 and "README.md has uncommitted changes" in result.stderr
    assert tree_digest(vault) == before


def test_a_vault_not_under_git_forgets_and_says_so(vault: Path, clock: FixedClock) -> None:
    note_id = _secret(vault, clock, under_git=False)
    result = _brain(vault, "forget", note_id, "--purge", start_new_session=True)
    assert result.returncode == 0, result.stderr
    assert "not under git: there is no history to purge" in result.stdout
    assert not (vault / "main/Knowledge/Inbox/Quillfeather ledger.md").exists()


def test_a_vault_inside_another_repository_is_refused(
    tmp_path: Path, vault: Path, clock: FixedClock
) -> None:
    note_id = _secret(vault, clock, under_git=False)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    result = _brain(vault, "forget", note_id, "--purge", start_new_session=True)
    assert result.returncode == 2 and "inside the git repository at" in result.stderr
    assert (vault / "main/Knowledge/Inbox/Quillfeather ledger.md").exists()


def test_mcp_forget_has_no_purge_and_a_model_cannot_purge(vault: Path, clock: FixedClock) -> None:
    note_id = _secret(vault, clock)
    brain = open_vault(vault, clock=clock)
    try:

        async def main() -> None:
            async with Client(build_server(brain)) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert set(tools["forget"].input_schema["properties"]) == {"note_id"}
                result = await client.call_tool("forget", {"note_id": note_id, "purge": True})
                assert result.is_error and "unknown argument 'purge'" in str(
                    result.content[0].text  # type: ignore[union-attr]
                )

        anyio.run(main)
        model = brain.at(for_model=True)
        rows = model.forget_plan(note_id).remove
        with pytest.raises(InvalidInput, match="for the person at a terminal"):
            purging.purge(model._context, rows, lambda: model.forget(note_id), lambda _s: True)
    finally:
        brain.close()
    assert git(vault, "log", "--all", "--format=%s").count("Quillfeather") == 1


def test_disconnect_forget_purge_takes_every_document_out_of_history(
    vault: Path, clock: FixedClock, tmp_path: Path
) -> None:
    from tests.ingest.test_documents import attach

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "plan.md").write_text("# Plan\n\n" + TEXT + "\n\n## Later\n\nMore zqxvortlemint.\n")
    enable(vault)
    brain = open_vault(vault, clock=clock)
    try:
        attach(brain, folder, "docs")
        [report] = brain.sync()
        assert report.added == ["plan.md"]
        doc_id = documents_of_one(brain)
    finally:
        brain.close()
    git(vault, "commit", "-qam", "connect docs")  # `attach` skipped connect's own commit
    assert (
        TOKEN
        in subprocess.run(
            ["git", "-C", str(vault), "log", "-p"], capture_output=True, check=True
        ).stdout
    )
    code, shown = _in_pty(vault, ["disconnect", "docs", "--forget", "--purge"], None)
    assert code == 0, shown
    assert "forgot 1 document(s)" in shown
    assert _brain(vault, "sleep").returncode == 0
    assert _traces_of(vault, TOKEN, doc_id.encode()) == []
    check = _brain(vault, "doctor", "--forgotten", doc_id)
    assert check.returncode == 0 and "no trace" in check.stdout, check.stdout


def documents_of_one(brain: object) -> str:
    from brain._sources import documents

    [row] = documents.documents_of(brain._context, "docs").values()  # type: ignore[arg-type]
    return row.id


def test_purge_with_history_removes_every_version(vault: Path, clock: FixedClock) -> None:
    enable(vault)
    brain = open_vault(vault, clock=clock)
    try:
        old = brain.remember("The vault code is zqxvortlemint one.", title="Vault code")
        new = brain.correct(old.id, "The vault code is zqxvortlemint two.")
    finally:
        brain.close()
    code, shown = _in_pty(vault, ["forget", new.id, "--history", "--purge"], None)
    assert code == 0, shown
    assert _traces_of(vault / ".git", TOKEN, old.id.encode(), new.id.encode()) == []
    objects = subprocess.run(
        ["git", "-C", str(vault), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout
    assert TOKEN not in objects and old.id.encode() not in objects


def test_the_check_reads_the_cold_tier_decompressed(vault: Path, clock: FixedClock) -> None:
    """A cold copy left behind (a backup folder inside the vault, say) is found inside its
    zstd frame, where a grep of the raw bytes sees nothing."""
    from tests.notes.test_lifecycle import set_yaml

    set_yaml(vault, "cold: false", "cold: true")
    brain = open_vault(vault, clock=clock)
    try:
        note = brain.remember(TEXT, title=TITLE)
        move = brain.tier_move(note.id, "cold")
        assert move is not None
        frame = (vault / move.target).read_bytes()
        assert TOKEN not in frame.lower()  # compressed: invisible to grep
        brain.forget(note.id)
    finally:
        brain.close()
    leftover = vault / "cold" / "backup" / "copy.md.zst"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(frame)
    check = _brain(vault, "doctor", "--forgotten", note.id)
    assert check.returncode == 1
    assert "trace cold/backup/copy.md.zst (decompressed): id ×1, title ×1, text ×" in check.stdout


def test_the_check_of_an_id_never_forgotten_here_is_a_clear_error(vault: Path) -> None:
    result = _brain(vault, "doctor", "--forgotten", "01JE2Z3K4M5N6P7Q8R9S0T1V2W")
    assert result.returncode == 2
    assert "no forgetting of 01JE2Z3K4M5N6P7Q8R9S0T1V2W is recorded" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_forgetting_strikes_the_note_from_earlier_daily_logs(
    vault: Path, clock: FixedClock
) -> None:
    brain = open_vault(vault, clock=clock)
    try:
        note = brain.remember(TEXT, title=TITLE)
        kept = brain.remember("Pears want a sunny wall.", title="Pears")
        brain.sleep()
        day = clock.now().date().isoformat()
        log = vault / f"main/Insights/Logs/{day}.md"
        assert note.id in log.read_text()
        created = int(re.search(r"## Created \((\d+)\)", log.read_text())[1])  # type: ignore[index]
        clock.set(clock.now() + timedelta(days=3))
        brain.forget(note.id)
        text = log.read_text()
        assert f"## Created ({created - 1})" in text and kept.id in text
        assert note.id not in text and TITLE not in text
        brain.sleep()
    finally:
        brain.close()
    check = _brain(vault, "doctor", "--forgotten", note.id)
    assert check.returncode == 0 and "no trace" in check.stdout, check.stdout


def test_forgetting_draws_the_graph_again_without_the_note(vault: Path, clock: FixedClock) -> None:
    brain = open_vault(vault, clock=clock)
    try:
        note = brain.remember(TEXT, title=TITLE)
        newer = brain.correct(note.id, "The ledger moved to the second brick.")
        brain.write_graph()
        drawn = vault / "main/Insights/Graph.md"
        assert TITLE in drawn.read_text()
        brain.forget(newer.id, mode="history")
        text = drawn.read_text()
        assert TITLE not in text and note.id not in text and newer.id not in text
        brain.sleep()  # the caches' last bytes
    finally:
        brain.close()
    check = _brain(vault, "doctor", "--forgotten", note.id)
    assert check.returncode == 0 and "no trace" in check.stdout, check.stdout


def test_a_stash_refuses_before_anything(vault: Path, clock: FixedClock) -> None:
    """Expiring the reflog would drop all but the newest stash: the person decides first."""
    note_id = _secret(vault, clock)
    (vault / "README.md").write_text("half done\n")
    git(vault, "stash", "-q")
    before = tree_digest(vault)
    result = _brain(vault, "forget", note_id, "--purge", start_new_session=True)
    assert result.returncode == 2 and "you have stashed changes" in result.stderr
    assert tree_digest(vault) == before


def test_the_record_finds_id_title_and_text_but_not_a_shared_phrase() -> None:
    from brain._vault.forgotten import Record

    note_id = "01JE2Z3K4M5N6P7Q8R9S0T1V2W"
    record = Record.of(note_id, TITLE, TEXT, "2026-12-02T10:31:00Z")
    assert TOKEN.decode() not in str(record.to_json()) and "quill" not in str(record.to_json())
    whole = f"id: {note_id}\ntitle: {TITLE}\n\n{TEXT}\n".encode()
    assert record.find(whole) == {"id": 1, "title": 1, "text": len(record.fragments)}
    # One phrase of it inside another note: words many notes share, not this note's text.
    assert record.find(b"Mine lives behind the third brick of the barn.") == {}
    assert record.find(b"see QUILLFEATHER   ledger") == {"title": 1}
    assert Record.from_json(record.to_json()) == record
