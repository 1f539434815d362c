"""The plan's JSON Schema (docs/plan.schema.json): itself valid, met by the examples' plans, and
strict enough to refuse a plan without its version or with a field of the wrong type. Every
other plan the suite writes is checked by tests/conftest.py."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from solver import api, reading
from tests.conftest import schema_errors

ROOT = Path(__file__).resolve().parent.parent


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(json.loads((ROOT / "docs" / "plan.schema.json").read_text()))


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_example_plan_matches_and_carries_its_version(example: Path) -> None:
    plan = api.plan(reading.load(example)).to_dict()
    assert (plan["apiVersion"], plan["kind"]) == ("gangplace.io/v1alpha1", "Plan")
    assert schema_errors(plan) == []


def test_the_schema_refuses_what_it_should() -> None:
    plan = api.plan(reading.load(ROOT / "examples" / "gang-preemption.yaml")).to_dict()
    unversioned = {k: v for k, v in plan.items() if k != "apiVersion"}
    assert schema_errors(unversioned) == ["(plan): 'apiVersion' is a required property"]
    wrong = json.loads(json.dumps(plan))
    wrong["objective"]["gap"] = 2
    wrong["evictions"][0]["pod"] = "no-namespace"
    wrong["surprise"] = 1
    assert schema_errors(wrong) == [
        "(plan): Additional properties are not allowed ('surprise' was unexpected)",
        "evictions/0/pod: 'no-namespace' does not match '^[^/]+/[^/]+$'",
        "objective/gap: 2 is greater than the maximum of 1",
    ]
