from __future__ import annotations

from typing import Any

import pytest

from solver import api, verify
from solver.model.plan import Plan
from tests import builders


def run_plan(*objects: Any, **options: Any) -> tuple[Plan, dict[str, Any]]:
    snap = builders.snapshot(*objects)
    plan = api.plan(snap, api.PlanOptions(**options))
    assert verify.verify(snap, plan) == []
    return plan, plan.to_dict()


@pytest.fixture
def solve_objects():
    return run_plan
