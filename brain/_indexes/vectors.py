"""The vector cache: unit vectors in a faiss inner-product index, found by object id."""

from __future__ import annotations

import errno
import hashlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain._errors import BrainError
from brain._indexes import approximate
from brain._vault.files import owner_only

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

SCHEMA_VERSION = 1
INDEX_FILE = "vectors.faiss"
IDS_FILE = "vectors.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ids (fid INTEGER PRIMARY KEY, object_id TEXT NOT NULL UNIQUE);
"""


@dataclass(frozen=True)
class Rebuild:
    """A rebuild begun: the kind to build, a copy of the vectors and ids, the file it saw."""

    target: str
    matrix: Any
    fids: Any
    stamp: tuple[int, int, int] | None

    def build(self) -> Any:
        """The new index, from the copy; holds no lock (searches and writes go on)."""
        return approximate.build(self.matrix, self.fids, self.target)


class Found:
    """The nearest ids of one search, best first, each faiss id named as it is read: recall
    filters the best few of a deep search (recall/rank.py, `filtered`), and naming is a
    lookup in the ids table (at 100k memories ~0.5 ms a recall when all 200 were named).
    A faiss id the table does not know (it was cleared since) is left out."""

    def __init__(
        self, hits: list[tuple[int, float]], name: Callable[[Sequence[int]], dict[int, str]]
    ) -> None:
        self._hits = hits
        self._name = name

    def __len__(self) -> int:
        return len(self._hits)

    def __getitem__(self, part: slice) -> list[tuple[str, float]]:
        hits = self._hits[part]
        names = self._name([f for f, _ in hits])
        return [(names[f], score) for f, score in hits if f in names]

    def __iter__(self) -> Iterator[tuple[str, float]]:
        return iter(self[:])


class StaleIndex(BrainError):
    """The vector index was built for another embedder or size, or is damaged: rebuild it."""


def faiss_id(object_id: str) -> int:
    """The faiss id of an object id: a 63-bit hash, the same in every process."""
    digest = hashlib.blake2b(object_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1  # non-negative: faiss uses -1 for "no result"


class VectorIndex:
    """A faiss `IndexIDMap2(IndexFlatIP)` in a folder, with a SQLite map of faiss ids to names;
    above `approximate.THRESHOLD` vectors `rebuild()` makes it an IVF index (approximate.py),
    which adds and removes ids in place, so forgetting stays immediate under it too.

    The index file is the truth for what is in the index; it is replaced whole by `save()`.
    Faiss ids are hashes of the object ids, so the map only ever has to name them, and it is
    written before the index: a crash can leave extra names, never a nameless vector.
    Writers must hold the vault lock; a reader reloads when another process saved.
    """

    def __init__(self, folder: Path, dim: int, embedder: str) -> None:
        self.folder = folder
        self.dim = dim
        self.embedder = embedder
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._index: Any = None  # the faiss index, read at first use
        self._stamp: tuple[int, int, int] | None = None  # the file we read: inode, mtime, size
        self._dirty = False
        self._removed: set[int] = set()  # names to drop from the map once a save drops them
        # While a rebuild reads a copy outside the lock, the changes made meanwhile, to replay.
        self._replay: list[tuple[Any, Any]] | None = None

    @property
    def index_file(self) -> Path:
        return self.folder / INDEX_FILE

    def upsert(self, ids: Sequence[str], vectors: ArrayLike) -> None:
        """Add or replace the vectors of these ids (rows of `vectors`, unit length)."""
        import numpy as np

        if not ids:
            return
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(ids):
            raise ValueError(f"need {len(ids)} rows of vectors, got shape {matrix.shape}")
        self._check_dim(matrix.shape[1])
        last = {object_id: row for row, object_id in enumerate(ids)}  # a repeated id: last wins
        fids = np.fromiter((faiss_id(i) for i in last), dtype=np.int64, count=len(last))
        with self._lock:
            index = self._ensure()
            named = self._name(list(last), fids.tolist())
            # faiss keeps both copies when an id is added twice: take the old one out first.
            # Only ids named before can be in the index (a name is written before its vector),
            # and a removal scans every id the index holds: new ids skip it, or a bulk flush
            # would cost batches × size (at 1M, hours).
            if named:
                index.remove_ids(np.array(named, dtype=np.int64))
            rows = np.ascontiguousarray(matrix[list(last.values())])
            index.add_with_ids(rows, fids)
            if self._replay is not None:
                self._replay.append((fids, rows))
            self._removed.difference_update(fids.tolist())
            self._dirty = True

    def remove(self, ids: Iterable[str]) -> int:
        """Take these ids out (unknown ids are ignored); returns how many were there."""
        import numpy as np

        fids = np.array(sorted({faiss_id(i) for i in ids}), dtype=np.int64)
        if not len(fids):
            return 0
        with self._lock:
            gone = int(self._ensure().remove_ids(fids))
            if self._replay is not None:
                self._replay.append((fids, None))
            if gone:
                self._removed.update(fids.tolist())
                self._dirty = True
            return gone

    def search(
        self, vector: ArrayLike, k: int, allowed: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """The k nearest ids by inner product, best first; only ids in `allowed` if given."""
        return list(self.ranked(vector, k, allowed))

    def ranked(
        self, vector: ArrayLike, k: int, allowed: set[str] | None = None
    ) -> Found | list[tuple[str, float]]:
        """`search`, its ids named as they are read (a list where the storage names them)."""
        import faiss
        import numpy as np

        query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        self._check_dim(query.shape[1])
        with self._lock:
            index = self._ensure()
            if k <= 0 or index.ntotal == 0 or (allowed is not None and not allowed):
                return Found([], self._named)
            k = min(k, index.ntotal)
            selector = None
            if allowed is not None:
                # faiss skips everything else inside the scan: no over-fetching, exact top k.
                allowed_fids = np.fromiter(
                    (faiss_id(i) for i in allowed), dtype=np.int64, count=len(allowed)
                )
                selector = faiss.IDSelectorBatch(allowed_fids)
                k = min(k, len(allowed))
            size = None if allowed is None else len(allowed)
            params = approximate.search_params(index, selector, size)
            # One query scans on one thread: OpenMP's threads for a single query cost more
            # than they save (100k vectors under load: 229 ms at p50 with two, 70 with one).
            faiss.omp_set_num_threads(1)
            scores, labels = index.search(query, k, params=params)
            hits = [(int(f), float(s)) for f, s in zip(labels[0], scores[0], strict=True) if f >= 0]
        return Found(hits, self._named)

    def vectors(self, ids: Sequence[str]) -> dict[str, Any]:
        """The stored vector of each of these ids that the index holds."""
        names, matrix = self.stacked(ids)
        return dict(zip(names, matrix, strict=True))

    def stacked(self, ids: Sequence[str]) -> tuple[list[str], Any]:
        """The ids of these the index holds, in order, and their stored vectors as the rows of
        one matrix (neighbour context, recall/neighbours.py, reads ~200 a recall)."""
        import numpy as np

        if not ids:
            return [], np.zeros((0, self.dim), np.float32)
        fids = np.fromiter((faiss_id(i) for i in ids), dtype=np.int64, count=len(ids))
        with self._lock:
            index = self._ensure()
            try:
                return list(ids), index.reconstruct_batch(fids)
            except RuntimeError:  # some are not in the index (not embedded yet, or forgotten)
                pass
            names, rows = [], []
            for oid, fid in zip(ids, fids.tolist(), strict=True):
                try:
                    rows.append(index.reconstruct(fid))
                except RuntimeError:
                    continue
                names.append(oid)
            return names, np.array(rows, np.float32).reshape(len(rows), index.d)

    def ids(self) -> list[str]:
        """Every object id in the index, sorted."""
        with self._lock:
            present = approximate.ids_of(self._ensure())
            rows = self._connect().execute("SELECT fid, object_id FROM ids")
            return sorted(name for fid, name in rows if fid in present)

    def __len__(self) -> int:
        with self._lock:
            return int(self._ensure().ntotal)

    def kind(self) -> str:
        """`flat` (exact) or `ivf` (approximate)."""
        with self._lock:
            return approximate.kind(self._ensure())

    def rebuild(self, target: str | None = None) -> bool:
        """Move to the kind of index the size calls for (or `target`); True if it was rebuilt.

        Searches and writes of this process go on during the build (see `begin_rebuild`).
        The caller holds the vault lock and saves afterwards; `brain sleep` instead holds it
        only to begin and to finish, so other processes write meanwhile too.
        """
        plan = self.begin_rebuild(target)
        if plan is None:
            return False
        self.finish_rebuild(plan, plan.build())
        return True

    def begin_rebuild(self, target: str | None = None) -> Rebuild | None:
        """A copy of the vectors to build the new index from (None: the kind is right).

        Under the vault lock; the build (`Rebuild.build`) then needs no lock at all, and
        `finish_rebuild` replays what changed since this copy."""
        with self._lock:
            index = self._ensure()
            want = target or approximate.wanted(index)
            if want == approximate.kind(index):
                return None
            matrix, fids = approximate.contents(index)
            self._replay = []
            return Rebuild(want.split("-")[0], matrix, fids, _stamp(self.index_file))

    def finish_rebuild(self, plan: Rebuild, built: Any) -> None:
        """Swap the built index in, with the changes made since the copy replayed onto it:
        this process's as they came; if another process saved the index meanwhile, the
        difference between the copy and what it saved. Under the vault lock."""
        with self._lock:
            replay, self._replay = self._replay or [], None
            current = self._ensure()  # reloads what another process saved
            if _stamp(self.index_file) != plan.stamp:
                gone, fids, rows = approximate.difference(
                    (plan.matrix, plan.fids), approximate.contents(current)
                )
                replay = [(gone, None), (fids, rows)]
            for changed, rows_or_none in replay:
                built.remove_ids(changed)
                if rows_or_none is not None and len(changed):
                    built.add_with_ids(rows_or_none, changed)
            self._index = built
            self._dirty = True

    def save(self) -> None:
        """Write the index if it changed: a temp file renamed over the old one."""
        import faiss

        with self._lock:
            if not self._dirty:
                return
            with owner_only():
                self.folder.mkdir(parents=True, exist_ok=True)
            temp = self.folder / f".{INDEX_FILE}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
            try:
                with owner_only():
                    try:
                        faiss.write_index(self._index, str(temp))
                    except RuntimeError:  # faiss says only "write error": say it as a file's
                        why = "the vector index could not be written (is the disk full?)"
                        raise OSError(errno.EIO, why, os.fspath(self.index_file)) from None
                with temp.open("rb+") as handle:
                    os.fsync(handle.fileno())
                temp.replace(self.index_file)
            finally:
                temp.unlink(missing_ok=True)
            self._stamp = _stamp(self.index_file)
            self._dirty = False
            if self._removed:
                db = self._connect()
                with db:
                    db.executemany("DELETE FROM ids WHERE fid = ?", ((f,) for f in self._removed))
                self._removed.clear()

    def clear(self) -> None:
        """Empty the index and make it this embedder's and size, whatever it was built for."""
        with self._lock:
            db = self._connect(check=False)
            with db:
                db.execute("DELETE FROM ids")
                db.execute("DELETE FROM info")
                self._write_info(db)
            self.index_file.unlink(missing_ok=True)
            self._index = self._new_index()
            self._stamp = None
            self._dirty = False
            self._removed.clear()

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
            self._index = None

    def _ensure(self) -> Any:
        stamp = _stamp(self.index_file)
        # Unsaved changes of ours win; otherwise follow whatever another process saved. What
        # the id map says it was built for is checked as the index is read: a process that
        # rebuilt it for another embedder saved a new index file too (a read of the map's info
        # at each search cost ~0.1 ms a recall at 100k memories).
        fresh = self._index is None or (not self._dirty and stamp != self._stamp)
        self._connect(check=fresh)
        if fresh:
            self._index = self._read() if stamp is not None else self._new_index()
            self._stamp = stamp
            self._removed.clear()
        return self._index

    def _read(self) -> Any:
        import faiss

        try:
            index = faiss.read_index(str(self.index_file))
        except RuntimeError as exc:
            raise StaleIndex(
                f"the vector index {self.index_file} is unreadable", "run `brain reindex`"
            ) from exc
        if index.d != self.dim:
            raise StaleIndex(
                f"the vector index holds {index.d}-dimensional vectors, not {self.dim}",
                "run `brain reindex`",
            )
        return approximate.by_id(index)

    def _new_index(self) -> Any:
        return approximate.new_flat(self.dim)

    def _connect(self, *, check: bool = True) -> sqlite3.Connection:
        if self._db is None:
            with owner_only():  # its journal takes the database's mode
                self.folder.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.folder / IDS_FILE, timeout=30, check_same_thread=False)
                db.execute("PRAGMA secure_delete = ON")  # forgotten ids leave no bytes behind
                db.executescript(_SCHEMA)
            self._db = db
        if check:
            self._check_info(self._db)
        return self._db

    def _check_info(self, db: sqlite3.Connection) -> None:
        info = dict(db.execute("SELECT key, value FROM info").fetchall())
        if not info:
            if self.index_file.exists():
                raise StaleIndex("the vector index has lost its id map", "run `brain reindex`")
            with db:
                self._write_info(db)
            return
        built = (info.get("schema"), info.get("embedder"), info.get("dim"))
        if built != (str(SCHEMA_VERSION), self.embedder, str(self.dim)):
            raise StaleIndex(
                f"the vector index was built for embedder '{built[1]}' ({built[2]} dimensions),"
                f" not '{self.embedder}' ({self.dim})",
                "run `brain reindex`",
            )

    def _write_info(self, db: sqlite3.Connection) -> None:
        values = {"schema": str(SCHEMA_VERSION), "embedder": self.embedder, "dim": str(self.dim)}
        db.executemany("INSERT OR REPLACE INTO info VALUES (?, ?)", values.items())

    def _check_dim(self, dim: int) -> None:
        if dim != self.dim:
            raise StaleIndex(
                f"a {dim}-dimensional vector for an index of {self.dim}", "run `brain reindex`"
            )

    def _name(self, object_ids: list[str], fids: list[int]) -> list[int]:
        """Record fid → object id before the vectors exist, so no vector is ever nameless.
        Returns the fids that had their name already (their vectors may be in the index)."""
        db = self._connect()
        names = self._names(fids)
        for fid, object_id in zip(fids, object_ids, strict=True):
            if names.get(fid, object_id) != object_id:
                raise BrainError(
                    f"ids '{object_id}' and '{names[fid]}' share a vector id",
                    "rename one of them; this is a 1-in-10^18 accident",
                )
        new = dict[int, str]()
        for fid, object_id in zip(fids, object_ids, strict=True):
            if fid not in names and new.setdefault(fid, object_id) != object_id:
                raise BrainError(
                    f"ids '{object_id}' and '{new[fid]}' share a vector id",
                    "rename one of them; this is a 1-in-10^18 accident",
                )
        if new:
            with db:
                db.executemany("INSERT INTO ids VALUES (?, ?)", new.items())
        return list(names)

    def _named(self, fids: Sequence[int]) -> dict[int, str]:
        """`_names` for a `Found` read after its search: under the lock, as the search was."""
        with self._lock:
            return self._names(fids)

    def _names(self, fids: Sequence[int]) -> dict[int, str]:
        db = self._connect(check=False)
        names: dict[int, str] = {}
        for start in range(0, len(fids), 500):  # SQLite caps the ? per statement
            chunk = list(fids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            query = f"SELECT fid, object_id FROM ids WHERE fid IN ({marks})"
            names.update(db.execute(query, chunk).fetchall())
        return names


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size
