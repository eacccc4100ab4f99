"""Sparse encoders turn texts into weighted vocabulary terms: SPLADE-tiny (ONNX), or hashing."""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from brain._errors import BrainError, InvalidInput
from brain._indexes import onnxrun, shipped
from brain._indexes.embedder import needs_runtime
from brain._indexes.pins import PINS
from brain._terms import content_words

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Terms = tuple[NDArray[np.int32], NDArray[np.float32]]  # term ids, their weights

SPARSE_ENCODERS = ("splade", "splade-int8", "hashing", "none")
VOCABULARY = 30522  # BERT's uncased WordPiece vocabulary, which SPLADE-tiny weights
HIDDEN = 128  # SPLADE-tiny's hidden size: the head is a 128 × VOCABULARY MatMul
QUANTISE_VERSION = "1"  # bump when the int8 head is made differently: it is made afresh
MAX_TOKENS = 256
# Tokens per batch: the MLM head makes (batch × sequence × 30522) floats, 4 MB per 32 tokens,
# so batches are cut by tokens, not texts: ~31 MB a batch, one per core at once (onnxrun.py).
# 256 ran fastest that way (128 and 512 slower: docs/lab/ingest.md, "The encoders one thread
# a batch").
TOKEN_BUDGET = 256
INT8 = False  # int8 head (`sparse: splade-int8`): faster, rankings move a little (lab/ranking.md)


class SparseEncoder(Protocol):
    """Anything that maps each text to its non-zero vocabulary terms and their weights."""

    name: str

    def encode(self, texts: Sequence[str]) -> list[Terms]: ...


class HashingSparse:
    """Content words hashed into the vocabulary, weighted 1 + log(count): no model,
    deterministic, for tests (it expands nothing)."""

    name = "hashing"

    def encode(self, texts: Sequence[str]) -> list[Terms]:
        import numpy as np

        out = []
        for text in texts:
            counts = Counter(_bucket(w) for w in content_words(text))
            terms = np.array(sorted(counts), dtype=np.int32)
            weights = np.array([1 + math.log(counts[t]) for t in terms], dtype=np.float32)
            out.append((terms, weights))
        return out


def _bucket(word: str) -> int:
    digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % VOCABULARY


class SpladeEncoder:
    """SPLADE-tiny as shipped in brain/_models, its pooling (max over tokens of
    log(1 + relu(logits))) inside the graph; onnxruntime at run time. With `int8`, the head's
    weights are quantised once into the model cache (that needs the `onnx` package)."""

    name: str

    def __init__(
        self, cache_dir: Path, *, int8: bool | None = None, models: Path = shipped.MODELS
    ) -> None:
        self.cache_dir = cache_dir
        self.models = models
        self.int8 = INT8 if int8 is None else int8
        # The index is stamped with this name: terms of the other weights are never mixed in.
        self.name = "splade-int8-head" if self.int8 else "splade"
        self._run: Callable[[dict[str, Any]], Any] | None = None
        self._tokenizer: Any = None

    @property
    def int8_file(self) -> Path:
        """Where the int8 head lives, named by the shipped weights it was made from."""
        digest = hashlib.blake2b(f"int8 {QUANTISE_VERSION}".encode(), digest_size=8)
        for name, pin in sorted(PINS["splade-tiny"].items()):
            digest.update(f"{name}={pin}".encode())
        return self.cache_dir / f"splade-tiny-int8-{digest.hexdigest()}.onnx"

    @property
    def loaded(self) -> bool:
        return self._run is not None

    @property
    def ready(self) -> bool:
        """Whether nothing is left to make before the first encoding (the int8 head)."""
        return not self.int8 or _intact(self.int8_file)

    def prepare(self, step: Callable[[str], None] | None = None) -> None:
        """Make the int8 head now if it is wanted and not made (a few seconds, once)."""
        if not self.ready:
            if step is not None:
                step("quantising the head's weights")
            _quantised(shipped.folder("splade-tiny", self.models) / "model.onnx", self.int8_file)

    def encode(self, texts: Sequence[str]) -> list[Terms]:
        import numpy as np

        if not texts:
            return []
        run, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        out: list[Terms | None] = [None] * len(texts)
        # Similar lengths together waste less on padding; cut batches by their token count.
        batches = onnxrun.by_tokens([len(e.ids) for e in encodings], TOKEN_BUDGET)
        done = onnxrun.each(lambda rows: run(onnxrun.padded([encodings[i] for i in rows])), batches)
        for rows, weights in zip(batches, done, strict=True):
            for row, vector in zip(rows, weights, strict=True):
                terms = np.flatnonzero(vector).astype(np.int32)
                out[row] = (terms, vector[terms].astype(np.float32))
        return [terms for terms in out if terms is not None]

    def _load(self) -> tuple[Callable[[dict[str, Any]], Any], Any]:
        if self._run is not None:
            return self._run, self._tokenizer
        needs_runtime("the splade sparse encoder", "sparse")
        folder = shipped.folder("splade-tiny", self.models)
        graph = folder / "model.onnx"
        if self.int8:
            self.prepare()
            graph = self.int8_file
        self._tokenizer = _tokenizer(folder / "tokenizer.json")
        self._run = _session(graph)
        return self._run, self._tokenizer


def _checksum_file(onnx_file: Path) -> Path:
    return onnx_file.with_name(onnx_file.name + ".sha256")


def _intact(onnx_file: Path) -> bool:
    """Whether a file made here is there with the checksum recorded when it was made."""
    try:
        want = _checksum_file(onnx_file).read_text().strip()
        return hashlib.sha256(onnx_file.read_bytes()).hexdigest() == want
    except OSError:
        return False


def _quantised(shipped_graph: Path, target: Path) -> None:
    """Make the int8 head from the shipped graph, in this process (no torch: onnx and
    onnxruntime's quantiser), then rename it into place with its checksum."""
    if importlib.util.find_spec("onnx") is None:
        raise BrainError(
            "`sparse: splade-int8` needs the onnx package once, to quantise the head",
            "pip install onnx (or 'brain-memory[sentence-transformers]'), "
            "or set `sparse: splade` in brain.yaml",
        )
    from brain._indexes.export import quantise_head

    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        quantise_head(shipped_graph, temp, HIDDEN, VOCABULARY)
        data = temp.read_bytes()
        with temp.open("rb+") as handle:
            os.fsync(handle.fileno())
        _checksum_file(target).write_text(hashlib.sha256(data).hexdigest() + "\n")
        temp.replace(target)
    finally:
        temp.unlink(missing_ok=True)


def _tokenizer(path: Path) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()  # padded per batch (onnxrun.padded), once batches are cut by length
    return tokenizer


def _session(onnx_file: Path, threads: int = onnxrun.THREADS) -> Callable[[dict[str, Any]], Any]:
    session = onnxrun.session(onnx_file, threads)

    def run(feeds: dict[str, Any]) -> Any:
        (weights,) = session.run(["weights"], feeds)
        return weights

    return run


def load_sparse(name: str, cache_dir: Path) -> SparseEncoder | None:
    """The sparse encoder brain.yaml names: `splade`, `splade-int8`, `hashing`, or `none`."""
    if name in ("splade", "splade-int8"):
        # `splade` takes the module's INT8 (False; the benchmark's --sparse-int8 sets it).
        return SpladeEncoder(cache_dir, int8=True if name == "splade-int8" else None)
    if name == "hashing":
        return HashingSparse()
    if name == "none":
        return None
    raise InvalidInput(f"unknown sparse encoder '{name}'; allowed: {', '.join(SPARSE_ENCODERS)}")
