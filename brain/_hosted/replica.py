"""Reads from a streaming replica (`--db-read`), with each tenant still reading its own writes.

Every commit on the primary that wrote a tenant's rows also counts it in that tenant's row of
`write_marks` (`BUMP`, in the same transaction, so the count and the write reach a replica
together). A read-only tool call may then run on the replica if the replica's count for the
tenant has reached the primary's (`READ`, asked of both): whatever the tenant wrote before the
call, through any server, is on the replica. Else the call reads the primary.
"""

from __future__ import annotations

# One statement in the commit's pipeline: a no-op for a transaction that wrote nothing (no
# transaction id was assigned), so reads pay no write. The tenant's advisory lock orders a
# tenant's writers; two statements alone meet on the row's lock.
BUMP = (
    "INSERT INTO write_marks (written) SELECT 1 WHERE pg_current_xact_id_if_assigned() "
    "IS NOT NULL ON CONFLICT (tenant) DO UPDATE SET written = write_marks.written + 1"
)
READ = "SELECT written FROM write_marks"  # the tenant's row: row-level security picks it

# Where a read went: `replica`, or the primary because the replica had not replayed the
# tenant's last write (`behind`) or failed (`down`; hosted/pool.py `Replica`).
SERVED, BEHIND, DOWN = "replica", "behind", "down"


def written(row: object) -> int:
    """A tenant's count of writes from a `READ` row (none yet: 0)."""
    return 0 if row is None else int(str(row[0]))  # type: ignore[index]
