"""The cold tier on disk: zstd frames under `cold/`, compressed with dictionaries trained here.

A cold note lives at `cold/<its hot path>.zst` and holds the exact bytes of the Markdown file.
Every frame records the id of the dictionary it was made with (0: none), and every dictionary
a frame uses is kept in `cold/dictionaries/`, so a retrain never makes an old frame unreadable
and another clone can read the files it pulls. A dictionary goes only after every frame made
with it was made again with another (upkeep/dictionaries.py: one that a forgotten note
trained).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from brain._errors import ColdFileError, InvalidInput
from brain._model import COLD_TIER
from brain._vault.files import atomic_write, remove_file

SUFFIX = ".zst"
DICT_FOLDER = f"{COLD_TIER}/dictionaries"
DICT_SIZE = 16_384
MIN_SAMPLES = 10
LEVEL = 3
# zstd reserves dictionary ids below 32768 and from 2**31 up.
_FIRST_ID, _LAST_ID = 32_768, 2**31 - 1
_DICT_NAME = re.compile(r"^(\d{4,})-(\d+)\.zdict$")


def is_cold(rel: str) -> bool:
    return rel.startswith(COLD_TIER + "/") and rel.endswith(".md" + SUFFIX)


def cold_path(hot: str) -> str:
    """`main/A/b.md` → `cold/main/A/b.md.zst` (local-only notes keep their `local-only/` root)."""
    return f"{COLD_TIER}/{hot}{SUFFIX}"


def hot_path(cold: str) -> str:
    return cold[len(COLD_TIER) + 1 : -len(SUFFIX)]


class Dictionaries:
    """The trained dictionaries of one vault, by id; files are named `<version>-<id>.zdict`."""

    def __init__(self, root: Path) -> None:
        self.folder = root / DICT_FOLDER
        self._loaded: dict[int, Any] = {}

    def listing(self) -> list[tuple[int, int, Path]]:
        """(version, id, file) of every dictionary, oldest first."""
        if not self.folder.is_dir():
            return []
        found = []
        for path in self.folder.iterdir():
            match = _DICT_NAME.match(path.name)
            if match:
                found.append((int(match[1]), int(match[2]), path))
        return sorted(found)

    def newest(self) -> int:
        """The id new frames are made with; 0 when none has been trained yet."""
        listing = self.listing()
        return listing[-1][1] if listing else 0

    def get(self, dict_id: int) -> Any:
        import zstandard

        if dict_id not in self._loaded:
            path = next((p for _v, i, p in self.listing() if i == dict_id), None)
            if path is None:
                raise ColdFileError(
                    f"dictionary {dict_id} is not in {DICT_FOLDER}/",
                    "pull it from another clone; a dictionary is deleted only once no frame "
                    "uses it",
                )
            self._loaded[dict_id] = zstandard.ZstdCompressionDict(path.read_bytes())
        return self._loaded[dict_id]

    def train(self, samples: Sequence[bytes]) -> int:
        """Train a new dictionary on these note texts and keep it; returns its id."""
        import zstandard

        if len(samples) < MIN_SAMPLES:
            raise InvalidInput(
                f"only {len(samples)} notes to train a dictionary on; at least {MIN_SAMPLES} needed"
            )
        digest = hashlib.sha256(b"\0".join(sorted(samples))).digest()
        dict_id = _FIRST_ID + int.from_bytes(digest[:4], "big") % (_LAST_ID - _FIRST_ID)
        total = sum(len(s) for s in samples)
        size = max(1024, min(DICT_SIZE, total // 4))
        try:
            trained = zstandard.train_dictionary(size, list(samples), dict_id=dict_id, level=LEVEL)
        except zstandard.ZstdError as exc:
            raise InvalidInput(f"these notes cannot train a dictionary: {exc}") from None
        listing = self.listing()
        if any(i == dict_id for _v, i, _p in listing):
            return dict_id  # the same notes train the same dictionary: keep the one we have
        version = listing[-1][0] + 1 if listing else 1
        atomic_write(self.folder / f"{version:04d}-{dict_id}.zdict", trained.as_bytes())
        return dict_id

    def remove(self, dict_id: int) -> None:
        """Delete a dictionary no frame uses any more."""
        for _v, i, path in self.listing():
            if i == dict_id:
                remove_file(path)
        self._loaded.pop(dict_id, None)


class ColdCodec:
    """Compress with the newest dictionary; decompress with whichever one a frame names."""

    def __init__(self, root: Path) -> None:
        self.dictionaries = Dictionaries(root)

    def compress(self, data: bytes, dict_id: int | None = None) -> bytes:
        """A frame made with this dictionary (None: the newest; 0: none)."""
        import zstandard

        use = self.dictionaries.newest() if dict_id is None else dict_id
        options: dict[str, Any] = {"level": LEVEL, "write_checksum": True}
        if use:
            options["dict_data"] = self.dictionaries.get(use)
        return bytes(zstandard.ZstdCompressor(**options).compress(data))

    def decompress(self, data: bytes, rel: str) -> bytes:
        import zstandard

        try:
            dict_id = zstandard.get_frame_parameters(data).dict_id
        except zstandard.ZstdError as exc:
            raise ColdFileError(f"{rel}: not a zstd frame ({exc})") from None
        try:
            options = {"dict_data": self.dictionaries.get(dict_id)} if dict_id else {}
        except ColdFileError as exc:
            raise ColdFileError(f"{rel}: {exc.message}", exc.hint) from None
        try:
            return bytes(zstandard.ZstdDecompressor(**options).decompress(data))
        except zstandard.ZstdError as exc:
            raise ColdFileError(f"{rel}: damaged cold file ({exc})") from None

    @staticmethod
    def frame_dictionary(data: bytes) -> int | None:
        """The id of the dictionary a frame was made with (0: none); None: not a zstd frame."""
        import zstandard

        try:
            return int(zstandard.get_frame_parameters(data).dict_id)
        except zstandard.ZstdError:
            return None
