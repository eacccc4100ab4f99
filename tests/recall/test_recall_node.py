"""A node to search that holds no notes is said to hold none, not answered "nothing relevant"."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from brain._brain import Brain
from brain._cli import _register, app
from brain._errors import InvalidInput

_register()


def test_a_node_named_wrong_is_an_error_naming_it(brain: Brain) -> None:
    note = brain.remember("We moved the launch to March", node="Knowledge/Work")
    assert [h.id for h in brain.recall("launch", node="Knowledge/Work")] == [note.id]
    assert [h.id for h in brain.recall("launch", node="Knowledge")] == [note.id]  # and below
    with pytest.raises(InvalidInput, match=r"node 'Knowledge/Wrok' holds no notes"):
        brain.recall("launch", node="Knowledge/Wrok")
    with pytest.raises(InvalidInput, match=r"scope 'Knowledge/Wrok' holds no notes"):
        brain.recall("launch", scope="Knowledge/Wrok")
    assert [h.id for h in brain.recall("launch", scope="Knowledge/Work")] == [note.id]


def test_a_node_of_private_notes_looks_empty_to_a_model(brain: Brain) -> None:
    diary = brain.remember("Felt low after the appointment", node="Journal")
    brain.set_field(diary.id, "visibility", "private")
    assert [h.id for h in brain.recall("appointment", node="Journal")] == [diary.id]  # the person
    model = brain.at(for_model=True)
    with pytest.raises(InvalidInput, match=r"node 'Journal' holds no notes") as private:
        model.recall("appointment", node="Journal")
    with pytest.raises(InvalidInput, match=r"node 'Nothing' holds no notes") as empty:
        model.recall("appointment", node="Nothing")
    # the same words for a node of private notes as for one that does not exist
    assert str(private.value).replace("Journal", "Nothing") == str(empty.value)


def test_the_cli_names_the_node_and_exits_with_an_error(cli: CliRunner) -> None:
    assert cli.invoke(app, ["remember", "We moved the launch to March"]).exit_code == 0
    out = cli.invoke(app, ["recall", "launch", "--node", "Knowlege"])
    assert out.exit_code == 2 and isinstance(out.exception, SystemExit)  # a usage error, told
    assert "node 'Knowlege' holds no notes" in out.output
    assert "nothing relevant" not in out.output


def test_an_empty_node_is_refused_not_read_as_the_whole_vault(cli: CliRunner) -> None:
    """`--node "$UNSET"` searched every node, while `--scope ""` was refused."""
    assert cli.invoke(app, ["remember", "We moved the launch to March"]).exit_code == 0
    for empty in ("", "  "):
        out = cli.invoke(app, ["recall", "launch", "--node", empty])
        assert out.exit_code == 2 and "node is empty" in out.output, out.output


def test_a_node_and_a_scope_that_do_not_overlap_are_refused(brain: Brain) -> None:
    """Before, they searched nothing and said "nothing relevant" of a vault that holds it."""
    note = brain.remember("We moved the launch to March", node="Knowledge/Work")
    brain.remember("Kayak trip in May", node="Journal")
    with pytest.raises(InvalidInput, match=r"node 'Knowledge' and scope 'Journal' do not overlap"):
        brain.recall("launch", node="Knowledge", scope="Journal")
    for node, scope in (("Knowledge", "Knowledge/Work"), ("Knowledge/Work", "Knowledge")):
        assert [h.id for h in brain.recall("launch", node=node, scope=scope)] == [note.id]


def test_a_model_naming_a_wrong_node_is_told_so(brain: Brain) -> None:
    from mcp import Client

    from tests.mcp.conftest import call, refused, run

    brain.remember("We moved the launch to March", node="Knowledge/Work")

    async def scenario(client: Client) -> None:
        found = await call(client, "recall", {"query": "launch", "node": "Knowledge/Work"})
        assert [h["title"] for h in found["hits"]] == ["We moved the launch to March"]
        said = await refused(client, "recall", {"query": "launch", "node": "Knowledge/Wrok"})
        assert "node 'Knowledge/Wrok' holds no notes" in said and "Traceback" not in said
        said = await refused(client, "recall", {"query": "launch", "node": ""})
        assert "node is empty" in said

    run(brain, scenario)


def test_a_node_copied_from_a_path_is_told_without_its_partition(
    brain: Brain, cli: CliRunner
) -> None:
    note = brain.remember("We moved the launch to March", node="Knowledge/Work")
    assert note.path.startswith("main/Knowledge/Work/")  # what a person sees and copies
    with pytest.raises(InvalidInput, match=r"without 'main/': 'Knowledge/Work'\)"):
        brain.recall("launch", node="main/Knowledge/Work")
    listed = cli.invoke(app, ["list", "--node", "main/Knowledge/Work"])
    assert listed.exit_code == 0  # a filter that finds nothing, said so with the node named
    assert "no notes under node 'main/Knowledge/Work'" in listed.output
    assert "not its path" in listed.output
