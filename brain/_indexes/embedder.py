"""Embedders turn texts into unit vectors; a cache on disk spares embedding a text twice."""

from __future__ import annotations

import hashlib
import importlib.util
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from brain._errors import BrainError, InvalidInput
from brain._indexes import shipped
from brain._indexes.textrun import TextRunner
from brain._settings import is_model_folder
from brain._terms import content_words
from brain._vault.files import owner_only

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Vectors = NDArray[np.float32]

# The vector index's lookup by object id (VectorIndex.vectors): the vectors it holds.
Indexed = Callable[[Sequence[str]], "dict[str, Any]"]

EMBEDDERS = ("minilm", "hashing", "none")


class Embedder(Protocol):
    """Anything that maps texts to an (n, dim) float32 array of L2-normalised rows."""

    name: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


class HashingEmbedder:
    """Content words and their character trigrams hashed into buckets: no model,
    deterministic, for tests. Stopwords are left out so "is the" makes nothing similar."""

    name = "hashing"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            # Summed in Python floats, then stored: every term is ±1 or ±0.5, so the sums are
            # exact in float32 too and the vectors are the same bits as adding in numpy, at a
            # fraction of the cost (a 60 KiB note: ~46 ms of a server's GIL before).
            sums = [0.0] * self.dim
            for word in content_words(text):
                for bucket, weight in _features(word, self.dim):
                    sums[bucket] += weight
            out[row] = sums
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        # A text with no words stays the zero vector: it is similar to nothing.
        np.divide(out, norms, out=out, where=norms > 0)
        return out


@lru_cache(maxsize=1 << 16)
def _features(word: str, dim: int) -> tuple[tuple[int, float], ...]:
    """A word's buckets and weights: the word itself, then its character trigrams at half."""
    bucket, sign = _slot(word, dim)
    found = [(bucket, sign)]
    padded = f"<{word}>"
    for i in range(len(padded) - 2):
        bucket, sign = _slot(padded[i : i + 3], dim)
        found.append((bucket, 0.5 * sign))
    return tuple(found)


@lru_cache(maxsize=1 << 16)
def _slot(feature: str, dim: int) -> tuple[int, float]:
    # blake2b, not hash(): Python salts str hashes per process, vectors must not change.
    value = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
    return value % dim, 1.0 if value >> 63 else -1.0


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 as shipped in brain/_models (float16 weights, float32 arithmetic),
    run by onnxruntime; every file checked by its sha256 as it loads."""

    name = "minilm"
    dim = 384

    def __init__(self, *, models: Path = shipped.MODELS) -> None:
        self.models = models
        self._run: Callable[[list[str]], Vectors] | None = None

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory already (without loading it)."""
        return self._run is not None

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._load()(list(texts))

    def _load(self) -> Callable[[list[str]], Vectors]:
        if self._run is None:
            needs_runtime("the minilm embedder", "embedder")
            folder = shipped.folder("minilm", self.models)
            self._run = TextRunner(folder / "model.onnx", folder / "tokenizer.json")
        return self._run


def needs_runtime(what: str, field: str) -> None:
    """A clear error when onnxruntime or tokenizers is missing (both are brain's own
    dependencies: only a broken install lacks them)."""
    for module in ("onnxruntime", "tokenizers"):
        if importlib.util.find_spec(module) is None:
            raise BrainError(
                f"{what} needs {module}, which is not installed",
                f"pip install {module}, or set `{field}: none` in brain.yaml",
            )


def load_embedder(name: str, cache_dir: Path) -> Embedder | None:
    """The embedder brain.yaml names: `minilm`, `hashing`, `none` for no vectors at all, or
    the (absolute) path of a person's own sentence-transformers model folder."""
    if name == "minilm":
        return MiniLMEmbedder()
    if is_model_folder(name):
        from brain._indexes.ownmodel import OwnModelEmbedder

        return OwnModelEmbedder(Path(name), cache_dir)
    if name == "hashing":
        return HashingEmbedder()
    if name == "none":
        return None
    raise InvalidInput(f"unknown embedder '{name}'; allowed: {', '.join(EMBEDDERS)}")


class EmbeddingCache:
    """Vectors already computed, by embedder, object id and content hash, in one SQLite file."""

    # 3: keyed (object id, embedder) WITHOUT ROWID, the text's hash cut to HASH_CHARS: a row
    # names a vector the index holds (an 8-byte mark), ~80 bytes, kept once in its b-tree, and
    # the key serves the lookups by id, so no second index. (Version 1 was WITHOUT ROWID too,
    # when rows held whole vectors, which spilled onto overflow pages: 4.7 KB a vector; rows
    # of an older cache that still hold one become marks as they are read.)
    SCHEMA_VERSION = 3
    HASH_CHARS = 16  # hex digits of a text's hash kept: 64 bits tell a changed text

    def __init__(self, folder: Path, *, batch_size: int = 256) -> None:
        self.path = folder / "embeddings.sqlite"
        self.batch_size = batch_size
        self._lock = threading.Lock()
        with owner_only():  # its journal takes the database's mode
            folder.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            # Deleted rows are overwritten with zeros, so forgotten vectors leave no bytes behind.
            self._db.execute("PRAGMA secure_delete = ON")
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version in (1, 2):  # kept, not dropped: its rows are what spares embedding again
            self._db.executescript(
                f"""
                BEGIN;
                DROP INDEX IF EXISTS vectors_object;
                ALTER TABLE vectors RENAME TO vectors_old;
                {_TABLE};
                INSERT INTO vectors SELECT object_id, embedder,
                    substr(content_hash, 1, {self.HASH_CHARS}), vector FROM vectors_old;
                DROP TABLE vectors_old;
                PRAGMA user_version = {self.SCHEMA_VERSION};
                COMMIT;
                VACUUM;
                """
            )
        elif version != self.SCHEMA_VERSION:
            self._db.execute("DROP TABLE IF EXISTS vectors")
        # One row per (object, embedder): a changed text replaces its old vector.
        self._db.executescript(
            f"""
            {_TABLE.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS")};
            PRAGMA user_version = {self.SCHEMA_VERSION};
            """
        )

    def embed_cached(
        self,
        embedder: Embedder,
        items: Sequence[tuple[str, str, str]],
        indexed: Indexed | None = None,
        batch: int | None = None,
    ) -> Vectors:
        """Vectors for (object id, content hash, text) items, in order; only misses are embedded,
        `batch` (else the cache's batch size) to a call of the model.

        With `indexed` (the vector index's lookup by id), the cache keeps no second copy of a
        vector the index holds: a row records the text's hash and a fingerprint of its vector,
        and a hit is read from the index if the fingerprint still matches (else: embedded).
        Rows written before keep a whole vector (half, or single precision) and are read as is.
        """
        import numpy as np

        key, dim = f"{embedder.name}/{embedder.dim}", embedder.dim
        cut = self.HASH_CHARS
        out = np.zeros((len(items), dim), dtype=np.float32)
        stored = self._lookup(key, {object_id for object_id, _, _ in items})
        todo: dict[tuple[str, str], list[int]] = {}
        texts: dict[tuple[str, str], str] = {}
        marks: dict[int, bytes] = {}
        whole: list[tuple[str, str, str, bytes]] = []  # an older cache's rows, made marks
        for row, (object_id, content_hash, text) in enumerate(items):
            hit = stored.get(object_id)
            same = hit is not None and hit[0] == content_hash[:cut]
            if hit is not None and same and len(hit[1]) in (2 * dim, 4 * dim):
                out[row] = np.frombuffer(hit[1], dtype="<f2" if len(hit[1]) == 2 * dim else "<f4")
                if indexed is not None:  # the caller puts it in the index: name it there
                    whole.append((object_id, key, hit[0], _vector_mark(out[row])))
            elif hit is not None and same and len(hit[1]) == _MARK:
                marks[row] = hit[1]
            else:
                todo.setdefault((object_id, content_hash), []).append(row)
                texts[(object_id, content_hash)] = text
        if marks:
            held = indexed([items[row][0] for row in marks]) if indexed else {}
            for row, mark in marks.items():
                vector = held.get(items[row][0])
                if vector is not None and _vector_mark(vector) == mark:
                    out[row] = vector
                else:  # the index lost it, or holds another text's vector: embed again
                    object_id, content_hash, text = items[row]
                    todo.setdefault((object_id, content_hash), []).append(row)
                    texts[(object_id, content_hash)] = text
        misses = list(todo)
        size = batch or self.batch_size
        for start in range(0, len(misses), size):
            chunk = misses[start : start + size]
            vectors = embedder.embed([texts[k] for k in chunk])
            if vectors.shape != (len(chunk), embedder.dim):
                raise ValueError(f"{embedder.name} returned shape {vectors.shape}")
            # Half precision: cosine to the vector as computed ≥ 0.99999, the same neighbours
            # (docs/lab/scale.md, "disk"); fresh and cached vectors are the same numbers.
            halves = np.asarray(vectors, dtype="<f2")
            rows = [
                (oid, key, h[:cut], _vector_mark(v) if indexed else v.tobytes())
                for (oid, h), v in zip(chunk, halves, strict=True)
            ]
            # Commit per batch: an interrupted reindex keeps what it has paid for.
            with self._lock, self._db:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
            for k, vector in zip(chunk, halves, strict=True):
                out[todo[k]] = vector
        if whole:
            with self._lock, self._db:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", whole)
        return out

    def forget(self, ids: Iterable[str]) -> int:
        """Drop every embedder's vectors for these object ids; returns how many rows went."""
        gone = 0
        with self._lock, self._db:
            for chunk in _chunks(list(dict.fromkeys(ids))):
                marks = ",".join("?" * len(chunk))
                cursor = self._db.execute(
                    f"DELETE FROM vectors WHERE object_id IN ({marks})", chunk
                )
                gone += cursor.rowcount
        return gone

    def prune(self, keep_ids: Iterable[str]) -> int:
        """Drop vectors of every object not in keep_ids; returns how many rows went."""
        with self._lock, self._db:
            self._db.execute("CREATE TEMP TABLE IF NOT EXISTS keep (id TEXT PRIMARY KEY)")
            self._db.execute("DELETE FROM keep")
            self._db.executemany("INSERT OR IGNORE INTO keep VALUES (?)", ((i,) for i in keep_ids))
            cursor = self._db.execute(
                "DELETE FROM vectors WHERE object_id NOT IN (SELECT id FROM keep)"
            )
            self._db.execute("DELETE FROM keep")
            return cursor.rowcount

    def compact(self) -> None:
        """Rebuild the file so it holds no free pages at all (run after forget or prune)."""
        with self._lock:
            self._db.execute("VACUUM")

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _lookup(self, key: str, ids: set[str]) -> dict[str, tuple[str, bytes]]:
        found: dict[str, tuple[str, bytes]] = {}
        with self._lock:
            for chunk in _chunks(sorted(ids)):
                marks = ",".join("?" * len(chunk))
                query = (
                    "SELECT object_id, content_hash, vector FROM vectors"
                    f" WHERE embedder = ? AND object_id IN ({marks})"
                )
                for object_id, content_hash, blob in self._db.execute(query, [key, *chunk]):
                    found[object_id] = (content_hash, blob)
        return found


_TABLE = """CREATE TABLE vectors (
    object_id TEXT NOT NULL, embedder TEXT NOT NULL, content_hash TEXT NOT NULL,
    vector BLOB NOT NULL, PRIMARY KEY (object_id, embedder)) WITHOUT ROWID"""
_MARK = 8  # bytes of a vector's fingerprint: a cache row whose vector is in the index


def _vector_mark(vector: Any) -> bytes:
    """Eight bytes that tell whether the index still holds this vector (in half precision)."""
    import numpy as np

    return hashlib.blake2b(np.asarray(vector, dtype="<f2").tobytes(), digest_size=_MARK).digest()


def _chunks(values: list[str], size: int = 500) -> Iterable[list[str]]:
    # SQLite caps the number of ? per statement; 500 is safe on every build.
    for start in range(0, len(values), size):
        yield values[start : start + size]
