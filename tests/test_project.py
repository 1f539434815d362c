"""Project-level checks: README commands, CI script, layer contracts, shipped examples."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from solver import api, reading, verify

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


def _tool(name: str) -> str:
    """A console script installed beside this interpreter (the test extra pins them)."""
    return str(Path(sys.executable).with_name(name))


def test_layer_contracts_hold() -> None:
    result = subprocess.run([_tool("lint-imports")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# (file, the import planted at its top, the contract it must break): the contracts are not
# vacuous, each is seen to fail once its fault is put back, on a copy of the tree
PLANTED = [
    ("solver/verify/dra.py", "from solver.filters import selectors", "The verifier is a second reading"),
    ("solver/verify/rules.py", "from solver.plan import decode", "The verifier is a second reading"),
    ("solver/kube/pods.py", "from solver.problem import workloads", "kube reads objects and knows nothing"),
    ("solver/core/snapshot.py", "from solver.filters import selectors", "The pipeline runs one way"),
    ("solver/problem/build.py", "from solver.baseline import greedy", "The pipeline runs one way"),
    ("solver/baseline/greedy.py", "import yaml", "The steps do no I/O"),
    ("solver/core/plan.py", "import numpy", "core is the standard library only"),
    ("solver/model/constraints/preemption.py", "from solver.model.constraints import interpod",
     "The constraint families are independent"),
]


@pytest.mark.parametrize("path, planted, contract", PLANTED, ids=[f"{p[0]}:{p[1]}" for p in PLANTED])
def test_a_planted_import_breaks_its_contract(tmp_path: Path, path: str, planted: str, contract: str) -> None:
    for part in ("solver", "adapter"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    target = tmp_path / path
    text = target.read_text()
    head = text.index("from __future__ import annotations\n") + len("from __future__ import annotations\n")
    target.write_text(text[:head] + planted + "  # noqa\n" + text[head:])
    result = subprocess.run([_tool("lint-imports")], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert result.returncode != 0, result.stdout
    broken = [line for line in result.stdout.splitlines() if " BROKEN" in line]
    assert any(line.startswith(contract) for line in broken), result.stdout


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_shipped_example_is_proven_optimal(path: Path) -> None:
    snap = reading.load(path)
    plan = api.plan(snap, api.PlanOptions(time_limit=60))
    assert plan.status == "OPTIMAL"
    assert plan.objective.gap == 0.0
    assert verify.verify(snap.facts, snap, plan) == []
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


def _locked() -> dict[str, tuple[str, str]]:
    """requirements.lock as {name: (version, marker)}."""
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line and not line.startswith((" ", "#")):
            pin, _, marker = line.partition(";")
            name, _, version = pin.strip().partition("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = (version, marker.strip())
    return pins


def test_the_lock_pins_every_dependency_within_pyproject_and_is_what_is_installed() -> None:
    """The README, .ci/run and the Dockerfile install with -c requirements.lock: every
    requirement of pyproject.toml (and of each extra) has a pin its specifier admits, and the
    environment running this test holds exactly the pinned versions it installed."""
    import tomllib
    from importlib import metadata

    from packaging.markers import Marker
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    wanted += [Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]
    pins = _locked()
    for req in wanted:
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        assert name in pins, f"{req}: not in requirements.lock (run scripts/lock.sh)"
        assert req.specifier.contains(pins[name][0], prereleases=True), f"{req}: locked at {pins[name][0]}"
    drift = []
    for name, (version, marker) in pins.items():
        if marker and not Marker(marker).evaluate():
            continue
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # an extra this environment did not install
        if installed != version:
            drift.append(f"{name} {installed} (locked {version})")
    assert drift == [], "installed without -c requirements.lock? " + ", ".join(drift)
    for path in (".ci/run", "Dockerfile"):
        assert "-c requirements.lock" in (ROOT / path).read_text(), path


def test_mypy_strict_is_clean() -> None:
    """pyproject.toml [tool.mypy]: strict over solver and adapter (generated code excepted)."""
    result = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr


def test_ruff_is_clean() -> None:
    result = subprocess.run([_tool("ruff"), "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr


def test_every_type_ignore_names_its_code_and_a_reason() -> None:
    bare = []
    for path in sorted([*(ROOT / "solver").rglob("*.py"), *(ROOT / "adapter").rglob("*.py")]):
        if "gen" in path.relative_to(ROOT).parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "type: ignore" in line and not re.search(r"# type: ignore\[[\w\-, ]+\]\s+#\s*\S", line):
                bare.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert bare == []


def test_no_module_imports_a_private_name_of_another() -> None:
    """A name a sibling imports is public: ``from x import _y`` is how a private helper leaks
    into another room (issue 48 counted 87 such names)."""
    import ast

    leaks = []
    for path in sorted((ROOT / "solver").rglob("*.py")) + sorted((ROOT / "adapter").rglob("*.py")):
        if "gen" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("solver", "adapter"):
                leaks += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert leaks == []
