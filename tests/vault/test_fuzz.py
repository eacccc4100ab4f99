"""The fuzzed vault of issue 41, seeded and small: good notes among every kind of hostile file
(bench/fuzz.py makes it; `python -m bench.fuzz` runs the full 10,000 notes with 10 MB bodies).
After the ordinary catch-up and after `brain reindex`, each run as its own process (no crash,
no hang), every good note is found under its own id with its own bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.fuzz import HOSTILE, build, check, run

NOTES = 240  # of which 30% hostile: every kind several times over
BIG = 2**20  # one good note with a 1 MB body


@pytest.mark.parametrize("seed", [41])
def test_every_good_note_keeps_its_id_and_bytes_among_hostile_files(
    tmp_path: Path, seed: int
) -> None:
    vault = build(tmp_path / "vault", notes=NOTES, big_bytes=BIG, bigs=1, seed=seed)
    assert set(HOSTILE) <= set(vault.kinds) and min(vault.kinds.values()) >= 5
    assert max(len(data) for _rel, data in vault.good.values()) > BIG
    for command in (("list", "--limit", "1", "--json"), ("reindex",)):
        run(vault.root, *command, timeout=600)  # a crash or a hang fails here
        found = check(vault)
        assert found.lost == () and found.found == found.own_bytes == len(vault.good)
        assert found.bodies_lost == () and not found.outside_touched
    doctor = json.loads(run(vault.root, "doctor", "--json").stdout)
    assert doctor["broken"] and not doctor["copies"] and not doctor["unknown"]
    copies = [line for line in doctor["renewed"] if " copy " in line.split(":", 1)[0]]
    assert len(copies) == vault.kinds["copy"] and all(" kept the id " in c for c in copies)
