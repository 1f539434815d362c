import json
import os
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solver.core import plan as plan_module

# `HYPOTHESIS_PROFILE=thorough` runs the property tests ten times longer, `fast` (the fast tier,
# CONTRIBUTING.md) twelve times shorter.
# default: the same 300 examples every run (CI is reproducible); thorough explores at random
settings.register_profile("default", max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fast", max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=3000, deadline=None, derandomize=False, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Every plan the suite turns into JSON is checked against the published schema (docs/design.md).
_VALIDATOR = jsonschema.Draft202012Validator(
    json.loads((Path(__file__).resolve().parent.parent / "docs" / "plan.schema.json").read_text()))
PLANS_CHECKED = [0]


def schema_errors(plan: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '(plan)'}: {e.message}"
            for e in sorted(_VALIDATOR.iter_errors(plan), key=lambda e: list(map(str, e.absolute_path)))]


@pytest.fixture(autouse=True, scope="session")
def _every_plan_matches_the_schema():
    original = plan_module.Plan.to_dict

    def checked(self: plan_module.Plan) -> dict:
        out = original(self)
        errors = schema_errors(out)
        if errors:
            raise AssertionError(f"plan does not match docs/plan.schema.json: {errors}")
        PLANS_CHECKED[0] += 1
        return out

    plan_module.Plan.to_dict = checked  # type: ignore[method-assign]
    yield
    plan_module.Plan.to_dict = original  # type: ignore[method-assign]


# Markers by where a test lives, so the tree picks the tier (CONTRIBUTING.md): a new test file
# in one of these places is in its tier without a decorator.
TESTS = Path(__file__).resolve().parent
TIERS: list[tuple[str, tuple[str, ...]]] = [
    ("controlplane/", ("controlplane",)),  # the real kube-apiserver, controller-manager, scheduler
    ("adapter/", ("adapter",)),  # the adapter on the API server double
    ("grpc/test_fuzz_typed.py", ("service", "fuzz")),
    ("grpc/", ("service",)),  # real gRPC servers on loopback
    ("pipeline/test_property.py", ("property",)),  # Hypothesis against the naive model
    ("test_fuzz.py", ("fuzz",)),
    ("test_project.py", ("lint",)),  # mypy, ruff, import-linter, the lock
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        where = Path(str(item.fspath)).resolve().relative_to(TESTS).as_posix()
        for prefix, marks in TIERS:
            if where.startswith(prefix):
                for mark in marks:
                    item.add_marker(mark)
                break


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if PLANS_CHECKED[0]:
        terminalreporter.write_line(f"{PLANS_CHECKED[0]} plans checked against docs/plan.schema.json")
