"""`brain import` of a chat export against the two encoders' own rate on the same texts.

    python -m bench.imports [--conversations 300] [--turns 6] [--out F.json]

Writes a ChatGPT export (a zip of conversations.json) of synthetic conversations, their turns
the scale benchmark's memories; loads and warms MiniLM and SPLADE; then times one
`import_export` into a fresh vault until its vectors and sparse terms are all in place
(import, then flush). The encoders alone are then timed on exactly the texts the import gave
them (every object of every note, as `embed_text` makes it), in the import's batches, before
and after the import; the ratio is set against their mean (the machine drifts within a run).
Run it from two checkouts in turn to compare them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.scale import memories, rss_mb, texts_rate
from brain import open_vault
from brain._indexes.embedder import load_embedder
from brain._indexes.objects import embed_text, objects_of, text_hash
from brain._indexes.sparse import load_sparse
from brain._settings import model_cache_dir
from brain._vault.template import init_vault


def export(path: Path, conversations: int, turns: int) -> Path:
    """A ChatGPT export of `conversations` chats of `turns` messages each."""
    said = list(memories(conversations * turns))
    chats = []
    for n in range(conversations):
        mapping: dict[str, Any] = {"root": {"message": None, "parent": None, "children": ["t0"]}}
        for t in range(turns):
            mapping[f"t{t}"] = {
                "parent": "root" if t == 0 else f"t{t - 1}",
                "children": [f"t{t + 1}"] if t + 1 < turns else [],
                "message": {
                    "author": {"role": ("user", "assistant")[t % 2]},
                    "create_time": 1_700_000_000 + n * 3600 + t * 60,
                    "content": {"content_type": "text", "parts": [said[n * turns + t].text]},
                },
            }
        chats.append(
            {
                "id": f"chat-{n}",
                "title": said[n * turns].title or f"Chat {n}",
                "create_time": 1_700_000_000 + n * 3600,
                "current_node": f"t{turns - 1}",
                "mapping": mapping,
            }
        )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("conversations.json", json.dumps(chats))
        archive.writestr("user.json", "{}")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--conversations", type=int, default=300)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    models = model_cache_dir(os.environ, Path.home())
    embedder = load_embedder("minilm", models)
    sparse = load_sparse("splade", models)
    assert embedder is not None and sparse is not None
    embedder.embed(["load the model before the clock starts"])
    sparse.encode(["load the model before the clock starts"])
    with tempfile.TemporaryDirectory() as tmp:
        zipped = export(Path(tmp) / "chatgpt.zip", args.conversations, args.turns)
        root = Path(tmp) / "vault"
        init_vault(root, datetime.now(UTC))
        brain = open_vault(root, embedder=embedder, sparse=sparse)
        # The texts the import will embed, known only once it ran: a first import, untimed,
        # into a scratch vault, read back; then the encoders alone before the timed import.
        scratch = Path(tmp) / "scratch"
        init_vault(scratch, datetime.now(UTC))
        first = open_vault(scratch, embedder=None)
        first.import_export("chatgpt", zipped)
        texts = [
            embed_text(obj)
            for rel, _st in first._context.store.walk()
            for note in [first._context.store.read(rel)]
            for obj in objects_of(note, text_hash(note.body))
        ]
        first.close()
        before = texts_rate(embedder, sparse, texts)
        load = os.getloadavg()[0]
        start = time.perf_counter()
        report = brain.import_export("chatgpt", zipped)
        imported = time.perf_counter() - start
        brain._context.flush()
        took = time.perf_counter() - start
        rss = rss_mb()
        brain.close()
        after = texts_rate(embedder, sparse, texts)
    rate = len(texts) / took
    result = {
        "conversations": len(report.added),
        "texts": len(texts),
        "import_s": round(imported, 1),
        "flush_s": round(took - imported, 1),
        "texts_per_s": round(rate, 1),
        "encoders_per_s": [round(before, 1), round(after, 1)],
        "of_encoders": round(rate / ((before + after) / 2), 3),
        "rss_mb": rss,
        "load": round((load + os.getloadavg()[0]) / 2, 2),
        "code": str(Path.cwd()),
    }
    line = json.dumps(result)
    print(line)
    if args.out:
        with args.out.open("a") as out:
            out.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
