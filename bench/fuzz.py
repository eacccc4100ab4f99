"""A hostile vault: good notes among every kind of bad file; after the ordinary catch-up and
after `brain reindex`, every good note is found under its own id with its own bytes.

    python -m bench.fuzz [--notes 10000] [--big-mb 10] [--bigs 3] [--seed 41] [--keep DIR]

Good notes (in two partitions, some saved with a BOM, CRLF or CR line ends, some with NUL
bytes or a large body) are indexed first, so the catalog knows them. Then the hostile files
go in beside them: broken YAML, wrong types, huge values, alias bombs, NUL bytes, invalid
UTF-8, copies of good notes (older, newer, without a readable `created`, in another
partition, byte for byte), links out of the vault, a FIFO, a folder named like a note. Each
pass runs as its own `brain` process (a crash is an exit code, a hang a timeout), and its
time and peak memory (RSS) are reported. tests/vault/test_fuzz.py runs the same set, smaller.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from brain._brain import open_vault
from brain.testing import NO_AUTOSTART, new_vault

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 12, 2, tzinfo=UTC)
BOM = b"\xef\xbb\xbf"
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
WORDS = (
    "garden boiler taxes bicycle recipe travel book music zebra harbour lantern orchard "
    "violin meadow copper thistle glacier pepper falcon quarry"
).split()
FOLDERS = ("Knowledge/Inbox", "Knowledge/Domains/Home", "Knowledge/Domains/Work/Plans")
PARTITIONS = ("main", "work")
HOSTILE_SHARE = 0.3  # of --notes; the rest are good notes
LIST_ONE = ("list", "--limit", "1", "--json")


@dataclass
class Vault:
    """A generated vault: the good notes (id → path, bytes) and the hostile files written."""

    root: Path
    outside: Path  # a folder beside the vault that links point into: never to be touched
    good: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    hostile: dict[str, bytes] = field(default_factory=dict)  # path → bytes as written
    kinds: dict[str, int] = field(default_factory=dict)  # hostile kind → files


def ulid(rng: random.Random, moment: datetime) -> str:
    """A seeded ULID (brain's own are random: a fuzz run must be repeatable)."""
    value = (int(moment.timestamp() * 1000) << 80) | rng.getrandbits(80)
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def styled(data: bytes, style: str) -> bytes:
    """The bytes as an editor saves them: `lf`, `crlf`, `cr`, each with `+bom` or not."""
    if style.startswith("crlf"):
        data = data.replace(b"\n", b"\r\n")
    elif style.startswith("cr"):
        data = data.replace(b"\n", b"\r")
    return BOM + data if style.endswith("+bom") else data


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def build(root: Path, *, notes: int, big_bytes: int, bigs: int, seed: int) -> Vault:
    """The vault with its good notes indexed, then the hostile files dropped in beside them."""
    rng = random.Random(seed)
    new_vault(root, T0, daemon=NO_AUTOSTART)
    outside = root.parent / "outside"
    outside.mkdir(exist_ok=True)
    vault = Vault(root, outside)
    goods = notes - int(notes * HOSTILE_SHARE)
    for n in range(goods):
        rel, data, note_id = _good(rng, vault, n, big_bytes if n < bigs else 0)
        _write(root / rel, data)
        vault.good[note_id] = (rel, data)
    run(root, "reindex", timeout=3600)  # the catalog knows every good note and holds its id
    hostile = list(HOSTILE.items())
    for n in range(notes - goods):
        kind, make = hostile[n % len(hostile)]
        for rel, data in make(rng, vault, n):
            _write(root / rel, data)
            vault.hostile[rel] = data
            vault.kinds[kind] = vault.kinds.get(kind, 0) + 1
    _links_and_oddities(vault)
    return vault


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _good(rng: random.Random, vault: Vault, n: int, big: int) -> tuple[str, bytes, str]:
    created = T0 - timedelta(days=rng.randrange(3000), seconds=rng.randrange(86400))
    note_id = ulid(rng, created)
    stamp = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [
        f"id: {note_id}",
        f"title: Good {n} {rng.choice(WORDS)}",
        "kind: titled",
        "status: active",
        f"created: {stamp}",
        f"touched: {stamp}",
        f"tags: [{rng.choice(WORDS)}]",
    ]
    if vault.good and rng.random() < 0.3:
        target = rng.choice(list(vault.good))
        lines.append(f"relations:\n- {{type: references, target: {target}}}")
    body = f"Good note {n} token good{n}x. {_words(rng, rng.randrange(5, 60))}.\n"
    if rng.random() < 0.03:
        body += "A NUL \x00 inside a good body.\n"
    if big:
        line = _words(rng, 12) + ".\n"
        body += line * (big // len(line))
    data = ("---\n" + "\n".join(lines) + "\n---\n" + body).encode("utf-8")
    style = rng.choice(("lf",) * 8 + ("crlf", "crlf+bom", "lf+bom", "cr"))
    rel = f"{rng.choice(PARTITIONS)}/{rng.choice(FOLDERS)}/Good {n}.md"
    return rel, styled(data, style), note_id


# hostile files, one maker per kind: each returns the files to write (path, bytes) -------
def _at(rng: random.Random, kind: str, n: int) -> str:
    return f"{rng.choice(PARTITIONS)}/{rng.choice(FOLDERS)}/{kind} {n}.md"


def _front(lines: str, body: str = "Hostile body.\n") -> bytes:
    return f"---\n{lines}\n---\n{body}".encode()


def _bad_yaml(rng: random.Random, _v: Vault, n: int) -> list[tuple[str, bytes]]:
    texts = [
        "title: 'unclosed",
        "title: [a, b",
        "\ttitle: tab",
        "title: a: b: c",
        "key without colon",
        "- a list\n- not a mapping",
        "title: {a: 1",
        "? [k]\n: v",
        "title: !!python/object:os.system ls",
        "1: 2\n1: 3",
        "title: a\n  bad: indent",
    ]
    out = [(_at(rng, "bad yaml", n), _front(rng.choice(texts)))]
    if n % 3 == 0:  # never closed, or nothing but a fence
        out.append((_at(rng, "unclosed", n), b"---\ntitle: Unclosed\nbody, never fenced\n"))
    return out


def _wrong_types(rng: random.Random, _v: Vault, n: int) -> list[tuple[str, bytes]]:
    fields = [
        "id: [1, 2]",
        "id: {a: 1}",
        "id: 12345",
        "id: null",
        "id: ''",
        "id: true",
        "title: [a, b]",
        "title: {x: 1}",
        "title: null",
        "title: 123",
        "title: !!binary aGk=",
        "created: [2026]",
        "created: {y: 1}",
        "created: 2026-13-45T99:99:99Z",
        "created: .nan",
        "touched: yesterday",
        "status: {x: 1}",
        "kind: [a]",
        "tags: 5",
        "tags: [[a, [b]]]",
        "tags: !!set {a, b}",
        "relations: oops",
        "relations: [1, 2]",
        "relations: [{type: 5, target: [x]}]",
        "relations: [{type: bogus, target: x}]",
        "supersedes: [a]",
        "visibility: [private]",
        "defining: 5",
        "source: text",
        "parent: {a: 1}",
        "eternal: maybe",
        "weight: 1e999",
        "<<: {title: merged}",
    ]
    picked = rng.sample(fields, 3)
    return [(_at(rng, "wrong types", n), _front("\n".join(picked)))]


def _huge(rng: random.Random, _v: Vault, n: int) -> list[tuple[str, bytes]]:
    choices = [
        "title: " + "x" * 70_000,  # above the field limit
        "weight: " + "9" * 5000,  # an integer Python will not convert
        "tags: [" + ", ".join(f"t{i}" for i in range(20_000)) + "]",
        "\n".join(f"field{i}: {i}" for i in range(3000)),
        "title: " + "[" * 3000 + "]" * 3000,  # nested past the parser's depth
    ]
    return [(_at(rng, "huge", n), _front(rng.choice(choices)))]


def _aliases(rng: random.Random, _v: Vault, n: int) -> list[tuple[str, bytes]]:
    depth = rng.choice((2, 5, 9))
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, depth)]
    lines.append("tags: [" + ",".join([f"*a{depth - 1}"] * 9) + "]")
    merge = "base: &b {title: x}\nother:\n  <<: *b"
    return [(_at(rng, "alias", n), _front(rng.choice(("\n".join(lines), merge))))]


def _encodings(rng: random.Random, _v: Vault, n: int) -> list[tuple[str, bytes]]:
    """Hand-made notes without an id in every style: adopted, their bodies kept."""
    data = _front("title: Typed by hand", f"Typed by hand {n}. {_words(rng, 8)}.\n")
    if n % 2:
        data = data.split(b"---\n", 2)[2]  # no front-matter at all
    style = rng.choice(("crlf", "crlf+bom", "lf+bom", "cr", "cr+bom"))
    return [(_at(rng, "encoding", n), styled(data, style))]


def _bytes(rng: random.Random, _v: Vault, n: int) -> list[tuple[str, bytes]]:
    choices = [
        b"---\ntitle: nul\x00here\n---\nbody\n",
        b"---\ntitle: ok\n---\nbody with a NUL \x00 and more\n",
        b"---\ntitle: latin1 \xe9t\xe9\n---\nbody\n",
        b"\xff\xfe---\ntitle: utf16?\n---\n",
        b"---\ntitle: ok\n---\ncut in the middle \xe2\x82",
        bytes(rng.getrandbits(8) for _ in range(200)),
        b"",
        b"---\n---\n",
        b"---",
    ]
    return [(_at(rng, "bytes", n), rng.choice(choices))]


def _copies(rng: random.Random, vault: Vault, n: int) -> list[tuple[str, bytes]]:
    """A good note copied: byte for byte, edited, claiming an earlier or no `created`, in
    the other partition. The original keeps its id; the copy gets its own."""
    rel, data = vault.good[rng.choice(list(vault.good))]
    how = rng.choice(("exact", "edited", "older", "no created", "unreadable", "other"))
    text = data.decode("utf-8")
    if how == "edited":
        nl = "\r\n" if "\r\n" in text else "\r" if "\n" not in text else "\n"
        text += f"{nl}An edit to my copy.{nl}"  # in the file's own line ends
    elif how == "older":
        text = re.sub(r"created: \S+", "created: 1990-01-01T00:00:00Z", text, count=1)
    elif how == "no created":
        text = re.sub(r"created: \S+\r?\n?", "", text, count=1)
    elif how == "unreadable":
        text = re.sub(r"created: \S+", "created: 0", text, count=1)
    partition = rel.split("/", 1)[0]
    if how == "other":
        partition = next(p for p in PARTITIONS if p != partition)
    folder = rel.split("/", 1)[1].rsplit("/", 1)[0]
    return [(f"{partition}/{folder}/ copy {n} {how}.md", text.encode("utf-8"))]


def _impostors(rng: random.Random, vault: Vault, n: int) -> list[tuple[str, bytes]]:
    """Notes that name a good note's id without being a copy of it: as a chunk of it, with
    spaces, or claiming to supersede it, to be its parent, or to correct it."""
    good = rng.choice(list(vault.good))
    lines = rng.choice(
        (
            f"id: '{good}#1'",
            f"id: ' {good} '",
            f"id: {good.lower()}",
            f"supersedes: {good}",
            f"parent: {good}",
            f"relations: [{{type: corrects, target: {good}}}]",
        )
    )
    return [(_at(rng, "impostor", n), _front(f"{lines}\ntitle: Impostor {n}"))]


HOSTILE: dict[str, Callable[[random.Random, Vault, int], list[tuple[str, bytes]]]] = {
    "bad yaml": _bad_yaml,
    "wrong types": _wrong_types,
    "huge": _huge,
    "alias": _aliases,
    "encoding": _encodings,
    "bytes": _bytes,
    "copy": _copies,
    "impostor": _impostors,
}


def _links_and_oddities(vault: Vault) -> None:
    """Links out of the vault (to a note, to a folder, dangling, a loop), a FIFO and a
    folder named like a note: never followed, never read, never blocking a walk."""
    secret = vault.outside / "secret.md"
    secret.write_bytes(b"---\ntitle: Secret\n---\nOutside the vault.\n")
    inbox = vault.root / "main/Knowledge/Inbox"
    (inbox / "link to secret.md").symlink_to(secret)
    (inbox / "link to outside").symlink_to(vault.outside, target_is_directory=True)
    (inbox / "dangling.md").symlink_to(vault.outside / "nothing.md")
    (inbox / "loop.md").symlink_to(inbox / "loop.md")
    (vault.root / "outside-partition").symlink_to(vault.outside, target_is_directory=True)
    os.mkfifo(inbox / "fifo.md")
    (inbox / "folder.md").mkdir()
    vault.kinds["links and oddities"] = 7


# running and checking -------------------------------------------------------------------
@dataclass(frozen=True)
class Ran:
    """One `brain` command run as its own process: its output, time and peak memory."""

    stdout: str
    seconds: float
    peak_rss_mb: float


def run(root: Path, *args: str, timeout: float = 600) -> Ran:
    """One `brain` command as its own process: a crash (an exit code other than 0 or 1, a
    traceback) fails, and so does a hang (killed at the timeout)."""
    env = {**os.environ, "BRAIN_DAEMON": "off", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "brain", *args, "--vault", str(root)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:  # wait4, not wait: the rusage of this child alone
            _pid, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        seconds = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if code not in (0, 1) or "Traceback" in stderr:
        said = "hung: killed" if seconds >= timeout else f"exited {code}"
        raise AssertionError(f"brain {' '.join(args)} {said}:\n{stderr[-4000:]}")
    return Ran(stdout, seconds, usage.ru_maxrss / 1024)


@dataclass(frozen=True)
class Check:
    """What a pass left: good notes found under their own id with their own bytes, and
    every other file's body kept (or the file left untouched)."""

    good: int
    found: int  # under its own id, at its own path
    own_bytes: int  # and its file's bytes as written
    lost: tuple[str, ...]  # good notes not found, or changed: id and why
    bodies_lost: tuple[str, ...]  # hostile files whose body is gone
    outside_touched: bool


def check(vault: Vault) -> Check:
    brain = open_vault(vault.root)
    try:
        catalog = brain._context.caches.catalog
        found = own = 0
        lost = []
        for note_id, (rel, data) in vault.good.items():
            row = catalog.get(note_id)
            if row is None or row.path != rel:
                lost.append(f"{note_id} {rel}: found at {row.path if row else None}")
                continue
            found += 1
            if (vault.root / rel).read_bytes() == data:
                own += 1
            else:
                lost.append(f"{note_id} {rel}: its bytes changed")
    finally:
        brain.close()
    bodies = [rel for rel, data in vault.hostile.items() if not _kept(data, vault.root / rel)]
    outside = (
        vault.outside / "secret.md"
    ).read_bytes() != b"---\ntitle: Secret\n---\nOutside the vault.\n"
    return Check(len(vault.good), found, own, tuple(lost), tuple(bodies), outside)


def _kept(before: bytes, path: Path) -> bool:
    """Whether a file still holds what a person wrote below its front-matter (brain may add
    or renew the front-matter; the body is never touched)."""
    after = path.read_bytes()
    if after == before:
        return True
    text = before.removeprefix(BOM)
    for nl in (b"\r\n", b"\r", b"\n"):
        fence = nl + b"---" + nl
        if text.startswith(b"---" + nl) and fence in text[3:]:
            return text[3:].split(fence, 1)[1] in after
    return text in after


def measure(base: Path, args: argparse.Namespace) -> dict[str, object]:
    """Build the vault, then the ordinary catch-up (any command runs it first) and a rebuild
    from the files, each checked: what the docs' table reports."""
    started = time.perf_counter()
    vault = build(
        base / "vault",
        notes=args.notes,
        big_bytes=int(args.big_mb * 2**20),
        bigs=args.bigs,
        seed=args.seed,
    )
    report: dict[str, object] = {
        "notes": args.notes,
        "good": len(vault.good),
        "hostile": vault.kinds,
        "build_s": round(time.perf_counter() - started, 1),
    }
    for label, command in (("catch-up", LIST_ONE), ("reindex", ("reindex",))):
        ran = run(vault.root, *command, timeout=3600)
        found = check(vault)
        report[label] = {
            "seconds": round(ran.seconds, 1),
            "peak_rss_mb": round(ran.peak_rss_mb),
            "found": found.found,
            "own_bytes": found.own_bytes,
            "lost": found.lost[:10],
            "bodies_lost": found.bodies_lost[:10],
            "outside_touched": found.outside_touched,
        }
    doctor = json.loads(run(vault.root, "doctor", "--json").stdout)
    report["doctor"] = {k: len(v) for k, v in doctor.items() if isinstance(v, list)}
    report["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--big-mb", type=float, default=10.0, help="size of the large bodies")
    parser.add_argument("--bigs", type=int, default=3, help="how many good notes are large")
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--keep", type=Path, help="build the vault here and keep it")
    args = parser.parse_args(argv)
    base = args.keep or Path(tempfile.mkdtemp(prefix="brain-fuzz-"))
    try:
        print(json.dumps(measure(base, args), indent=2))
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
