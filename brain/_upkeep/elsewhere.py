"""Notes forgotten on another clone of the vault stay forgotten here when git merges.

A forget is machine-local but its commit names the ids it removed (`git/forgets.py`). When the
other clone changed the note meanwhile, git leaves it back: a modify/delete conflict at its path
(a relation, a field, a paragraph) or, for a correction, the original moved aside under a name
of its own (`<title> (superseded <day>).md`), no conflict at all. Here the forget wins: the
conflict is resolved the forget's way (a correction made on the other clone stays, as a note of
its own), what still holds a forgotten id is forgotten again, and this machine records the
forgetting too, so `brain doctor --forgotten` can look for its traces here.
"""

from __future__ import annotations

from brain._context import Context
from brain._errors import BrainError, BrokenNote
from brain._git import forgets
from brain._git.repo import flag_regeneration, merging
from brain._model import iso
from brain._notes import forgetting
from brain._upkeep import dailylog, dictionaries
from brain._vault import forgotten, notefile


def settle_collisions(brain: Context) -> bool:
    """In a merge that stopped on notes one side forgot and the other changed: resolve those
    the forget's way, and finish the merge when nothing else conflicts (True)."""
    if not brain.changes.enabled or merging(brain.root) != "a merge":
        return False
    found = forgets.collisions(brain.root)
    if not found:
        return False
    with brain.lock.hold():
        for collision in found:
            try:
                changed = notefile.parse(collision.changed, collision.path)
            except BrokenNote:
                continue  # not brain's to read: the person's to resolve
            # A correction made on the other clone is a note of its own (`forget_again`
            # unlinks it); the forgotten note itself goes, whatever was added to it.
            forgets.resolve(brain.root, collision.path, keep=changed.id != collision.forgotten)
        if not forgets.conclude(brain.root):
            return False
        flag_regeneration(brain.root)  # the regeneration forgets what else came back
    return True


def brought(brain: Context, seen: str | None, head: str | None) -> dict[str, list[str]]:
    """The forget commits git brought since `seen` (merges: on either side) → their ids.

    With no commit seen (a clone's first brain command, or `.brain/` lost, perhaps after a
    pull), what a pull brought cannot be told: every forget in the history is read, once, and
    those whose notes the vault holds again are honoured (the others were honoured already)."""
    if not brain.changes.enabled or head is None or seen == head:
        return {}
    if seen is None:
        commits = forgets.forgotten_in(brain.root, head)
        held = brain.caches.catalog.get_many(sorted({i for ids in commits.values() for i in ids}))
        commits = {commit: [i for i in ids if i in held] for commit, ids in commits.items()}
        return {commit: ids for commit, ids in commits.items() if ids}
    return forgets.forgotten_since(brain.root, seen, head)


def forget_again(brain: Context, seen: str | None, head: str | None) -> list[str]:
    """Forget the notes the forgets git brought since `seen` removed and the merge kept or
    brought back, and record each forgetting here (callers hold the lock, in an operation,
    after a catch-up); says what it did."""
    commits = brought(brain, seen, head)
    ids = {i for named in commits.values() for i in named}
    if not ids:
        return []
    _record(brain, commits)
    _take_in(brain, ids)
    said = []
    for note_id in sorted(ids):
        if brain.caches.catalog.get(note_id) is None:
            continue
        try:
            done, _dropped = forgetting.forget(brain, note_id)
        except BrainError:  # (an archived partition here): never a stop to every command
            said.append(f"leave {note_id}, forgotten on another clone, to `brain forget`")
            continue
        gone = [r.id for r in done.remove]
        dictionaries.after_forget(brain, gone)
        said.append(f"forget {' '.join(gone)} again, forgotten on another clone")
    holders = sorted({e.source for e in brain.caches.catalog.relations_to_any(sorted(ids))})
    for holder in holders:  # a relation the other clone made to the note meanwhile
        note = brain.get(holder)
        kept = [r for r in note.relations if r.target.split("#", 1)[0] not in ids]
        brain.save(note.with_meta(relations=[r.to_yaml() for r in kept] or None))
    if holders:
        said.append(f"drop relations to forgotten notes from {', '.join(holders)}")
    dailylog.strike(brain, sorted(ids))
    return said


def _take_in(brain: Context, ids: set[str]) -> None:
    """Files the catch-up kept out for holding a note forgotten here (one a merge brought back:
    catchup._forgotten_back) indexed again, so they are forgotten again the forget's way below,
    a correction made on the other clone unlinked from them. Lock held."""
    back = {}
    for row in brain.caches.catalog.broken_files():
        try:
            note_id = brain.store.read(row.path).id
        except (BrokenNote, OSError):
            continue
        if note_id in ids:
            back[row.path] = note_id
    if back:
        forgotten.unrecord(brain.root, back.values())  # forgotten again below: recorded anew
        for path in back:
            brain.by_hand.index_file(path)


def _record(brain: Context, commits: dict[str, list[str]]) -> None:
    """A forgetting made on another clone, recorded here as it was forgotten there (salted
    hashes of the note before its forget commit), for `brain doctor --forgotten`."""
    if not brain.capabilities.hand_edits:
        return
    known = list(forgotten.load(brain.root))
    for commit, ids in commits.items():
        for note in forgets.forgotten_notes(brain.root, commit, ids):
            if not any(r.names(str(note.id)) for r in known):
                forgotten.record(brain.root, note, iso(brain.clock.now()))
                known = list(forgotten.load(brain.root))
