"""git merge drivers: regenerated files keep one side; dated notes merge their blocks.

git calls `python -m brain git merge-driver <kind> %O %A %B %P` and reads the result from %A.
- `regenerate` (index.json, Insights/Graph.md): both are made from the notes, so the merge
  keeps our side and flags the vault; the next brain command rewrites them from the merged notes.
- `dated` (Sessions, Diary, Logs): a union of the `## HH:MM:SSZ` (or `±HH:MM`) blocks in time
  order (a block one side removed stays removed); named sections (a daily log's
  `## Created (3)`) merge their lines. Both clones reach the same bytes whichever way they
  merge. When each side made the day's note with an id of its own, the older id is kept and
  the other is listed in `merged_ids`; relations to it are repointed after the merge (`aftermerge`).
Anything that does not parse falls back to git's own line merge, conflict markers and all.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

from brain._errors import BrokenNote, InvalidInput
from brain._git import aftermerge
from brain._vault import notefile

KINDS = ("regenerate", "dated")
# The clock time of a block, `Z` or the offset of the zone it was written in (clock.stamp).
_STAMP = re.compile(
    r"^## (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)(?:Z|(?P<sign>[+-])(?P<oh>\d\d):(?P<om>\d\d))\s*$"
)


def merge_driver(kind: str, base: Path, ours: Path, theirs: Path, rel: str, cwd: Path) -> int:
    """Merge into `ours`; returns the exit code git expects (0 clean, 1 conflicted)."""
    if kind not in KINDS:
        raise InvalidInput(f"unknown merge driver {kind!r}; allowed: {', '.join(KINDS)}")
    if kind == "regenerate":
        from brain._git.repo import flag_regeneration

        flag_regeneration(cwd)
        return 0
    texts = [p.read_text(encoding="utf-8") if p.exists() else "" for p in (base, ours, theirs)]
    try:
        merged = merge_dated(*texts, rel=rel)
        ids = {notefile.parse(t, rel).id for t in texts[1:]}
    except (BrokenNote, UnicodeDecodeError):
        return line_merge(base, ours, theirs)
    kept = notefile.parse(merged, rel).id
    for gone in sorted(i for i in ids if i and i != kept):
        # Relations made on the other side to the id the merge did not keep.
        aftermerge.leave(cwd, {"kind": "alias", "gone": gone, "kept": kept or "", "path": rel})
    ours.write_text(merged, encoding="utf-8")
    return 0


def line_merge(base: Path, ours: Path, theirs: Path) -> int:
    labels = ["-L", "ours", "-L", "base", "-L", "theirs"]
    done = subprocess.run(
        ["git", "merge-file", *labels, str(ours), str(base), str(theirs)], check=False
    )
    return 0 if done.returncode == 0 else 1


def merges_cleanly(base: Path, ours: Path, theirs: Path) -> bool:
    """Whether git's line merge of the three has no conflict (nothing is written)."""
    done = subprocess.run(
        ["git", "merge-file", "-p", "-q", str(ours), str(base), str(theirs)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def merge_dated(base: str, ours: str, theirs: str, *, rel: str = "note.md") -> str:
    """Three-way merge of a dated note: blocks as sets, in time order."""
    notes = [notefile.parse(t, rel) if t.strip() else None for t in (base, ours, theirs)]
    a, b = notes[1], notes[2]
    if a is None or b is None:
        raise BrokenNote(f"{rel}: one side is empty")
    parsed = [_split(n.body) if n else ("", [], {}) for n in notes]
    (_, o_blocks, o_named), (preamble, a_blocks, a_named), (_, b_blocks, b_named) = parsed
    removed = {blk for blk in o_blocks if blk not in a_blocks or blk not in b_blocks}
    kept = {blk for blk in a_blocks + b_blocks if blk not in removed}
    stamped = sorted(kept, key=lambda blk: (_instant(blk.split("\n", 1)[0]), blk))
    # A named section's line one side removed stays removed too: a forget struck it from a
    # daily log, and a union would bring the forgotten note's title back.
    struck = {
        (heading, line)
        for heading, lines in o_named.items()
        for line in lines
        if line not in a_named.get(heading, []) or line not in b_named.get(heading, [])
    }
    named: dict[str, list[str]] = {}
    for heading, lines in [*a_named.items(), *b_named.items()]:
        have = named.setdefault(heading, [])
        have += [line for line in lines if line not in have and (heading, line) not in struck]
    parts = [preamble.rstrip("\n")] if preamble.strip() else []
    for heading, lines in named.items():
        bullets = sum(1 for line in lines if line.startswith("- "))
        if not bullets and heading in o_named:
            continue  # every line of it was struck: the section goes, as `strike` drops it
        body_lines = [line for line in lines if line.strip()]
        parts.append(f"## {heading} ({bullets})\n\n" + "\n".join(body_lines))
    parts += [blk.rstrip("\n") for blk in stamped]
    body = "\n\n".join(parts) + "\n"
    # Written as our side spelled it (its line ends, its byte-order mark).
    return notefile.render(replace(a, meta=_meta(a.meta, b.meta), body=body, raw_front=None))


def _split(body: str) -> tuple[str, list[str], dict[str, list[str]]]:
    """Preamble, timestamped blocks (whole text), named sections (heading → lines)."""
    preamble: list[str] = []
    blocks: list[list[str]] = []
    for line in body.splitlines():
        if line.startswith("## "):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
        else:
            preamble.append(line)
    stamped, named = [], {}
    for block in blocks:
        if _STAMP.match(block[0]):
            stamped.append("\n".join(block).strip("\n") + "\n")
            continue
        heading = _uncounted(block[0][3:])
        lines = [line for line in block[1:] if line.strip()]
        if _STAMP.match(f"## {heading}"):
            # A brain from before offsets (f83eea2 and older) merged a block stamped in a
            # zone as a named section: `## 09:23:35+09:00 (0)`, put first, blank lines out.
            # It is a block again, at its moment.
            stamped.append(f"## {heading}\n\n" + "\n".join(lines) + "\n")
        else:
            named[heading] = lines
    return "\n".join(preamble), stamped, named


def _instant(heading: str) -> int:
    """A block's moment in seconds from the start of the note's day in UTC: blocks written
    in two zones (two machines, a trip) interleave as they happened, not as their clocks read."""
    found = _STAMP.match(heading)
    assert found is not None  # only stamped blocks are sorted
    seconds = int(found["h"]) * 3600 + int(found["m"]) * 60 + int(found["s"])
    if found["sign"]:
        offset = int(found["oh"]) * 3600 + int(found["om"]) * 60
        seconds -= offset if found["sign"] == "+" else -offset
    return seconds


def _uncounted(heading: str) -> str:
    """A named section's heading without its count ("Created (3)" → "Created"). No regex: a
    backtracking one took seconds on a pulled heading of many spaces."""
    text = heading.rstrip()
    head, paren, count = text[:-1].rpartition("(")
    if text.endswith(")") and paren and count.isdecimal():
        return head.rstrip()
    return text


def _listed(value: Any) -> list[Any]:
    """A front-matter list as a list; anything else (`tags: 5`, `tags: abc`, a hand edit or a
    hostile remote's) as no list, so the merge never fails on it or splits a word into letters."""
    return list(value) if isinstance(value, list) else []


def _meta(a: dict[str, Any] | Any, b: dict[str, Any] | Any) -> dict[str, Any]:
    """One front-matter for both sides: the older id wins (so both clones agree), dates widen."""
    first, second = (a, b) if str(a.get("id", "")) <= str(b.get("id", "")) else (b, a)
    meta = dict(first)
    touched = [str(m["touched"]) for m in (a, b) if m.get("touched")]
    if touched:
        meta["touched"] = max(touched)
    created = [str(m["created"]) for m in (a, b) if m.get("created")]
    if created:
        meta["created"] = min(created)
    tags = _listed(first.get("tags")) + [
        t for t in _listed(second.get("tags")) if t not in _listed(first.get("tags"))
    ]
    if tags:
        meta["tags"] = tags
    # The id the merge does not keep stays findable: its relations are repointed, and the
    # note says which ids it took in.
    merged = {str(i) for m in (a, b) for i in _listed(m.get("merged_ids"))}
    if str(second.get("id", "")) != str(first.get("id", "")):
        merged.add(str(second.get("id", "")))
    merged.discard("")
    if merged:
        meta["merged_ids"] = sorted(merged)
    return meta
