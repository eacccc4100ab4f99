"""Does ONNX Runtime's transformer optimiser (fused attention, saved once) speed up the model?

    python -m bench.onnx_opt [--texts 1000] [--rounds 3]

Side by side in one process: the exported model as brain runs it (the session's own graph
optimisations, ORT_ENABLE_ALL, are on by default) and the same model passed once through
`onnxruntime.transformers.optimizer.optimize_model(model_type="bert")` and saved. Rounds
alternate so the machine's load falls on both alike; vectors are compared by cosine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.scale import memories
from brain.indexes.embedder import MiniLMEmbedder, _OnnxRunner
from brain.settings import model_cache_dir


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    from onnxruntime.transformers.optimizer import optimize_model

    embedder = MiniLMEmbedder(model_cache_dir(os.environ, Path.home()), backend="onnx")
    embedder.embed(["export the model if need be"])
    plain_file = embedder.onnx_file
    fused_file = plain_file.with_suffix(".fused.onnx")
    started = time.perf_counter()
    optimize_model(str(plain_file), model_type="bert", num_heads=12, hidden_size=384,
                   opt_level=1).save_model_to_file(str(fused_file))  # fmt: skip
    optimise_s = time.perf_counter() - started
    tokenizer = embedder.model_path / "tokenizer.json"
    runners = {"plain": _OnnxRunner(plain_file, tokenizer),
               "fused": _OnnxRunner(fused_file, tokenizer)}  # fmt: skip
    texts = sorted((m.text for m in memories(args.texts)), key=len)
    batches = [texts[i : i + 32] for i in range(0, len(texts), 32)]
    seconds: dict[str, list[float]] = {name: [] for name in runners}
    vectors: dict[str, np.ndarray] = {}
    for _round in range(args.rounds):
        for name, run in runners.items():
            started = time.perf_counter()
            vectors[name] = np.vstack([run(batch) for batch in batches])
            seconds[name].append(time.perf_counter() - started)
    cosine = np.sum(vectors["plain"] * vectors["fused"], axis=1)
    rates = {name: round(args.texts / min(s), 1) for name, s in seconds.items()}
    report = {
        "texts": args.texts, "per_s_best_of_rounds": rates,
        "fused_over_plain": round(rates["fused"] / rates["plain"], 3),
        "cosine_min": round(float(cosine.min()), 6), "optimise_s": round(optimise_s, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }  # fmt: skip
    print(json.dumps(report, indent=2))
    fused_file.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
