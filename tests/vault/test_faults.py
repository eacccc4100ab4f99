"""Faults injected into real processes: concurrent opens, kill -9 mid-write, lost caches."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from brain._brain import open_vault
from brain._clock import FixedClock
from brain._errors import BrainError, BrokenNote

# A worker: `open` (open the vault, recall, close, N times), `remember`, `bulk` (blocks of
# eight remembers in `bulk()`), `ingest` or `import`.
# Each acknowledged write prints `ack <id> <word>` only once its call has returned.
WORKER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from brain._brain import open_vault

    root, job, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    def ack(note_id, word):
        print("ack", note_id, word, flush=True)

    if job == "open":
        for _ in range(count):
            brain = open_vault(root, embedder=None)
            brain.recall("apple", mode="text")
            brain.close()
        sys.exit(0)
    brain = open_vault(root, embedder=None)
    print("ready", flush=True)
    for i in range(count):
        word = f"{job}word{sys.argv[4]}x{i}"
        if job == "remember":
            note = brain.remember(f"the {word} is remembered", title=f"Note {word}")
            ack(note.id, word)
        elif job == "bulk":  # a block's writes are durable, so acknowledged, when it ends
            with brain.bulk():
                notes = [brain.remember(f"the {word}y{n} is remembered", title=f"Bulk {word}y{n}")
                         for n in range(8)]
            for n, note in enumerate(notes):
                ack(note.id, f"{word}y{n}")
        elif job == "ingest":
            path = root.parent / f"{word}.json"
            turns = [{"role": "user", "content": f"tell me about {word}"},
                     {"role": "assistant", "content": f"{word} is a kind of test"}]
            path.write_text(json.dumps({"recall_id": word, "created_at": "2026-01-01T10:00:00Z",
                                        "platform": "claude.ai", "transcript": turns}))
            report = brain.ingest(path)
            ack(report.added[0], word)
        elif job == "import":
            path = root.parent / f"export-{word}"
            path.mkdir()
            chats = [{"uuid": f"{word}-{n}", "name": f"Chat {word} {n}",
                      "created_at": "2026-01-01T10:00:00+00:00",
                      "updated_at": "2026-01-01T10:05:00+00:00",
                      "chat_messages": [
                          {"uuid": f"{word}-{n}-a", "sender": "human",
                           "text": f"question {word}y{n}", "content": [],
                           "created_at": "2026-01-01T10:00:01+00:00"},
                          {"uuid": f"{word}-{n}-b", "sender": "assistant",
                           "text": f"answer {word}y{n}", "content": [],
                           "created_at": "2026-01-01T10:00:02+00:00"}]}
                     for n in range(20)]
            (path / "conversations.json").write_text(json.dumps(chats))
            (path / "users.json").write_text("[]")
            brain.import_export("claude", path)
            ack("-", word)
    brain.close()
    """
)


def _spawn(
    tmp_path: Path, vault: Path, job: str, count: int, tag: str = "0"
) -> subprocess.Popen[str]:
    script = tmp_path / "worker.py"
    if not script.exists():
        script.write_text(WORKER)
    env = {**os.environ, "BRAIN_DAEMON": "off"}
    return subprocess.Popen(
        [sys.executable, str(script), str(vault), job, str(count), tag],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _seed(vault: Path, clock: FixedClock, count: int = 12) -> None:
    brain = open_vault(vault, clock=clock, embedder=None)
    for i in range(count):
        brain.remember(f"apple note number {i}", title=f"Apple {i}")
    brain.close()


_TOKEN = re.compile(r"\b(?:remember|bulk|ingest|import)word\d+x\d+(?:y\d+)?\b")


def _check_whole(vault: Path, clock: FixedClock, acked: list[str]) -> None:
    """Every note parses, no acknowledged write is lost, text recall finds every note on disk."""
    brain = open_vault(vault, clock=clock, embedder=None)
    try:
        tokens: dict[str, set[str]] = {}  # each test word on disk → the notes holding it
        for rel, _st in brain._context.store.walk():
            try:
                note = brain._context.store.read(rel)
            except BrokenNote as exc:  # the failure being tested for
                pytest.fail(f"torn note {rel}: {exc}")
            for token in _TOKEN.findall(note.body):
                tokens.setdefault(token, set()).add(note.id)
        for word in acked:
            assert any(t.startswith(word) for t in tokens), f"acknowledged write {word} lost"
        for token, holders in tokens.items():
            # An import's chats share their word (20 a word): all of them, not the best 10.
            hits = brain.recall(token, mode="text", k=100)
            found = {h.id.split("#")[0] for h in hits}
            assert holders <= found, f"text recall does not find {token} in {holders - found}"
        brain._context.flush(vectors=False)
        assert brain._context.caches.catalog.count() == len(brain._context.caches.fulltext)
    finally:
        brain.close()


# defect 1: concurrent opens ----------------------------------------------------------------
def test_three_processes_opening_at_once_never_lose_the_full_text(
    vault: Path, clock: FixedClock, tmp_path: Path
) -> None:
    _seed(vault, clock)
    for trial in range(3):
        if trial != 1:  # also from nothing: the first open of a vault whose caches are gone
            shutil.rmtree(vault / ".brain")
        workers = [_spawn(tmp_path, vault, "open", 4) for _ in range(3)]
        for worker in workers:
            _out, err = worker.communicate(timeout=300)
            assert worker.returncode == 0, err
        brain = open_vault(vault, clock=clock, embedder=None)
        try:
            brain._context.flush(vectors=False)
            assert len(brain._context.caches.fulltext) == brain._context.caches.catalog.count() > 12
            assert len(brain.recall("apple", mode="text", k=50)) == 12
        finally:
            brain.close()


@pytest.mark.parametrize(
    "damage",
    ["delete the folder", "empty it", "another schema", "no stamp", "interrupted rebuild"],
)
def test_a_damaged_full_text_index_is_rebuilt_on_open_and_doctor_says_so(
    vault: Path, clock: FixedClock, damage: str
) -> None:
    _seed(vault, clock, 3)
    folder = vault / ".brain" / "fulltext"
    if damage == "delete the folder":
        shutil.rmtree(folder)
    elif damage == "empty it":
        brain = open_vault(vault, clock=clock, embedder=None)
        brain._context.flush(vectors=False)
        brain._context.caches.fulltext.clear()  # what a lost race used to leave: 0 documents
        brain.close()
    elif damage == "another schema":
        (folder / "schema").write_text("0")
    elif damage == "no stamp":
        (folder / "schema").unlink()
    else:
        brain = open_vault(vault, clock=clock, embedder=None)
        brain._context.caches.catalog.set_info("rebuilding", "1")  # a reindex killed halfway
        brain.close()
    brain = open_vault(vault, clock=clock, embedder=None)
    try:
        assert len(brain.recall("apple", mode="text")) == 3
        assert len(brain._context.caches.fulltext) == brain._context.caches.catalog.count()
        report = brain.doctor()
        assert report.ok and report.rebuilt and "2026-12-02" in report.rebuilt
        assert not list(vault.joinpath(".brain").glob("fulltext.old-*"))
    finally:
        brain.close()


@pytest.mark.parametrize(
    "damage", ["overwritten", "cut short", "pages after the first", "a table's page"]
)
def test_a_damaged_catalog_is_rebuilt_on_open_and_doctor_says_so(
    vault: Path, clock: FixedClock, damage: str
) -> None:
    _seed(vault, clock, 3)
    catalog = vault / ".brain" / "catalog.sqlite"
    data = catalog.read_bytes()
    if damage == "overwritten":
        catalog.write_bytes(b"not a database at all" * 300)
    elif damage == "cut short":
        catalog.write_bytes(data[: len(data) // 3])
    elif damage == "pages after the first":
        catalog.write_bytes(data[:4096] + bytes(range(256)) * 64 + data[4096 + 16384 :])
    else:  # the catalog opens; the first read of the queue meets the damage
        with sqlite3.connect(catalog) as db:
            size = db.execute("PRAGMA page_size").fetchone()[0]
            page = db.execute("SELECT rootpage FROM sqlite_master WHERE name='text_queue'")
            start = (page.fetchone()[0] - 1) * size
        db.close()
        catalog.write_bytes(data[:start] + bytes(range(256)) * (size // 256) + data[start + size :])
    brain = open_vault(vault, clock=clock, embedder=None)
    try:
        assert len(brain.recall("apple", mode="text")) == 3
        report = brain.doctor()
        assert report.ok and report.rebuilt and "the catalog could not be read" in report.rebuilt
    finally:
        brain.close()


def test_damaged_stored_texts_of_the_full_text_index_are_named_and_reindex_mends_them(
    vault: Path, clock: FixedClock
) -> None:
    _seed(vault, clock, 3)
    brain = open_vault(vault, clock=clock, embedder=None)
    brain.sleep()  # the queued texts written, in one segment
    brain.close()
    for store in (vault / ".brain" / "fulltext").glob("*.store"):
        data = bytearray(store.read_bytes())
        for i in range(0, len(data) - 200, 7):  # the blocks, not the footer that opening reads
            data[i] ^= 0x5A
        store.write_bytes(bytes(data))
    brain = open_vault(vault, clock=clock, embedder=None)
    try:
        with pytest.raises(BrainError, match=r"full-text index .*fulltext is damaged"):
            brain.recall("apple", mode="text")
        assert any("is damaged" in s and "brain reindex" in s for s in brain.doctor().stale)
        brain.reindex()
        assert len(brain.recall("apple", mode="text")) == 3 and brain.doctor().ok
    finally:
        brain.close()


def test_a_long_lived_process_heals_a_full_text_index_deleted_under_it(
    vault: Path, clock: FixedClock
) -> None:
    _seed(vault, clock, 3)
    brain = open_vault(vault, clock=clock, embedder=None)
    try:
        assert len(brain.recall("apple", mode="text")) == 3
        shutil.rmtree(vault / ".brain" / "fulltext")
        hits = brain.recall("apple", mode="text")
        assert len(hits) == 3 and all(h.snippet for h in hits)
    finally:
        brain.close()


def test_a_new_vaults_first_build_is_no_news_for_doctor(vault: Path, clock: FixedClock) -> None:
    brain = open_vault(vault, clock=clock, embedder=None)
    try:
        assert brain.doctor().rebuilt is None
    finally:
        brain.close()


def test_a_reader_never_deletes_an_index_being_built(vault: Path, clock: FixedClock) -> None:
    """A folder with no stamp may be another process's index half made: opening leaves it."""
    _seed(vault, clock, 2)
    folder = vault / ".brain" / "fulltext"
    (folder / "schema").unlink()
    from brain._indexes.fulltext import FullText

    before = sorted(p.name for p in folder.iterdir())
    reader = FullText(folder)
    assert reader.problem is not None and "half made" in reader.problem
    assert sorted(p.name for p in folder.iterdir()) == before


# kill -9 at random points -------------------------------------------------------------------
@pytest.mark.parametrize("job", ["remember", "bulk", "ingest", "import"])
def test_kill_9_mid_write_loses_no_acknowledged_write(
    vault: Path, clock: FixedClock, tmp_path: Path, job: str
) -> None:
    """Seeded trials: killed while writing, or while rebuilding caches that were deleted or are
    of an older schema (with two more processes opening the vault at the same moment); then
    every note parses, every acknowledged write is there, and text recall finds every note."""
    rng = random.Random(f"kill-{job}")
    _seed(vault, clock, 2)
    acked: list[str] = []
    for trial in range(4):
        rebuild = trial % 2 == 1
        if trial == 1:
            shutil.rmtree(vault / ".brain")
        elif trial == 3:
            (vault / ".brain" / "fulltext" / "schema").write_text("0")  # an upgrade
        worker = _spawn(tmp_path, vault, job, 200, f"{trial}")
        others = [_spawn(tmp_path, vault, "open", 2) for _ in range(2 if rebuild else 0)]
        assert worker.stdout is not None
        if rebuild:  # somewhere in start-up, the cache build or the first writes
            time.sleep(rng.uniform(0.3, 2.5))
        else:
            assert worker.stdout.readline().strip() == "ready"
            for _ in range(rng.randint(0, 4)):  # acks before the kill
                line = worker.stdout.readline().split()
                if line and line[0] == "ack":
                    acked.append(line[2])
            # A busy wait of a random length: somewhere inside the next write.
            for _ in range(rng.randint(0, 200_000)):
                pass
        worker.send_signal(signal.SIGKILL)
        out, _err = worker.communicate(timeout=60)
        acked += [line.split()[2] for line in out.splitlines() if line.startswith("ack")]
        for other in others:
            _out, err = other.communicate(timeout=300)
            assert other.returncode == 0, err
        _check_whole(vault, clock, acked)


def test_the_worker_script_reports_what_it_wrote(vault: Path, tmp_path: Path) -> None:
    """The harness itself: a worker left alone acknowledges every write it made."""
    worker = _spawn(tmp_path, vault, "remember", 3)
    out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert [line.split()[0] for line in out.splitlines()] == ["ready", "ack", "ack", "ack"]
    assert json.dumps(out)  # plain text


@pytest.mark.parametrize("damage", ["vectors.faiss", "vectors.sqlite", "the folder"])
def test_a_lost_vector_index_is_rebuilt_by_the_next_vector_recall(
    vault: Path, clock: FixedClock, damage: str
) -> None:
    brain = open_vault(vault, clock=clock)  # the test vault's hashing embedder
    note = brain.remember("the quince tree flowers in spring", title="Quince")
    assert brain.recall("quince tree", mode="vector")[0].id == note.id
    brain.close()
    folder = vault / ".brain" / "vectors"
    if damage == "the folder":
        shutil.rmtree(folder)
    else:
        (folder / damage).unlink()
    again = open_vault(vault, clock=clock)
    try:
        assert again.recall("quince tree", mode="vector")[0].id == note.id
        assert again._context.caches.vector_problem() is None
    finally:
        again.close()
