"""A text model's onnxruntime session and tokenizer: texts in, unit vectors out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain._indexes import onnxrun

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Vectors = NDArray[np.float32]

MAX_TOKENS = 256
# Tokens per ONNX batch, padding included: a batch's activations stay a few MB, one batch per
# core runs at once (onnxrun.py), and a long import's memory stays bounded. Smaller batches ran
# faster here than 32 texts of up to 256 tokens (docs/lab/ingest.md, "The encoders one thread
# a batch").
TOKEN_BUDGET = 512


class TextRunner:
    """One onnxruntime session plus the model's tokenizer. The graph's `output` is either
    `token_embeddings` (mean-pooled here, as all-MiniLM-L6-v2 is) or a sentence embedding
    (a whole sentence-transformers model); either way rows come back L2-normalised. Texts
    are run in batches of similar length, at most TOKEN_BUDGET tokens each, side by side,
    one per core (onnxrun.py)."""

    def __init__(
        self,
        onnx_file: Path,
        tokenizer_file: Path,
        *,
        max_tokens: int = MAX_TOKENS,
        output: str = "token_embeddings",
    ) -> None:
        from tokenizers import Tokenizer

        self.session = onnxrun.session(onnx_file)
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.output = output
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        # A tokenizer.json may ship its own truncation and fixed padding (MiniLM's: 128):
        # override both (each batch is padded to its own longest, in _run).
        self.tokenizer.enable_truncation(max_length=max_tokens)
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
        accepted = {k: v for k, v in feeds.items() if k in self.inputs}
        (result,) = self.session.run([self.output], accepted)
        if self.output == "token_embeddings":
            return mean_pool(result, feeds["attention_mask"])
        return _unit(result)


def mean_pool(tokens: Any, mask: Any) -> Vectors:
    """The mean of each text's real tokens, L2-normalised."""
    import numpy as np

    weights = mask[..., None].astype(np.float32)
    summed = (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    return _unit(summed)


def _unit(rows: Any) -> Vectors:
    import numpy as np

    norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    unit: Vectors = (rows / norms).astype(np.float32)
    return unit
