from __future__ import annotations

from typing import Any

import pytest

from solver import api, verify
from solver.core.plan import Plan
from tests import builders


def run_plan(*objects: Any, **options: Any) -> tuple[Plan, dict[str, Any]]:
    snap = builders.snapshot(*objects)
    opts = api.PlanOptions(**options)
    plan = api.plan(snap, opts)
    assert verify.verify(snap.facts, snap, plan, strict_pdbs=opts.pdb_policy == "strict", gates=opts.gates) == []
    return plan, plan.to_dict()


@pytest.fixture
def solve_objects():
    return run_plan
