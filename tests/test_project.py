"""Project-level checks: README commands, CI script, layer contracts, shipped examples."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from solver import api, loader, verify

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```\n(.+?)\n```", text)[:2]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    _, test_command = _readme_commands()
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == test_command


def test_readme_first_command_solves_a_shipped_example() -> None:
    install_and_run, _ = _readme_commands()
    run = install_and_run.split("&&")[-1].split()
    assert run[0] == ".venv/bin/gangplace" and run[1] == "solve"
    assert (ROOT / run[2]).is_file()


def test_layer_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_shipped_example_is_proven_optimal(path: Path) -> None:
    snap = loader.load_snapshot(path)
    plan = api.plan(snap, api.PlanOptions(time_limit=60))
    assert plan.status == "OPTIMAL"
    assert plan.objective.gap == 0.0
    assert verify.verify(snap, plan) == []
    assert plan.objective.satisfied_workloads == len(plan.workloads)


def test_cli_writes_the_design_plan_shape(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    result = subprocess.run(
        [sys.executable, "-m", "solver.cli", "solve", str(EXAMPLES[0]), "-o", str(out)],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    plan = json.loads(out.read_text())
    assert set(plan) == {"apiVersion", "kind", "status", "workloads", "bindings", "evictions", "deviceAllocations",
                         "heldPods", "warnings", "objective", "stats"}
    assert {"satisfiedWorkloads", "placedPods", "pdbViolations", "preemptionCost", "evictedPods",
            "preemptionCostBound", "gap"} <= set(plan["objective"])
    assert {"buildSeconds", "solveSeconds", "variables", "constraints", "workers", "seed"} <= set(plan["stats"])
    assert "status OPTIMAL" in result.stderr
