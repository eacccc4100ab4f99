"""Through the SDK's own client: the server's version, and argument errors as one plain line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from pydantic import ValidationError

from brain._brain import Brain
from brain._mcp_server import build_server, build_tools
from brain._toolargs import plain
from brain._version import version
from brain.testing import tree_digest

# (tool, arguments, the one line a model gets back)
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("recall", {"query": "x", "k": 99}, "k must be between 1 and 20, not 99"),
    ("recall", {"query": "x", "k": 0}, "k must be between 1 and 20, not 0"),
    ("recall", {"query": "x", "k": "many"}, "k must be a whole number, not 'many'"),
    # A JSON schema's integer is a number, never true, "3" or 3.5 (pydantic's lax mode took
    # true as 1 and "3" as 3): the model is told what it sent.
    ("recall", {"query": "x", "k": True}, "k must be a whole number, not true"),
    ("recall", {"query": "x", "k": "3"}, "k must be a whole number, not '3'"),
    ("recall", {"query": "x", "k": 3.5}, "k must be a whole number, not 3.5"),
    ("remember", {"text": "x", "tags": "t"}, "tags must be a list, not 't'"),
    ("recall", {}, "query is required"),
    ("recall", {"query": ""}, "query must not be empty"),
    ("recall", {"query": 5}, "query must be text, not 5"),
    (
        "remember",
        {"text": "x", "visibility": "private"},
        "unknown argument 'visibility'; allowed: text, title, node, tags, kind",
    ),
    (
        "remember",
        {"text": "x", "kind": "weird"},
        "kind must be titled, singleton, dated or thread, not 'weird'",
    ),
    ("remember", {"text": "x", "tags": ["t"] * 21}, "tags takes at most 20 items (got 21)"),
    (
        "remember",
        {"text": "x", "tags": ["t" * 61]},
        "tags[0] must be at most 60 characters (got 61)",
    ),
    ("list_memories", {"limit": 51}, "limit must be between 1 and 50, not 51"),
    ("forget", {"note_id": "x" * 41}, "note_id must be at most 40 characters (got 41)"),
    ("remember", {}, "text is required"),
]


def test_server_info_carries_the_package_version(brain: Brain) -> None:
    seen: dict[str, str] = {}

    async def main() -> None:
        async with Client(build_server(brain)) as client:
            info = client.server_info
            seen.update(name=info.name, version=info.version)

    anyio.run(main)
    assert seen == {"name": "brain", "version": version()} and version() not in ("", "unknown")


def test_argument_errors_are_one_plain_line(brain: Brain, vault: Path) -> None:
    before = tree_digest(vault)
    got: list[tuple[str, bool, str]] = []

    async def main() -> None:
        async with Client(build_server(brain)) as client:
            for name, args, _ in CASES:
                result = await client.call_tool(name, args)
                text = result.content[0].text  # type: ignore[union-attr]
                got.append((name, result.is_error, text))

    anyio.run(main)
    for (name, _args, want), (_n, is_error, text) in zip(CASES, got, strict=True):
        assert is_error, name
        assert text == want
        assert "\n" not in text and "pydantic" not in text and "http" not in text
    assert tree_digest(vault) == before


def test_a_core_error_still_carries_the_core_message(brain: Brain) -> None:
    texts: list[str] = []

    async def main() -> None:
        async with Client(build_server(brain)) as client:
            result = await client.call_tool("expand", {"note_id": "01JE2Z3K4M5N6P7Q8R9S0T1V2W"})
            assert result.is_error
            texts.append(result.content[0].text)  # type: ignore[union-attr]

    anyio.run(main)
    assert "01JE2Z3K4M5N6P7Q8R9S0T1V2W" in texts[0] and "validation" not in texts[0]


def test_a_number_past_what_json_holds_is_said_as_a_wrong_number(brain: Brain) -> None:
    # A host's JSON may carry 1e400 or NaN; pydantic calls them "not finite", its own words.
    recall = next(t for t in build_tools(brain) if t.name == "recall")
    said = []
    for number in ("1e400", "NaN"):
        with pytest.raises(ValidationError) as refused:
            recall.fn_metadata.arg_model.model_validate_json(f'{{"query": "x", "k": {number}}}')
        said.append(plain(refused.value, recall.parameters))
    assert said == ["k must be a whole number, not inf", "k must be a whole number, not nan"]
