"""A person's own sentence-transformers model folder as the embedder, exported once to ONNX.

`embedder: ~/models/paraphrase-multilingual-MiniLM-L12-v2` in brain.yaml (any value that is a
path) names a local folder as sentence-transformers saves it. The first use exports the whole
model (transformer, pooling, dense layers) to one ONNX graph with torch, in a child process,
into the machine's model cache; from then on it runs on onnxruntime like the shipped models.
The export needs the extra: `pip install 'brain-memory[sentence-transformers]'`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from brain._errors import BrainError
from brain._indexes.textrun import TextRunner

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Vectors = NDArray[np.float32]

Step = Callable[[str], None]
EXTRA = "pip install 'brain-memory[sentence-transformers]'"
EXPORT_VERSION = "1"  # bump when the export changes: every machine exports afresh
EXPORT_TIMEOUT = 1800.0  # seconds; a large model on a small, busy machine
STEPS = 4  # the export's steps, for a progress bar: start torch, load, export, check
MAX_TOKENS_DEFAULT = 256


class OwnModelEmbedder:
    """The model of a local sentence-transformers folder, run from its ONNX export."""

    def __init__(self, folder: Path, cache_dir: Path) -> None:
        self.folder = folder
        self.cache_dir = cache_dir
        digest = _fingerprint(folder)
        # The vector index is stamped with this name: another model's vectors never mix in.
        self.name = f"own-{digest[:12]}"
        self.onnx_file = cache_dir / f"own-{folder.name}-{digest}.onnx"
        self._run: Callable[[list[str]], Vectors] | None = None

    @property
    def ready(self) -> bool:
        """Whether the export is made (nothing to prepare)."""
        return self._meta_file.is_file() and self.onnx_file.is_file()

    @property
    def dim(self) -> int:
        self.prepare()
        return int(json.loads(self._meta_file.read_text())["dim"])

    @property
    def loaded(self) -> bool:
        return self._run is not None

    @property
    def _meta_file(self) -> Path:
        return self.onnx_file.with_suffix(".json")

    def prepare(self, step: Step | None = None) -> None:
        """Export the model once (a minute or so), telling `step` what it is doing."""
        if self.ready:
            return
        if importlib.util.find_spec("sentence_transformers") is None:
            raise BrainError(
                f"the embedder {self.folder} needs sentence-transformers once, to export it",
                f"{EXTRA}; or set `embedder: minilm` in brain.yaml",
            )
        _export_apart(self.folder, self.onnx_file, step or (lambda _: None))

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._load()(list(texts))

    def _load(self) -> Callable[[list[str]], Vectors]:
        if self._run is None:
            self.prepare()
            self._run = TextRunner(
                self.onnx_file,
                self.folder / "tokenizer.json",
                max_tokens=_max_tokens(self.folder),
                output="sentence_embedding",
            )
        return self._run


def _max_tokens(folder: Path) -> int:
    try:
        config = json.loads((folder / "sentence_bert_config.json").read_text())
        return int(config.get("max_seq_length", MAX_TOKENS_DEFAULT))
    except (OSError, ValueError):
        return MAX_TOKENS_DEFAULT


def _fingerprint(folder: Path) -> str:
    # Names, sizes and mtimes: a changed model exports afresh, without reading its weights.
    digest = hashlib.blake2b(f"export {EXPORT_VERSION}".encode(), digest_size=8)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder)}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def _export_apart(folder: Path, target: Path, step: Step) -> None:
    """The export in a short-lived child process (torch and its graphs leave with it); the
    child names each step on its stdout and `step` hears it as it happens."""
    step("starting torch")
    here = str(Path(__file__).resolve().parents[2])  # the folder holding the brain package
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    child = subprocess.Popen(
        [sys.executable, "-m", "brain._indexes.ownmodel", str(folder), str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert child.stdout is not None and child.stderr is not None
    for line in child.stdout:
        step(line.strip())
    try:
        child.wait(timeout=EXPORT_TIMEOUT)
    except subprocess.TimeoutExpired:
        child.kill()
        raise BrainError(f"exporting {folder} to ONNX took over {EXPORT_TIMEOUT:.0f} s") from None
    if child.returncode != 0:
        last = (child.stderr.read().strip().splitlines() or ["no message"])[-1]
        raise BrainError(f"exporting {folder} to ONNX failed: {last}", EXTRA)


def _export(folder: Path, target: Path) -> None:
    """In the child: export, check, write the graph and its dimension beside it."""
    from tokenizers import Tokenizer

    from brain._indexes import export

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=_max_tokens(folder))
    tokenizer.no_padding()
    target.parent.mkdir(parents=True, exist_ok=True)
    # A private temp name per process: two exporters at once each rename a whole file.
    temp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        dim = export.sentence_model(folder, temp, tokenizer, lambda s: print(s, flush=True))
        with temp.open("rb+") as handle:
            os.fsync(handle.fileno())
        temp.replace(target)
        target.with_suffix(".json").write_text(json.dumps({"dim": dim, "folder": str(folder)}))
    finally:
        temp.unlink(missing_ok=True)


if __name__ == "__main__":
    _export(Path(sys.argv[1]), Path(sys.argv[2]))
