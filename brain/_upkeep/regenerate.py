"""What brain derives from the notes, rebuilt whole: every index.json, and Graph.md after merges;
and the catch-up at once after git moved HEAD (a pull)."""

from __future__ import annotations

from brain._context import Context
from brain._git import seen
from brain._git.repo import REGENERATE_FLAG, dirty, merging, refresh_layout, stale_layout
from brain._indexes.rows import Settled
from brain._upkeep import concurrent, elsewhere, graph
from brain._vault import forgotten
from brain._vault.archive import is_archived
from brain._vault.files import remove_file


def rebuild_node_indexes(brain: Context) -> Settled:
    """Recompute every node's statistics and index.json from the files (sleep, reindex)."""
    with brain.lock.hold():
        brain.catch_up()
        return brain.node_index.rebuild(brain.store)


def regenerate_after_merge(brain: Context) -> bool:
    """Rewrite index.json files and Graph.md that a merge kept from one side, and finish what
    the merge drivers left (`concurrent.settle`); once."""
    flag = brain.root / REGENERATE_FLAG
    if not brain.changes.enabled:
        return False
    elsewhere.settle_collisions(brain)  # a forget met the other clone's change: the forget's way
    if not flag.exists() or merging(brain.root):
        return False
    before, commit = seen.seen(brain.root), seen.head(brain.root)
    with brain.changes.operation() as op, brain.lock.hold():
        twins = concurrent.drop_twins(brain)  # before the walk, which would renew one
        brain.catch_up(force=True)
        if commit is not None:  # the walk saw the merge: its own commit follows it
            seen.mark(brain.root, commit)
        kept = concurrent.settle(brain)  # what the merge drivers left for after the merge
        kept += elsewhere.forget_again(brain, before, commit)
        rebuild_node_indexes(brain)
        for partition in brain.store.partitions():
            if not is_archived(brain.store, partition):  # read-only: its Graph.md as merged
                graph.write_graph(brain.at(partition))
        remove_file(flag)
        kept += [f"drop {rel}, the same version as another file" for rel in twins]
        op.said = "; ".join(["regenerate index.json and Graph.md after a merge", *kept])
    return True


def catch_up_after_pull(brain: Context) -> bool:
    """Walk the files once when git moved HEAD since the caches last saw them (a pull, a
    checkout): before a write that does not walk, or a daemon's read between its walks."""
    before, commit = seen.seen(brain.root), seen.moved(brain.root)
    if commit is None:
        return False
    brain.catch_up(force=True)
    seen.mark(brain.root, commit)
    if elsewhere.brought(brain, before, commit):  # a pull brought forgets: honoured here
        with brain.changes.operation() as op, brain.lock.hold():
            op.said = "; ".join(elsewhere.forget_again(brain, before, commit)) or None
    return True


def catch_up_after_restore(brain: Context) -> bool:
    """Forgets the vault's own records do not hold but the state folder's copy does: a whole
    older backup restored with its `.brain/`, whose caches still hold the notes forgotten
    since. Those are dropped from the caches, and the walk keeps their files out of recall as
    it keeps out any forgotten note a backup puts back (doctor names each file)."""
    if not brain.capabilities.hand_edits or not forgotten.behind(brain.root):
        return False  # the usual case: both hold the same bytes, or nothing was forgotten
    with brain.lock.hold():
        if not (missing := forgotten.behind(brain.root)):
            return False  # another process took them in meanwhile
        forgotten.take_in(brain.root)
        for row in brain.caches.catalog.all_notes():
            if any(record.names(row.id) for record in missing):
                brain.caches.drop_note(row.id, row.path)
    brain.catch_up(force=True)
    return True


def refresh_git_layout(brain: Context) -> bool:
    """A vault whose git an older brain enabled gets the `.gitattributes` block and the
    `.gitignore` lines this brain writes, committed, once (the block then says it is today's,
    on every clone that pulls it). Left for later mid-merge, and while the person has changes
    of their own in either file (they are not brain's to commit)."""
    if not brain.changes.enabled or not stale_layout(brain.root) or merging(brain.root):
        return False
    with brain.changes.operation() as op, brain.lock.hold():
        if not stale_layout(brain.root) or dirty(brain.root, [".gitattributes", ".gitignore"]):
            return False  # another process did it meanwhile, or the person is editing them
        written = refresh_layout(brain.root)
        op.said = (
            f"update {' and '.join(written)} to what this brain writes (set up by an older one)"
        )
    return True
