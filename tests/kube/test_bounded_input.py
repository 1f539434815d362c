"""No input makes a message or the memory it takes unbounded (issue 32, item 2): YAML aliases
may expand an input only a few times over (bytes, not only nodes), and every message is at
most 1 KB however large the value it quotes, with the object and field still named."""

from __future__ import annotations

import json
import re
from pathlib import Path

import grpc
import pytest

from solver import cli, reading
from solver.core.errors import MAX_MESSAGE, InputError, SnapshotInvalidError, clip
from solver.kube import loader
from solver.service import client, server


def _bomb(levels: int, width: int = 10, text: int = 2000) -> str:
    """A pod whose cost annotation is an alias of ``width``**``levels`` strings of ``text``
    bytes: 2.6 KB of YAML for 200 MB at 5 levels."""
    anchors = [f'  s0: &s0 "{"x" * text}"']
    anchors += [f"  s{i}: &s{i} [{', '.join([f'*s{i - 1}'] * width)}]" for i in range(1, levels + 1)]
    return "\n".join([
        "apiVersion: v1", "kind: List", "bomb:", *anchors, "items:",
        "- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: '4', pods: '110'}}}",
        "- apiVersion: v1", "  kind: Pod", "  metadata:", "    name: p", "    namespace: default",
        "    annotations:", f"      gangplace.io/preemption-cost: *s{levels}",
        "  spec: {containers: [{name: c}]}", ""])


def test_aliases_that_expand_past_a_few_times_the_input_are_refused(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    text = _bomb(5)
    with pytest.raises(SnapshotInvalidError, match=r"YAML aliases expand past \d+ bytes") as err:
        reading.from_bytes(text.encode())
    assert err.value.obj == "request"
    # 10**5 strings: far under the node limit; the byte budget is what catches them
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    assert cli.main(["solve", str(path), "-o", str(tmp_path / "plan.json")]) == 2
    assert len(capsys.readouterr().err.encode()) < MAX_MESSAGE + 40


@pytest.mark.parametrize("before", [1, 3])
def test_aliases_are_counted_in_every_document_not_the_first_only(before: int) -> None:
    # issue 50, item 7: the sizes were remembered by id(), and a document's nodes are freed when
    # the next is composed, so a later document's nodes took the ids (and tiny sizes) of earlier ones
    head = "".join(f"apiVersion: v1\nkind: Node\nmetadata: {{name: m{i}}}\n---\n" for i in range(before))
    with pytest.raises(SnapshotInvalidError, match=r"YAML aliases expand past \d+ bytes"):
        reading.from_bytes((head + _bomb(5)).encode())


def test_anchors_used_honestly_are_read() -> None:
    text = """apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, labels: &rack {topology.kubernetes.io/rack: r1}}
  status: {allocatable: &room {cpu: '4', pods: '110'}}
- apiVersion: v1
  kind: Node
  metadata: {name: n2, labels: *rack}
  status: {allocatable: *room}
"""
    assert [n.name for n in reading.from_bytes(text.encode()).nodes] == ["n1", "n2"]


def test_the_budget_is_a_few_times_the_input() -> None:
    assert loader.expansion_budget("x" * 1000) == loader.EXPANSION_FACTOR * 1000 + loader.EXPANSION_SLACK


def _huge_annotation(size: int) -> bytes:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "annotations": {
        "gangplace.io/preemption-cost": "9" * size}}, "spec": {"containers": [{"name": "c"}]}}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "pods": "110"}}}
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [node, pod]}).encode()


def test_a_huge_value_is_cut_in_the_message_and_the_field_still_named(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    body = _huge_annotation(5_000_000)
    with pytest.raises(SnapshotInvalidError) as err:
        reading.from_bytes(body)
    message = str(err.value)
    assert len(message.encode()) <= MAX_MESSAGE
    assert message.startswith("Pod/default/p: metadata.annotations[gangplace.io/preemption-cost]: must be a number")
    assert message.endswith("more bytes)")
    path = tmp_path / "huge.json"
    path.write_bytes(body)
    assert cli.main(["solve", str(path), "-o", str(tmp_path / "plan.json")]) == 2
    assert len(capsys.readouterr().err.encode()) <= MAX_MESSAGE + 20  # "gangplace: " and a newline


def test_over_grpc_the_refusal_is_small_and_names_the_field() -> None:
    running = server.start(server.ServerConfig(address="127.0.0.1:0", metrics_address=None))
    try:
        with client.PlacementClient(f"127.0.0.1:{running.port}") as c, pytest.raises(InputError) as err:
            c.solve(_huge_annotation(5_000_000))
    finally:
        running.stop(5)
    e = err.value
    assert isinstance(e, client.PlacementError) and e.code == grpc.StatusCode.INVALID_ARGUMENT
    assert len(e.details.encode()) <= MAX_MESSAGE + 64  # "kubernetes_objects: " before it
    assert (e.obj, e.field) == ("Pod/default/p", "metadata.annotations[gangplace.io/preemption-cost]")


def test_clip_cuts_on_a_character_boundary() -> None:
    assert clip("abc", 10) == "abc"
    cut = clip("é" * 2000, 100)
    assert len(cut.encode()) <= 100 and cut.startswith("é" * 30) and cut.endswith(" more bytes)")


@pytest.mark.parametrize("value", ["9" * 1_000_000, "1" + "0" * 200 + "Ki"])
def test_a_quantity_of_a_million_digits_is_out_of_range_not_an_internal_error(
        value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the fuzz (issue 32, item 7): a million-digit memory overflowed Decimal's
    context and ended in "internal error"."""
    snap = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "4", "memory": value, "pods": "110"}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}]}
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap))
    assert cli.main(["solve", str(path), "-o", str(tmp_path / "plan.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gangplace: Node/n1: status.allocatable.memory: unparsable quantity")
    assert len(err.encode()) <= MAX_MESSAGE + 20


def test_a_yaml_error_is_one_line_with_its_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the fuzz: PyYAML's error spans four lines (context, mark, problem, mark); the
    CLI's refusal is one."""
    path = tmp_path / "snap.yaml"
    path.write_text('{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "x": "\\ud8"}]}\n')
    assert cli.main(["solve", str(path), "-o", str(tmp_path / "plan.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert re.search(r"snap\.yaml: not valid YAML: while parsing a quoted scalar: [^\n]+ \(line 1, column \d+\)$",
                     err.strip()), err
