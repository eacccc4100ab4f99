"""Forgets made on another clone, as git carries them: the `Brain-Forgets` trailers of forget
commits, and the modify/delete conflicts a forget meets when the other clone changed the note.

A forget commit names the ids it removed in its trailers (its subject names the note already;
a local-only note's forget never reaches git). A merge reads them back: the commits it brought
in, and on each side of a merge the commits since the fork (this clone's own forget met the
other clone's change), less the forgets a `brain undo` took back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from brain._errors import BrokenNote
from brain._git.repo import FORGETS, UNDOES, GitError, git_identity, run
from brain._model import Note
from brain._vault import notefile

_VALUES = "valueonly,separator=%x20"
_FORMAT = (
    f"%H%x1f%(trailers:key={FORGETS},{_VALUES})%x1f%(trailers:key={UNDOES},{_VALUES})%x1f%b%x1e"
)
_REVERTS = re.compile(r"^This reverts commit ([0-9a-f]{40})\b", re.MULTILINE)


def forgotten_in(root: Path, *ranges: str) -> dict[str, list[str]]:
    """Each forget commit in these revision ranges → the ids it names (left out: those a
    `brain undo` or a `git revert` in the same ranges took back)."""
    forgets: dict[str, list[str]] = {}
    undone: set[str] = set()
    for spec in ranges:
        out = run(root, "log", f"--format={_FORMAT}", spec, "--", check=False)
        for entry in out.split("\x1e"):
            commit, _, rest = entry.strip().partition("\x1f")
            ids, _, rest = rest.partition("\x1f")
            undoes, _, body = rest.partition("\x1f")
            if commit and ids.split():
                forgets[commit] = ids.split()
            undone.update(undoes.split(), _REVERTS.findall(body))
    return {commit: ids for commit, ids in forgets.items() if commit not in undone}


def forgotten_since(root: Path, seen: str, head: str) -> dict[str, list[str]]:
    """The forgets a pull (or any move of HEAD from `seen`) brought, and for each merge it
    brought, those made on either side since the two sides parted."""
    merges = run(root, "rev-list", "--merges", f"{seen}..{head}", check=False).split()
    return forgotten_in(root, f"{seen}..{head}", *(f"{m}^1...{m}^2" for m in merges))


def forgotten_notes(root: Path, commit: str, ids: list[str]) -> list[Note]:
    """The notes a forget commit removed, as they were just before it."""
    out = run(root, "diff-tree", "-r", "-z", "--no-commit-id", commit, check=False).split("\0")
    found = []
    for info, path in zip(out[::2], out[1::2], strict=False):
        fields = info.split()
        if len(fields) != 5 or fields[4] not in {"D", "M"} or not path.endswith(".md"):
            continue
        try:
            note = notefile.parse(run(root, "cat-file", "blob", fields[2]), path)
        except (BrokenNote, GitError):
            continue
        if note.id in ids:
            found.append(note)
    return found


@dataclass(frozen=True)
class Collision:
    """A note one side of a merge forgot and the other changed (git's modify/delete)."""

    path: str
    forgotten: str  # the id the forget removed
    changed: str  # the changed side's text: the same note (its id), or a correction of it


def collisions(root: Path) -> list[Collision]:
    """The modify/delete conflicts of the merge in progress whose deleted side is a brain
    forget of the note the path held before; other conflicts stay the person's."""
    stages: dict[str, dict[str, str]] = {}
    for entry in run(root, "ls-files", "-u", "-z", check=False).split("\0"):
        info, _, path = entry.partition("\t")
        if path:
            _mode, blob, stage = info.split()
            stages.setdefault(path, {})[stage] = blob
    fork = run(root, "merge-base", "HEAD", "MERGE_HEAD", check=False).strip()
    if not fork:  # no merge (a rebase, a cherry-pick): the person's to resolve
        return []
    forgot = {
        side: {i for ids in forgotten_in(root, f"{fork}..{side}").values() for i in ids}
        for side in ("HEAD", "MERGE_HEAD")
    }
    found = []
    for path, blobs in sorted(stages.items()):
        if "1" not in blobs or len(blobs) != 2 or not path.endswith(".md"):
            continue
        deleter, kept = ("HEAD", blobs.get("3")) if "2" not in blobs else ("MERGE_HEAD", blobs["2"])
        base = _note_id(root, blobs["1"], path)
        if base and kept and base in forgot[deleter]:
            found.append(Collision(path, base, run(root, "cat-file", "blob", kept)))
    return found


def _note_id(root: Path, blob: str, path: str) -> str | None:
    try:
        return notefile.parse(run(root, "cat-file", "blob", blob), path).id
    except (BrokenNote, UnicodeDecodeError):
        return None


def resolve(root: Path, path: str, *, keep: bool) -> None:
    """Settle one collision: the changed side's file kept (`keep`), else the forget's way."""
    if keep:
        run(root, "add", "--", path)
    else:
        run(root, "rm", "-q", "--ignore-unmatch", "--", path)


def conclude(root: Path) -> bool:
    """Commit the merge in progress when no conflict is left (as `git pull` would have, had
    it met none); False when the person still has some to resolve."""
    if run(root, "diff", "--name-only", "--diff-filter=U", check=False).strip():
        return False
    run(root, *git_identity(root), "commit", "-q", "--no-verify", "--no-edit")
    return True
