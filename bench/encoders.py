"""The encoders alone, side by side in one process: MiniLM, SPLADE-tiny and its variants.

    python -m bench.encoders FILE [--samples 2] [--rounds 3] [--threads N] [--onnx F.onnx ...]

Texts: every turn of the first `--samples` conversations of a LoCoMo-format file (Maharana et
al., ACL 2024; CC BY-NC 4.0) as bench/locomo.py writes them. Each round encodes all of them
with each variant in turn: `minilm` (the default embedder), `splade` (the default sparse
encoder), `splade-int8` (its head's weights in int8) and any `--onnx` file with SPLADE's inputs
and output (an earlier export, say), run with SPLADE's tokeniser and batching. Prints texts/s
and CPU seconds (every thread) per variant and round, the load average, and for each sparse
variant how many texts get exactly the terms of `splade` and the lowest cosine to its weights.
`--threads`: onnxruntime's intra-op threads for the SPLADE sessions (default: its own choice).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo_data import load
from brain._indexes import sparse
from brain._indexes.embedder import MiniLMEmbedder
from brain._settings import model_cache_dir


def _agreement(want: list[Any], got: list[Any]) -> dict[str, float]:
    same = sum(np.array_equal(a[0], b[0]) for a, b in zip(want, got, strict=True))
    worst = 1.0
    for (a_terms, a_weights), (b_terms, b_weights) in zip(want, got, strict=True):
        a = np.zeros(sparse.VOCABULARY, dtype=np.float64)
        b = np.zeros(sparse.VOCABULARY, dtype=np.float64)
        a[a_terms], b[b_terms] = a_weights, b_weights
        norms = np.linalg.norm(a) * np.linalg.norm(b)
        if norms:
            worst = min(worst, float(a @ b / norms))
    return {"same_terms": same, "cosine_min": round(worst, 6)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="a LoCoMo-format JSON file")
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="SPLADE's intra-op threads")
    parser.add_argument("--onnx", type=Path, action="append", default=[], help="another export")
    args = parser.parse_args(argv)
    texts = [t.memory_text for s in load(args.file)[: args.samples] for t in s.turns]
    cache = model_cache_dir(os.environ, Path.home())
    minilm = MiniLMEmbedder()
    variants: dict[str, Callable[[list[str]], Any]] = {"minilm": minilm.embed}
    made = {
        "splade": sparse.SpladeEncoder(cache),
        "splade-int8": sparse.SpladeEncoder(cache, int8=True),
    }
    for encoder in made.values():
        encoder.encode(["export the model if need be"])
    shipped_graph = sparse.shipped.folder("splade-tiny") / "model.onnx"
    exports = {"splade": shipped_graph, "splade-int8": made["splade-int8"].int8_file}
    files = exports | {f.name: f for f in args.onnx}
    encoders = {}
    for name, file in files.items():  # each a session of its own, with the threads asked for
        encoder = sparse.SpladeEncoder(cache)
        encoder._tokenizer = made["splade"]._tokenizer  # a bench: sessions made by hand
        encoder._run = sparse._session(file, threads=args.threads)
        encoders[name] = encoder
    variants.update({name: e.encode for name, e in encoders.items()})
    minilm.embed(texts[:8])
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    outputs: dict[str, Any] = {}
    for number in range(1, args.rounds + 1):
        for name, encode in variants.items():
            started, used = time.perf_counter(), time.process_time()
            outputs[name] = encode(texts)
            wall, cpu = time.perf_counter() - started, time.process_time() - used
            figures = {
                "per_s": round(len(texts) / wall, 1),
                "cpu_s": round(cpu, 2),
                "load": round(os.getloadavg()[0], 1),
            }
            rounds[name].append(figures)
            print(f"round {number} {name}: {json.dumps(figures)}", flush=True)
    report = {
        "texts": len(texts),
        "rounds": rounds,
        "agreement_with_splade": {
            name: _agreement(outputs["splade"], outputs[name])
            for name in encoders
            if name != "splade"
        },
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
