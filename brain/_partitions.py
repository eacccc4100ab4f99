"""Partitions: separate trees of one vault; create, rename, archive (read-only) and restore.

A partition is a top-level folder of the vault (its local-only notes live in
`local-only/<partition>/`). An archived partition carries a marker file, `.archived`, in its
own folder: it moves with a rename, is versioned with the vault, and needs no rewrite of the
hand-edited brain.yaml.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from brain._errors import InvalidInput, NotFound
from brain._git.autocommit import recorded
from brain._model import LOCAL_ONLY, iso
from brain._settings import SETTINGS_FILE
from brain._sources import connectors
from brain._vault.archive import ARCHIVED_MARK, check_recallable, is_archived
from brain._vault.files import fsync_dir
from brain._vault.paths import check_segment
from brain._vault.template import TEMPLATE_PARTITION, stamp_notes, template_dir
from brain._vault.tree import RESERVED_TOP

if TYPE_CHECKING:
    from brain._context import Context

C = TypeVar("C", bound="Context")

_UNSAFE = re.compile(r'[:*?"<>|]')


@dataclass(frozen=True)
class Partition:
    name: str
    archived: bool
    current: bool

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "archived": self.archived, "current": self.current}


def check_name(name: str) -> str:
    """A partition name: one plain folder name, not one of the vault's reserved folders."""
    check_segment(name, "partition")
    if _UNSAFE.search(name):
        raise InvalidInput(f'partition {name!r} may not contain any of : * ? " < > |')
    if name.startswith("~"):  # a shell reads `brain partition use ~` as the home folder
        raise InvalidInput(f"partition {name!r} may not start with '~'")
    if name.casefold() in {r.casefold() for r in RESERVED_TOP}:
        raise InvalidInput(f"partition {name!r} is a reserved folder name")
    return name


def check_model_may_change(brain: Context, name: str) -> None:
    """A model may not rename or archive a partition the person's settings name (the default
    one, a connector's): that would rewrite brain.yaml or break the person's own commands."""
    if not brain.for_model:
        return
    named = {brain.settings.default_partition}
    text = brain.store.read_bytes(SETTINGS_FILE).decode("utf-8", errors="replace")
    for decl in connectors.declared_in(text, brain.root / SETTINGS_FILE).values():
        named.add(decl.partition or brain.settings.default_partition)
    if name in named:
        raise InvalidInput(
            f"partition {name!r} is named in the person's settings (brain.yaml); "
            "only they can rename or archive it",
            f"ask the person to run `brain partition rename|archive {name}`",
        )


def existing(brain: Context, name: str) -> str:
    check_name(name)
    known = brain.store.partitions()
    if name not in known:
        raise NotFound(f"no partition {name!r}", f"partitions: {', '.join(known) or 'none'}")
    return name


def listing(brain: Context) -> list[Partition]:
    """Every partition of the vault, with its state."""
    return [
        Partition(name, is_archived(brain.store, name), name == brain.partition)
        for name in brain.store.partitions()
    ]


@recorded(lambda p, a: f"partition create {p.name}")
def create(brain: Context, name: str) -> Partition:
    """A new partition: a stamped copy of the template's structural notes."""
    check_name(name)
    with brain.lock.hold():
        _check_free(brain, name)
        if not brain.capabilities.folder:
            _create_in_store(brain, name)
            return Partition(name, False, name == brain.partition)
        # Built in a hidden folder beside the partitions and renamed, so nobody sees half of it.
        staging = brain.root / f".partition-{name}.{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(template_dir() / TEMPLATE_PARTITION, staging)
        stamp_notes(staging, brain.clock.now())
        os.replace(staging, brain.root / name)
        fsync_dir(brain.root)
        brain.catch_up()
    return Partition(name, False, name == brain.partition)


def _check_free(brain: Context, name: str, renaming: str | None = None) -> None:
    """A new partition name: not taken, not even in another case ('Work' beside 'work' would be
    one folder once the vault is on macOS or Windows)."""
    if brain.store.is_folder(name) or brain.store.is_folder(f"{LOCAL_ONLY}/{name}"):
        raise InvalidInput(f"partition {name!r} already exists")
    for other in brain.store.partitions():
        if other.casefold() == name.casefold() and other != renaming:
            raise InvalidInput(
                f"partition {name!r} differs from partition {other!r} only in case "
                "(one folder on macOS and Windows)"
            )


def _create_in_store(brain: Context, name: str) -> None:
    """A store that is not a folder (a database) gets the stamped template file by file, inside
    the writer lock's one transaction: nobody sees half of it either."""
    with tempfile.TemporaryDirectory() as scratch:
        staging = Path(scratch, name)
        shutil.copytree(template_dir() / TEMPLATE_PARTITION, staging)
        stamp_notes(staging, brain.clock.now())
        written = []
        for path in sorted(p for p in staging.rglob("*") if p.is_file()):
            rel = f"{name}/{path.relative_to(staging).as_posix()}"
            brain.store.write_bytes(rel, path.read_bytes())
            written.append(rel)
    with brain.node_index.batch():
        for rel in written:
            if rel.endswith(".md"):
                brain.by_hand.index_file(rel)


@recorded(lambda p, a: f"partition rename {a['old']} to {p.name}")
def rename(brain: Context, old: str, new: str) -> Partition:
    """Move a partition's folders; note ids stay the same, the caches follow the new paths."""
    check_name(new)
    with brain.lock.hold():
        existing(brain, old)
        check_model_may_change(brain, old)
        if old == new:
            raise InvalidInput(f"partition {old!r} already has that name")
        _check_free(brain, new, old)
        moved = brain.store.move_folder(old, new)
        hidden = LOCAL_ONLY + "/" + old
        if brain.store.is_folder(hidden):
            moved += brain.store.move_folder(hidden, f"{LOCAL_ONLY}/{new}")
        if not brain.capabilities.hand_edits:  # no walk finds the moved files: say which they are
            brain.by_hand.apply_files(
                [n for _, n in moved if n.endswith(".md")], [o for o, _ in moved]
            )
        if brain.settings.default_partition == old:
            set_default(brain, new)
        _connectors_follow(brain, old, new)
        if brain.partition == old:
            brain.partition = new
        brain.catch_up()
    return Partition(new, is_archived(brain.store, new), new == brain.partition)


def _connectors_follow(brain: Context, old: str, new: str) -> None:
    """A connector that sends its documents to the renamed partition sends them on to the new
    name (its line in brain.yaml rewritten); else its next sync would find no partition."""
    if not brain.capabilities.folder:
        return  # a vault in a database has no connected folders
    declared = connectors.declared(brain.root)
    if any(d.partition == old for d in declared.values()):
        moved = {
            n: replace(d, partition=new) if d.partition == old else d for n, d in declared.items()
        }
        connectors.write_declared(brain.root, moved)


@recorded(lambda p, a: f"partition archive {p.name}")
def archive(brain: Context, name: str) -> Partition:
    """Make a partition read-only and take it out of recall; its files stay as they are."""
    with brain.lock.hold():
        existing(brain, name)
        check_model_may_change(brain, name)
        if is_archived(brain.store, name):
            raise InvalidInput(f"partition {name!r} is already archived")
        stamp = iso(brain.clock.now())
        brain.store.write_bytes(
            f"{name}/{ARCHIVED_MARK}",
            f"# This partition is archived (read-only, out of recall) since {stamp}.\n"
            f"# `brain partition restore {name}` brings it back.\n".encode(),
        )
    return Partition(name, True, name == brain.partition)


@recorded(lambda p, a: f"partition restore {p.name}")
def restore(brain: Context, name: str) -> Partition:
    with brain.lock.hold():
        existing(brain, name)
        if not is_archived(brain.store, name):
            raise InvalidInput(f"partition {name!r} is not archived")
        brain.store.delete(f"{name}/{ARCHIVED_MARK}")
    return Partition(name, False, name == brain.partition)


def view(brain: C, name: str | None) -> C:
    """The vault seen from partition `name` for one command (`--partition`), brain.yaml left
    as it is; None: as it is seen now."""
    if name is None:
        return brain
    return brain.at(existing(brain, name))


def use(brain: Context, name: str) -> Partition:
    """Make this Brain work in another partition (a server remembers it for its lifetime)."""
    existing(brain, name)
    check_recallable(brain.store, name)
    brain.partition = name
    return Partition(name, False, True)


_DEFAULT_LINE = re.compile(r"^default_partition:.*$", re.MULTILINE)


@recorded(lambda _, a: f"partition default {a['name']}")
def set_default(brain: Context, name: str) -> None:
    """Record the partition commands use by default, editing only that line of brain.yaml."""
    text = brain.store.read_bytes(SETTINGS_FILE).decode("utf-8")
    line = f"default_partition: {json.dumps(name, ensure_ascii=False)}"
    if _DEFAULT_LINE.search(text):
        text = _DEFAULT_LINE.sub(line, text, count=1)
    else:
        text = text.rstrip("\n") + "\n" + line + "\n"
    brain.store.write_bytes(SETTINGS_FILE, text.encode("utf-8"))
    brain.settings = replace(brain.settings, default_partition=name)
