"""The gangplace command as users expect it (issue 18): - for standard input and output,
--version, arguments checked before any work (exit 2), an empty or plan-less input named
as such, and a workload named by a child group pointed at its root."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

from solver import cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "gang-preemption.yaml"


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def test_solve_reads_standard_input_and_writes_standard_output(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["solve", str(EXAMPLE)]) == 0
    from_file = json.loads(capsys.readouterr().out)
    monkeypatch.setattr(sys, "stdin", _Stdin(EXAMPLE.read_bytes()))
    assert cli.main(["solve", "-", "-o", "-"]) == 0
    out = capsys.readouterr()
    from_stdin = json.loads(out.out)
    assert not Path("-").exists()  # "-" is standard output, not a file named -
    for plan in (from_file, from_stdin):
        plan.pop("stats")
    assert from_stdin == from_file
    assert "status OPTIMAL" in out.err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("gangplace 0.1.0 (ortools 9.15") and "python 3." in out


def test_version_is_answered_without_loading_the_solver() -> None:
    # issue 50, item 13: `gangplace --version` took 4.8 s importing OR-Tools, gRPC and the client
    import subprocess

    done = subprocess.run([sys.executable, "-c", "import sys; from solver.entry import main; main(['--version']); "
                           "print(sorted(m for m in ('solver.cli', 'ortools', 'grpc', 'kubernetes') if m in sys.modules))"],
                          capture_output=True, text=True, check=True)
    version, loaded = done.stdout.splitlines()
    assert version.startswith("gangplace 0.1.0 (ortools 9.15") and loaded == "[]"


@pytest.mark.parametrize("argv, what", [
    (["bench", "--suite", "mini", "--repeat", "0"], "argument --repeat: 0 is not a whole number >= 1"),
    (["generate", "--nodes", "0", "-o", "x.json"], "argument --nodes: 0 is not a whole number >= 1"),
    (["generate", "--utilisation", "1.5", "-o", "x.json"], "argument --utilisation: 1.5 is not a fraction"),
    (["generate", "--pods-per-node", "-1", "-o", "x.json"],
     "argument --pods-per-node: -1 is not a whole number >= 0"),
    (["adapter", "--api-server", "http://127.0.0.1:1", "--in-process", "--metrics-port", "70000"],
     "argument --metrics-port: 70000 is not a port (0-65535)"),
])
def test_bad_arguments_exit_2_before_any_work(argv: list[str], what: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    # the solve options are PlanOptions' to check: tests/kube/test_bad_input.py
    with pytest.raises(SystemExit) as done:
        cli.main([str(tmp_path / a) if a == "x.json" else a for a in argv])
    assert done.value.code == 2
    assert what in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_every_option_has_help() -> None:
    parser = cli._parser()
    subs = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[attr-defined]
    missing = [f"{name} {'/'.join(a.option_strings) or a.dest}" for name, sub in subs.items()
               for a in sub._actions if a.help is None and a.dest != "help"]
    assert missing == []


@pytest.mark.parametrize("content, held", [
    ("", ""),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: default}\n", " (it holds 1 Service)"),
])
def test_an_input_without_nodes_or_pods_is_an_error_naming_it(content: str, held: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(content)
    assert cli.main(["solve", str(path)]) == 2
    assert capsys.readouterr().err.strip() == f"gangplace: {path}: no Node and no Pod to plan{held}"


def test_a_directory_is_one_case_per_file_so_solve_takes_one_of_them(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["solve", str(ROOT / "examples")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"gangplace: {ROOT / 'examples'}: a directory is one case per file and this one holds 3 "
        "(composite-zone-rack.yaml, dra-gpus.yaml, gang-preemption.yaml): solve one file, "
        "or give the directory to replan or bench")
    assert cli.main(["solve", str(tmp_path)]) == 2
    assert "a directory with no .json, .yaml or .yml file" in capsys.readouterr().err
    (tmp_path / "only.yaml").write_text(EXAMPLE.read_text())
    assert cli.main(["solve", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "OPTIMAL"


def test_a_child_group_named_as_the_workload_points_at_its_root(capsys: pytest.CaptureFixture[str]) -> None:
    example = ROOT / "examples" / "composite-zone-rack.yaml"
    assert cli.main(["solve", str(example), "--workload", "ml/llm-stage-0"]) == 2
    assert capsys.readouterr().err.strip() == (
        "gangplace: no pending workload 'ml/llm-stage-0' in the snapshot: it is a group under 'CompositePodGroup/ml/llm'; "
        "a workload is named by its root")


def _plan(evictions: int) -> dict[str, object]:
    return {
        "status": "OPTIMAL",
        "objective": {"satisfiedWorkloads": 1, "placedPods": 4, "evictedPods": evictions, "preemptionCost": 1.0,
                      "preemptionCostBound": 1.0, "gap": 0.0, "pdbViolations": 0, "gapTier": "",
                      "satisfiedBound": 1, "placedBound": 4, "pdbViolationsBound": 0, "evictedPodsBound": evictions,
                      "firstAvailable": 0, "firstAvailableBound": 0},
        "workloads": [{"kind": "PodGroup", "name": "ns/g", "priority": 5, "satisfied": True, "groups": [
            {"kind": "PodGroup", "name": "ns/g", "placedPods": 4, "runningPods": 0, "minCount": 4, "domain": {}}]}],
        "evictions": [{"pod": f"ns/v{i}", "node": f"n{i % 3}", "cost": 1} for i in range(evictions)],
        "deviceAllocations": [{"pod": "ns/g-0", "claim": "c", "request": "r",
                               "devices": [{"driver": "d.example.com", "pool": "p", "device": f"x{i}"}
                                           for i in range(2)]}],
        "stats": {"variables": 1, "constraints": 1, "buildSeconds": 0, "solveSeconds": 0, "baselineSeconds": 0},
    }


def test_the_summary_labels_min_count_counts_many_evictions_per_node_and_sums_devices() -> None:
    out = io.StringIO()
    cli.summary(_plan(20), out)
    lines = out.getvalue().splitlines()
    assert "    PodGroup ns/g: +4 placed, 0 running, minCount 4" in lines
    assert "  evict 20 pods on 3 nodes (most: n0 7, n1 7, n2 6; every one in the plan's evictions)" in lines
    assert "  allocate 2 devices (d.example.com) to 1 claim requests" in lines
    few = io.StringIO()
    cli.summary(_plan(2), few)
    assert [line for line in few.getvalue().splitlines() if line.startswith("  evict")] == [
        "  evict ns/v0 on n0 (cost 1)", "  evict ns/v1 on n1 (cost 1)"]


def test_progress_goes_to_stderr_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["solve", str(EXAMPLE), "--progress", "--no-decompose"]) == 0
    err = capsys.readouterr().err.splitlines()
    stages = [line.split()[1] for line in err if line.startswith("  ") and "s " in line and "(bound" in line]
    assert stages[0] == "workloads+pods:" and stages[-1] == "preemptionCost+evictedPods:"
    assert cli.main(["solve", str(EXAMPLE)]) == 0  # stderr is no terminal here: no progress
    assert not any("(bound" in line for line in capsys.readouterr().err.splitlines())


def test_scheduler_name_selects_pods_as_the_adapter_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.builders import node, ours, pod, pod_group

    objs = [node("n0").cpu_m(4000).build(),
            ours(pod("mine").cpu_m(1000)), pod("theirs").cpu_m(1000).build(),
            pod_group("g", 3).priority(0).build(), ours(pod("g-0").group("g").cpu_m(500))]  # 1 of 3: waits
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    assert cli.main(["solve", str(path)]) == 0
    every = json.loads(capsys.readouterr().out)
    assert sorted(w["name"] for w in every["workloads"]) == ["default/g", "default/mine", "default/theirs"]
    assert cli.main(["solve", str(path), "--scheduler-name", "gangplace"]) == 0
    out = capsys.readouterr()
    assert [w["name"] for w in json.loads(out.out)["workloads"]] == ["default/mine"]
    assert "gangplace: default/g waits: fewer pods observed than its gang needs" in out.err


def test_a_command_whose_extra_is_missing_says_which_to_install(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    real = metadata.entry_points

    class Missing:
        name = "adapter"

        def load(self) -> None:
            raise ModuleNotFoundError("No module named 'kubernetes'")

    def entry_points(*, group: str) -> object:
        return [Missing()] if group == "gangplace.commands" else real(group=group)

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    assert cli.main(["adapter", "--in-process"]) == 2
    assert capsys.readouterr().err.strip() == (
        "gangplace: adapter needs its extra: pip install 'gangplace[adapter]' (No module named 'kubernetes')")


def test_pdb_policy_is_one_option_on_solve_and_replan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The gang needs four victims and the batch budget allows one: strict (the default) leaves
    it pending and names the budget; soft breaks the budget, as kube-scheduler's preemption."""
    guarded = tmp_path / "guarded.yaml"
    guarded.write_text(EXAMPLE.read_text().replace("maxUnavailable: 2", "maxUnavailable: 1")
                       .replace("disruptionsAllowed: 2", "disruptionsAllowed: 1"))
    plans = {}
    for policy in ("strict", "soft"):
        argv = ["solve", str(guarded)] + (["--pdb-policy", policy] if policy == "soft" else [])
        assert cli.main(argv) == 0
        plans[policy] = json.loads(capsys.readouterr().out)
        assert plans[policy]["stats"]["pdbPolicy"] == policy
    train = {p: next(w for w in plans[p]["workloads"] if w["name"] == "default/train") for p in plans}
    assert not train["strict"]["satisfied"] and plans["strict"]["evictions"] == []
    assert "PodDisruptionBudget default/batch (1 allowed)" in train["strict"]["reason"]
    assert train["soft"]["satisfied"] and plans["soft"]["objective"]["pdbViolations"] == 1
    reports = {}
    for policy in ("strict", "soft"):
        assert cli.main(["replan", str(guarded), "--pdb-policy", policy, "--out", str(tmp_path / policy)]) == 0
        reports[policy] = json.loads((tmp_path / policy / "guarded.json").read_text())
    assert reports["strict"]["admitted"] == [] and reports["strict"]["evictions"] == []
    assert reports["soft"]["admitted"] == ["default/train"] and len(reports["soft"]["evictions"]) == 4
    with pytest.raises(SystemExit) as exited:
        cli.main(["solve", str(guarded), "--pdb-policy", "lenient"])
    assert exited.value.code == 2
    assert "--pdb-policy" in capsys.readouterr().err


def _no_work(*_args: object, **_kwargs: object) -> object:
    raise AssertionError("work started before the outputs were checked")


@pytest.mark.parametrize("argv, flag, target, why", [
    (["solve", str(EXAMPLE), "-o", "{missing}/plan.json"], "-o", "{missing}/plan.json", "no such directory"),
    (["solve", str(EXAMPLE), "--output", "{file}/plan.json"], "--output", "{file}/plan.json",
     "{file} is not a directory"),
    (["solve", str(EXAMPLE), "--explain", "default/train", "-o", "{dir}"], "-o", "{dir}", "is a directory"),
    (["bench", "--suite", "mini", "--out", "{missing}/r.jsonl"], "--out", "{missing}/r.jsonl", "no such directory"),
    (["bench", "--suite", "mini", "--plot", "{missing}/b.png"], "--plot", "{missing}/b.png", "no such directory"),
    (["bench", "--fgd", "w", "--trace", "t", "--out", "{missing}/f.jsonl"], "--out", "{missing}/f.jsonl",
     "no such directory"),
    (["replan", str(EXAMPLE), "--out", "{file}/reports"], "--out", "{file}/reports",
     "cannot be created: {file} is not a directory"),
    (["replan", str(EXAMPLE), "--out", "{file}"], "--out", "{file}", "not a directory"),
    (["generate", "--nodes", "16", "-o", "{missing}/s.json"], "-o", "{missing}/s.json", "no such directory"),
    (["generate", "--suite", "mini", "-o", "{file}"], "-o", "{file}", "not a directory"),
])
def test_every_output_is_checked_before_any_work(argv: list[str], flag: str, target: str, why: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A plan is never computed and then lost: an output that cannot be written exits 2 at once,
    in one line naming the flag (as spelled) and the path."""
    from solver.bench import fgd, generate, runner

    for module, name in ((cli.api, "plan"), (cli.api, "explain"), (cli.reading, "load"),
                         (runner, "run"), (fgd, "load_nodes"), (generate, "generate"), (cli, "_write_list")):
        monkeypatch.setattr(module, name, _no_work)
    (tmp_path / "file").write_text("")
    (tmp_path / "dir").mkdir()
    paths = {"missing": str(tmp_path / "nonexistent" / "dir"), "file": str(tmp_path / "file"),
             "dir": str(tmp_path / "dir")}
    assert cli.main([a.format(**paths) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err == f"gangplace: {flag} {target.format(**paths)}: {why.format(**paths)}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "file"]  # nothing was created


def test_an_output_directory_that_is_not_writable_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import os

    real = os.access
    locked = tmp_path / "locked"
    locked.mkdir()
    # as root every directory is writable: os.access is what the check asks, so it says no here
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == locked else real(p, mode))
    monkeypatch.setattr(cli.api, "plan", _no_work)
    assert cli.main(["solve", str(EXAMPLE), "-o", str(locked / "plan.json")]) == 2
    assert capsys.readouterr().err == f"gangplace: -o {locked / 'plan.json'}: directory not writable\n"
    assert cli.main(["replan", str(EXAMPLE), "--out", str(locked / "a" / "b")]) == 2
    assert capsys.readouterr().err == f"gangplace: --out {locked / 'a' / 'b'}: cannot be created: {locked} is not writable\n"


def test_writable_outputs_pass_and_a_missing_replan_directory_is_made(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["solve", str(EXAMPLE), "-o", str(tmp_path / "plan.json")]) == 0
    assert json.loads((tmp_path / "plan.json").read_text())["status"] == "OPTIMAL"
    assert cli.main(["replan", str(EXAMPLE), "--out", str(tmp_path / "a" / "b"), "--time-limit", "5"]) == 0
    assert (tmp_path / "a" / "b" / "gang-preemption.json").is_file()


def _adapter_entry_point(monkeypatch: pytest.MonkeyPatch, *, kubernetes: bool) -> None:
    """``gangplace adapter`` as pyproject.toml's entry point names it (an install made before it
    moved may still name adapter.main), with or without the Kubernetes client importable."""
    import tomllib
    from importlib import metadata

    value = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["gangplace.commands"]
    assert value == {"adapter": "adapter.command:register"}
    real = metadata.entry_points
    ours = [metadata.EntryPoint(name="adapter", value=value["adapter"], group="gangplace.commands")]
    monkeypatch.setattr(metadata, "entry_points",
                        lambda *, group: ours if group == "gangplace.commands" else real(group=group))
    for name in [m for m in sys.modules if m == "adapter.command"]:
        monkeypatch.delitem(sys.modules, name)  # imported afresh, under what this test simulates
    if not kubernetes:
        monkeypatch.setitem(sys.modules, "kubernetes", None)  # `import kubernetes` raises ImportError


def _adapter_help(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        cli.main(["adapter", "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


ADAPTER_OPTIONS = ["--kubeconfig", "--in-cluster", "--api-server", "--solver", "--in-process", "--solver-ca",
                   "--solver-cert", "--solver-key", "--solver-token-file", "--scheduler-name", "--time-limit",
                   "--lease-namespace", "--pdb-policy", "--dry-run", "--metrics-port", "--metrics-host"]


def test_adapter_help_without_its_extra_is_the_full_help_and_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _adapter_entry_point(monkeypatch, kubernetes=True)
    installed = _adapter_help(capsys)
    assert "pip install" not in installed
    _adapter_entry_point(monkeypatch, kubernetes=False)
    missing = _adapter_help(capsys)
    assert "Not installed here: pip install 'gangplace[adapter]' (No module named 'kubernetes')." in \
        " ".join(missing.split())
    for option in ADAPTER_OPTIONS:
        assert f"  {option}" in missing, option
    # the same usage and options as with the extra: only the install line differs
    assert missing.split("\n\n")[0] == installed.split("\n\n")[0]
    assert missing.split("options:")[1] == installed.split("options:")[1]
    assert "(--kubeconfig PATH | --in-cluster | --api-server URL)" in " ".join(missing.split())
    # running it, with or without arguments, says what to install (exit 2)
    for argv in (["adapter"], ["adapter", "--in-cluster", "--solver", "gangplace-solver:50051"]):
        assert cli.main(argv) == 2
        assert capsys.readouterr().err == (
            "gangplace: adapter needs its extra: pip install 'gangplace[adapter]' (No module named 'kubernetes')\n")


def test_the_adapter_command_imports_no_kubernetes_until_it_runs() -> None:
    import os
    import subprocess

    code = "import sys, adapter.command; print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr


def test_solve_help_says_what_solve_reads(capsys: pytest.CaptureFixture[str]) -> None:
    """A directory is one case per file in every command: solve's help says it takes one holding
    exactly one snapshot file (test_a_directory_is_one_case_per_file... holds it to that)."""
    with pytest.raises(SystemExit):
        cli.main(["solve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "a JSON List or multi-document YAML file, or a directory holding exactly one (.json, .yaml or .yml; " \
           "a directory is one case per file, as in bench and replan); - reads standard input" in text
    assert "one cluster" not in text


def test_progress_lines_are_in_the_plan_units(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["solve", str(EXAMPLE), "--progress", "--no-decompose", "-o", str(tmp_path / "plan.json")]) == 0
    lines = [m[1] for line in capsys.readouterr().err.splitlines() if (m := re.fullmatch(r" +\d+\.\d\ds (.*)", line))]
    assert lines[-2:] == ["preemptionCost: preemptionCost 404 (bound 404)",
                          "preemptionCost+evictedPods: preemptionCost 404, evictedPods 4 (bound 404, 4)"]


# ---- what the caller should do: one exit code per kind of error (solver.cli.EXIT) -------------

def _every_error_class() -> list[type]:
    import importlib
    import pkgutil

    import solver
    from solver.core.errors import SolverError

    for info in pkgutil.walk_packages(solver.__path__, "solver."):
        if not info.name.startswith("solver.gen"):
            importlib.import_module(info.name)
    seen: list[type] = []
    todo: list[type] = [SolverError]
    while todo:
        cls = todo.pop()
        seen.append(cls)
        todo.extend(cls.__subclasses__())
    return seen[1:]


def test_every_error_class_has_a_kind_and_a_class_without_one_is_refused() -> None:
    from solver.core.errors import Kind, SolverError

    classes = _every_error_class()
    assert len(classes) > 30
    assert all(isinstance(cls.kind, Kind) for cls in classes)  # type: ignore[attr-defined]  # every class has one
    with pytest.raises(TypeError, match="an error class must have a kind"):
        type("Homeless", (SolverError,), {})


def test_the_exit_table_covers_every_kind_and_retry_later_and_stopped_are_their_own() -> None:
    from solver.core.errors import Kind

    assert set(cli.EXIT) == set(Kind)
    assert cli.EXIT[Kind.BUG] == 1 and cli.EXIT[Kind.INPUT] == 2 and cli.EXIT[Kind.LIMIT] == 2
    assert cli.EXIT[Kind.BUSY] == cli.EXIT[Kind.UNAVAILABLE] == 3
    assert cli.EXIT[Kind.STOPPED] == cli.EXIT[Kind.DEADLINE] == 4


def test_a_server_that_is_down_exits_retry_later(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert cli.main(["solve", str(EXAMPLE), "--server", f"127.0.0.1:{port}", "-o", "-"]) == 3
    assert capsys.readouterr().err.startswith("gangplace: UNAVAILABLE")


def test_a_stopped_plan_exits_stopped(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from solver.core.stopping import Stopped

    def stopped(*_args: object, **_kwargs: object) -> object:
        raise Stopped("the search")

    monkeypatch.setattr(cli.api, "plan", stopped)
    assert cli.main(["solve", str(EXAMPLE), "-o", "-"]) == 4
    assert capsys.readouterr().err == ("gangplace: stopped during the search: the caller cancelled or its deadline "
                                       "passed\n")
