"""The sparse cache: each object's weighted terms in SQLite, searched as posting lists in numpy."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain._errors import BrainError
from brain._vault.files import owner_only

if TYPE_CHECKING:
    from brain._indexes.ports import SparsePort
    from brain._indexes.sparse import SparseEncoder, Terms

SCHEMA_VERSION = 2  # 2: one blob of uint16 term ids and 8-bit weights, a short hash, no rowid
FILE = "sparse.sqlite"
MAX_CHANGES = 256  # own writes kept beside the posting lists before they are built again
HASH_CHARS = 16  # a text's hash is kept and compared on its first 16 hex digits (64 bits)

# WITHOUT ROWID: the rows live in the object id's own B-tree, so the id is stored once (a
# TEXT primary key of a rowid table is a second B-tree holding every id again).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS terms (
    object_id TEXT PRIMARY KEY, content_hash TEXT NOT NULL, terms BLOB NOT NULL
) WITHOUT ROWID;
"""


class StaleSparse(BrainError):
    """The sparse index was built by another encoder or schema, or is damaged: rebuild it."""


class SparseIndex:
    """Term weights per object id, the truth in one SQLite file; for search, posting lists
    (object rows by term, CSC-like) built in memory at the first search after a change.

    Scoring is the dot product of the query's weights and each object's, summed over the
    query's terms only: ~20 posting lists of a few hundred entries each. Another process's
    commit is noticed by SQLite's `data_version` and the lists are rebuilt. Writers hold the
    vault lock.
    """

    def __init__(self, folder: Path, encoder: str) -> None:
        self.folder = folder
        self.encoder = encoder
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._lists: _Postings | None = None
        self._version = -1  # SQLite's data_version when the lists were built

    @property
    def path(self) -> Path:
        return self.folder / FILE

    def hashes(self, ids: Sequence[str]) -> dict[str, str]:
        """The content hash each of these ids was encoded from (its first HASH_CHARS hex
        digits), for those it holds."""
        db = self._connect()
        found: dict[str, str] = {}
        with self._lock:
            for start in range(0, len(ids), 500):  # SQLite caps the ? per statement
                chunk = list(ids[start : start + 500])
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT object_id, content_hash FROM terms WHERE object_id IN ({marks})"
                found.update(db.execute(sql, chunk).fetchall())
        return found

    def upsert(self, rows: Sequence[tuple[str, str, Terms]]) -> None:
        """Add or replace (object id, content hash, (term ids, weights)) rows."""
        if not rows:
            return
        db = self._connect()
        with self._lock, db:
            db.executemany(
                "INSERT OR REPLACE INTO terms VALUES (?, ?, ?)",
                [(oid, h[:HASH_CHARS], pack(terms)) for oid, h, terms in rows],
            )
            # As stored (half precision), so this process scores them as every other one does.
            self._changed({oid: unpack(pack(terms)) for oid, _, terms in rows})

    def encode_missing(
        self, encoder: SparseEncoder, items: Sequence[tuple[str, str, str]], batch: int = 256
    ) -> int:
        return encode_missing(self, encoder, items, batch)

    def remove(self, ids: Iterable[str]) -> int:
        """Take these ids out (unknown ids are ignored); returns how many were there."""
        chunk = list(dict.fromkeys(ids))
        if not chunk:
            return 0
        db = self._connect()
        gone = 0
        with self._lock, db:
            for start in range(0, len(chunk), 500):
                part = chunk[start : start + 500]
                marks = ",".join("?" * len(part))
                gone += db.execute(f"DELETE FROM terms WHERE object_id IN ({marks})", part).rowcount
            if gone:
                self._changed(dict.fromkeys(chunk))
        return gone

    def prune(self, keep: Iterable[str]) -> int:
        """Drop every object not in `keep`; returns how many went."""
        keep_set = set(keep)
        return self.remove([oid for oid in self.ids() if oid not in keep_set])

    def search(
        self, query: Terms, k: int, allowed: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """The k objects with the largest dot product with the query, best first (> 0 only)."""
        import numpy as np

        with self._lock:
            lists = self._postings()
        terms, weights = query
        if k <= 0 or not len(terms):
            return []
        rows, values = lists.gather(terms, weights)
        scores = np.bincount(rows, weights=values, minlength=len(lists.ids))
        if lists.masked:  # rows replaced or removed since the lists were built
            scores[sorted(lists.masked)] = 0.0
        if allowed is not None:
            keep = np.zeros(len(lists.ids), dtype=bool)
            keep[[lists.row[oid] for oid in allowed if oid in lists.row]] = True
            scores = np.where(keep, scores, 0.0)
        found = np.flatnonzero(scores > 0)
        if len(found) > k:
            found = found[np.argpartition(-scores[found], k - 1)[:k]]
        ids, best = lists.ids, scores[found].tolist()
        hits = [(ids[r], score) for r, score in zip(found.tolist(), best, strict=True)]
        hits += [
            (oid, score)
            for oid, score in lists.score_added(terms, weights)
            if score > 0 and (allowed is None or oid in allowed)
        ]
        return sorted(hits, key=lambda hit: (-hit[1], hit[0]))[:k]

    def ids(self) -> list[str]:
        with self._lock:
            rows = self._connect().execute("SELECT object_id FROM terms ORDER BY object_id")
            return [oid for (oid,) in rows]

    def empty(self) -> bool:
        """Whether it holds nothing (checked before every hybrid recall: no count of rows)."""
        with self._lock:
            return self._connect().execute("SELECT 1 FROM terms LIMIT 1").fetchone() is None

    def __len__(self) -> int:
        with self._lock:
            return int(self._connect().execute("SELECT count(*) FROM terms").fetchone()[0])

    def clear(self) -> None:
        """Empty the index and make it this encoder's, whatever it was built for."""
        with self._lock:
            db = self._connect(check=False)
            with db:
                db.execute("DELETE FROM terms")
                db.execute("DELETE FROM info")
                self._write_info(db)
            self._lists = None

    def compact(self) -> None:
        with self._lock:
            self._connect(check=False).execute("VACUUM")

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
            self._lists = None

    def _changed(self, rows: dict[str, Terms | None]) -> None:
        """Our own writes: kept beside the lists until there are too many, then rebuilt."""
        if self._lists is not None and not self._lists.change(rows):
            self._lists = None

    def _postings(self) -> _Postings:
        db = self._connect()
        version = int(db.execute("PRAGMA data_version").fetchone()[0])
        if self._lists is None or version != self._version:
            self._lists = _Postings(db.execute("SELECT object_id, terms FROM terms"))
            self._version = version
        return self._lists

    def _connect(self, *, check: bool = True) -> sqlite3.Connection:
        with self._lock:
            if self._db is None:
                with owner_only():  # its journal takes the database's mode
                    self.folder.mkdir(parents=True, exist_ok=True)
                    db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
                    try:
                        db.execute("PRAGMA secure_delete = ON")  # forgotten terms leave no bytes
                        db.executescript(_SCHEMA)
                    except sqlite3.DatabaseError as exc:
                        db.close()
                        raise StaleSparse(
                            f"the sparse index {self.path} is unreadable ({exc})",
                            "run `brain reindex`",
                        ) from None
                self._db = db
            if check:
                self._check_info(self._db)
            return self._db

    def _check_info(self, db: sqlite3.Connection) -> None:
        info = dict(db.execute("SELECT key, value FROM info").fetchall())
        if not info:
            with db:
                self._write_info(db)
            return
        built = (info.get("schema"), info.get("encoder"))
        if built != (str(SCHEMA_VERSION), self.encoder):
            raise StaleSparse(
                f"the sparse index was built by encoder '{built[1]}' (schema {built[0]}),"
                f" not '{self.encoder}' ({SCHEMA_VERSION})",
                "run `brain reindex`",
            )

    def _write_info(self, db: sqlite3.Connection) -> None:
        values = {"schema": str(SCHEMA_VERSION), "encoder": self.encoder}
        db.executemany("INSERT OR REPLACE INTO info VALUES (?, ?)", values.items())


class _Postings:
    """Every object's terms turned around: for each term, the rows holding it and weights."""

    def __init__(self, rows: Iterable[tuple[str, bytes]]) -> None:
        import numpy as np

        self.ids: list[str] = []
        id_parts, step_parts, steps, sizes = [], [], [], []
        for oid, blob in rows:
            step, id_bytes, step_bytes = _split(blob)
            self.ids.append(oid)
            id_parts.append(id_bytes)
            step_parts.append(step_bytes)
            steps.append(step)
            sizes.append(len(step_bytes))
        self.row = {oid: i for i, oid in enumerate(self.ids)}
        self.masked: set[int] = set()  # rows changed since: replaced or removed
        self.added: dict[str, Terms] = {}  # rows written since, scored one by one
        per_row = np.asarray(sizes, dtype=np.int64)
        terms = np.frombuffer(b"".join(id_parts), dtype="<u2")
        owners = np.repeat(np.arange(len(self.ids), dtype=np.int32), per_row)
        order = np.argsort(terms, kind="stable")  # 16-bit keys: numpy radix-sorts them
        self.rows: Any = owners[order]
        weights = np.frombuffer(b"".join(step_parts), dtype=np.uint8).astype(np.float32)
        weights *= np.repeat(np.asarray(steps, dtype=np.float32), per_row)
        self.weights: Any = weights[order]
        counts = np.bincount(terms, minlength=int(terms.max(initial=0)) + 1)
        self.start: Any = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)

    def change(self, rows: dict[str, Terms | None]) -> bool:
        """Rows written (None: removed) since the build; False once a rebuild is cheaper."""
        for oid, terms in rows.items():
            if oid in self.row:
                self.masked.add(self.row[oid])
            self.added.pop(oid, None)
            if terms is not None:
                self.added[oid] = terms
        return len(self.added) + len(self.masked) <= MAX_CHANGES

    def score_added(self, terms: Any, weights: Any) -> list[tuple[str, float]]:
        """The dot product of the query with each row written since the build."""
        import numpy as np

        out = []
        for oid, (ids, values) in self.added.items():
            _, mine, theirs = np.intersect1d(ids, terms, assume_unique=True, return_indices=True)
            out.append((oid, float(values[mine] @ weights[theirs])))
        return out

    def gather(self, terms: Any, weights: Any) -> tuple[Any, Any]:
        """The rows holding any of these terms, each with its weight × the query's."""
        import numpy as np

        rows, values = [], []
        for term, weight in zip(terms.tolist(), weights.tolist(), strict=True):
            if 0 <= term < len(self.start) - 1:
                lo, hi = self.start[term], self.start[term + 1]
                if hi > lo:
                    rows.append(self.rows[lo:hi])
                    values.append(self.weights[lo:hi] * weight)
        if not rows:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        return np.concatenate(rows), np.concatenate(values)


def pack(terms: Terms) -> bytes:
    """One row's blob: a float32 step, the term ids as uint16 (the vocabulary is 30,522), and
    each weight as a whole number of steps in a byte, the row's largest being 255. Learned
    sparse weights are commonly stored as 8-bit impacts; a weight under half a step (~1% of
    SPLADE's terms, each adding < 0.005 to a score) is left out (docs/lab/scale.md)."""
    import numpy as np

    ids, weights = terms
    if len(ids) and not (int(ids.min()) >= 0 and int(ids.max()) < 1 << 16):
        raise ValueError("sparse term ids must fit 16 bits")
    top = float(weights.max()) if len(weights) else 0.0
    step = np.float32(top / 255) if top > 0 else np.float32(0)
    if not step > 0:
        return np.float32(0).tobytes()
    steps = np.clip(np.rint(weights / step), 0, 255).astype(np.uint8)
    keep = steps > 0
    return bytes(step.tobytes() + ids[keep].astype("<u2").tobytes() + steps[keep].tobytes())


def unpack(blob: bytes) -> Terms:
    """The (term ids, weights) a blob of `pack` holds."""
    import numpy as np

    step, ids, steps = _split(blob)
    weights = np.frombuffer(steps, dtype=np.uint8).astype(np.float32) * np.float32(step)
    return np.frombuffer(ids, dtype="<u2").astype(np.int32), weights


def _split(blob: bytes) -> tuple[float, bytes, bytes]:
    """A blob's step, id bytes and step-count bytes."""
    import struct

    n = (len(blob) - 4) // 3
    return struct.unpack("<f", blob[:4])[0], blob[4 : 4 + 2 * n], blob[4 + 2 * n :]


def recreate(index: SparseIndex, encoder: SparseEncoder) -> SparseIndex:
    """An empty index in place of one that may not be served (stale, damaged). Lock held."""
    index.close()
    for suffix in ("", "-journal", "-wal", "-shm"):
        index.path.with_name(index.path.name + suffix).unlink(missing_ok=True)
    fresh = SparseIndex(index.folder, encoder.name)
    fresh.clear()
    return fresh


def encode_missing(
    index: SparsePort, encoder: SparseEncoder, items: Sequence[tuple[str, str, str]], batch: int
) -> int:
    """Encode and store in `index` the (object id, content hash, text) items not held with
    that hash already (a reindex re-encodes nothing unchanged), `batch` to a call of the
    model; returns how many were encoded. Either storage's sparse index."""
    held = index.hashes([oid for oid, _, _ in items])
    todo = [
        (oid, h, text) for oid, h, text in items if held.get(oid, "")[:HASH_CHARS] != h[:HASH_CHARS]
    ]
    for start in range(0, len(todo), batch):  # committed per batch: a stop keeps what was paid
        chunk = todo[start : start + batch]
        encoded = encoder.encode([text for _, _, text in chunk])
        index.upsert([(oid, h, t) for (oid, h, _), t in zip(chunk, encoded, strict=True)])
    return len(todo)
