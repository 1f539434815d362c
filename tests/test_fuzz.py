"""Fuzz: the shipped examples, mutated as a hostile or careless user would, through
``gangplace solve``. Every input ends in exit 0 with a verified plan (the pipeline verifies
each plan; a failure would be exit 1) or exit 2 with one message, never a traceback or
another exit code.

Mutations: a value anywhere replaced by one of the wrong type or out of range (numbers
beyond int64, NaN, lone surrogates, deep nesting, strings for maps and maps for lists), a
key dropped, a list entry duplicated. Derandomized in CI (the default profile);
``FUZZ_EXAMPLES=5000`` runs more (the fuzz's own knob, so the property tests keep theirs).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from solver import cli, loader

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = {p.name: loader.read_documents(p) for p in sorted((ROOT / "examples").glob("*.yaml"))}
HOSTILE: list[Any] = [
    None, -1, 0, 1, 2**31, 2**63, 2**70, -(2**70), 1e60, 1e300, float("nan"), float("inf"), True, "", "x",
    "\ud800", "1e60", "-5m", "9223372036854775808", [], [1, "a"], {}, {"a": {"b": []}}, [[[[[]]]]],
    {"matchExpressions": "x"}, {"cel": {"expression": "(" * 70 + "true" + ")" * 70}},
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append(prefix + (k,))
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append(prefix + (i,))
            out.extend(_paths(v, prefix + (i,)))
    return out


def _mutate(draw: Any, docs: list[Any]) -> str:
    paths = _paths(docs)
    path = draw(st.sampled_from(paths))
    parent = docs
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    how = draw(st.integers(0, 9))
    if how == 0 and isinstance(parent, dict):
        del parent[last]
        return "drop"
    if how == 1 and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
        return "duplicate"
    if how == 2:
        parent[last] = [parent[last]]
        return "wrap in a list"
    parent[last] = copy.deepcopy(draw(st.sampled_from(HOSTILE)))
    return "hostile value"


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "150")),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_example_ends_in_a_plan_or_one_message(data: Any, tmp_path_factory: pytest.TempPathFactory,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    name = data.draw(st.sampled_from(sorted(EXAMPLES)))
    docs = copy.deepcopy(EXAMPLES[name])
    for _ in range(data.draw(st.integers(1, 3))):
        event(f"mutation: {_mutate(data.draw, docs)}")
    folder = tmp_path_factory.mktemp("fuzz")
    snap, out = folder / "snap.json", folder / "plan.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}), encoding="utf-8")
    capsys.readouterr()
    rc = cli.main(["solve", str(snap), "-o", str(out), "--time-limit", "5"])
    err = capsys.readouterr().err
    event(f"exit {rc}")
    assert rc in (0, 2), err
    if rc == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("gangplace: ") and "Traceback" not in err
    else:
        plan = json.loads(out.read_text())
        assert plan["status"] in ("OPTIMAL", "FEASIBLE")
