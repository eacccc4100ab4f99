"""Many processes, one tenant: writes are serialised and lost by none, seen by all at once,
and a process killed mid-write loses no write it acknowledged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from brain._clock import FixedClock
from brain._hosted.tenant import open_tenant
from brain._indexes import catchup
from tests.conftest import pushed

ROOT = Path(__file__).resolve().parents[2]

WRITER = """
import sys
from brain._hosted.tenant import open_tenant

dsn, user, tag, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
brain = open_tenant(dsn, user)
for i in range(count):
    note = brain.remember(f"{tag} wrote memory number {i} about the harbour", title=f"{tag} {i}")
    print(note.id, flush=True)  # acknowledged: remember returned, its transaction committed
brain.close()
"""


def writer(dsn: str, user: str, tag: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, dsn, user, tag, str(count)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_two_processes_writing_one_tenant_lose_nothing(
    hosted_dsn: str, vault: Path, clock: FixedClock
) -> None:
    brain = pushed(hosted_dsn, vault, clock)
    user = brain.root.name
    before = brain._context.caches.catalog.note_count()
    procs = [writer(hosted_dsn, user, tag, 12) for tag in ("north", "south")]
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    ids = [i for out in outs for i in out]
    assert len(set(ids)) == 24
    assert brain._context.caches.catalog.note_count() == before + 24
    for note_id in ids:
        assert brain._context.get(note_id).id == note_id
    for tag, out in zip(("north", "south"), outs, strict=True):
        titled = {
            r.id for r in brain._context.caches.catalog.all_notes() if r.title.startswith(tag)
        }
        assert titled == set(out)
        assert set(out) <= {h.id for h in brain.recall(f"{tag} harbour", k=50, mode="text")}
    # The node statistics saw every write once: the inbox's index counts them all.
    inbox = brain._context.node_index.stats.count("main", "Knowledge/Inbox")
    assert inbox is not None and inbox.memories >= 24
    brain.close()


def test_a_memory_written_through_one_process_is_recalled_through_another_at_once(
    hosted_dsn: str, vault: Path, clock: FixedClock
) -> None:
    first = pushed(hosted_dsn, vault, clock)
    second = open_tenant(hosted_dsn, first.root.name, clock=clock)  # already open, already used
    assert second.recall("lighthouse keeper") == []
    note = first.remember("The lighthouse keeper retires in May.", title="Lighthouse")
    for mode in ("text", "vector", "hybrid"):
        assert [h.id for h in second.recall("lighthouse keeper", mode=mode)] == [note.id]
    second.forget(note.id)
    assert first.recall("lighthouse keeper") == []
    first.close()
    second.close()


def test_a_killed_writer_loses_no_acknowledged_write(
    hosted_dsn: str, vault: Path, clock: FixedClock
) -> None:
    brain = pushed(hosted_dsn, vault, clock)
    proc = writer(hosted_dsn, brain.root.name, "killed", 10_000)
    assert proc.stdout is not None
    acked = [proc.stdout.readline().strip() for _ in range(8)]
    proc.send_signal(signal.SIGKILL)  # somewhere inside a later write
    proc.wait(timeout=30)
    for note_id in acked:
        assert brain._context.get(note_id).id == note_id
    # Whatever was half done rolled back whole: files and caches agree row for row.
    found = catchup.compare(brain._context.store, brain._context.caches.catalog)
    assert not found.out_of_step and not found.missing
    notes = {row.id for row in brain._context.caches.catalog.all_notes()}
    assert set(acked) <= notes
    written = [r for r in notes if brain._context.caches.catalog.get(r).title.startswith("killed")]
    assert all(brain._context.caches.fulltext.stored(r) is not None for r in written)
    assert len(brain._context.caches.vectors.vectors(written)) == len(written)
    brain.close()


def test_hosted_sleep_beside_a_writer_loses_no_note(
    hosted_dsn: str, vault: Path, clock: FixedClock
) -> None:
    brain = pushed(hosted_dsn, vault, clock)
    proc = writer(hosted_dsn, brain.root.name, "beside", 15)
    sleeper = subprocess.run(
        [sys.executable, "-m", "brain", "hosted", "sleep", "--db", hosted_dsn, "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    ids = proc.communicate(timeout=120)[0].split()
    assert sleeper.returncode == 0, sleeper.stderr
    assert proc.returncode == 0 and len(ids) == 15
    for note_id in ids:
        assert brain._context.get(note_id).title.startswith("beside")
    found = catchup.compare(brain._context.store, brain._context.caches.catalog)
    assert not found.out_of_step and not found.missing
    brain.close()


def test_a_writer_waiting_too_long_for_the_tenant_is_told_so(
    hosted_dsn: str, vault: Path, clock: FixedClock
) -> None:
    import pytest

    from brain._errors import VaultBusy

    first = pushed(hosted_dsn, vault, clock)
    second = open_tenant(hosted_dsn, first.root.name, clock=clock)
    other = pushed(hosted_dsn, vault, clock)  # another tenant never waits
    second._context.lock.timeout = 0.3
    with first._context.lock.hold():
        with pytest.raises(VaultBusy, match="writer lock of user"):
            second.remember("blocked", title="Blocked")
        other.remember("free", title="Free")
    assert second.remember("now it goes", title="Goes").title == "Goes"
    assert second.recall("blocked") == []  # the refused write left nothing
    for brain in (first, second, other):
        brain.close()
