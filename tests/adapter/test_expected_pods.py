"""``gangplace adapter --expected-pods FILE``: the plan the adapter asks for weighs the pods
expected to arrive, in process and through the solver service, as ``gangplace solve`` does."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapter.cluster import Cluster
from adapter.main import Adapter, dry_run, in_process, remote
from solver import cli
from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.kube import loader
from solver.service import convert as grpc_convert
from solver.service import server
from tests.apiserver import ApiServerDouble

DRIVER = "gpu.example.com"


def _cluster(api: ApiServerDouble) -> None:
    """One node, two shareable GPUs of 40Gi, 20Gi of gpu-1 held; a pending pod of the adapter's
    asks 15Gi: best fit puts it on gpu-1 (5Gi left, of no use to a 20Gi pod), a 20Gi pod
    expected puts it on gpu-0 (25Gi left there)."""
    gpu = {"allow_multiple_allocations": True, "capacity": {"memory": "40Gi"}}
    state = pb.ClusterState(
        nodes=[pb.Node(name="n1", allocatable={"cpu": 4000, "pods": 110})],
        pods=[pb.Pod(namespace="default", name="p0", requests={"cpu": 500}, scheduler_name="gangplace",
                     claims=[pb.PodClaimRef(name="gpu", template="t")])],
        devices=[pb.Device(driver=DRIVER, pool="n1", name=f"gpu-{i}", node="n1", **gpu) for i in range(2)],
        device_classes=[pb.DeviceClass(name="gpu", selectors=[f'device.driver == "{DRIVER}"'])],
        claim_templates=[pb.ResourceClaim(namespace="default", name="t", requests=[pb.DeviceRequest(
            name="gpu", exactly=pb.DeviceSubRequest(device_class="gpu", capacity_requests={"memory": "15Gi"}))])],
        claims=[pb.ResourceClaim(
            namespace="default", name="old", requests=[pb.DeviceRequest(name="gpu", exactly=pb.DeviceSubRequest(
                device_class="gpu", capacity_requests={"memory": "20Gi"}))],
            allocation=[pb.AllocatedDevice(request="gpu", driver=DRIVER, pool="n1", device="gpu-1", share_id="s-1",
                                           consumed_capacity={"memory": "20Gi"})])])
    for obj in grpc_convert.objects_from_state(state)[0]:
        api.put(obj)


@pytest.fixture(autouse=True)
def _own_log_handlers() -> Iterator[None]:
    """``gangplace adapter`` installs its JSON log handler on stderr (capsys's here): taken
    off again, so no later test logs into a closed stream."""
    logger = logging.getLogger("gangplace")
    before = list(logger.handlers)
    yield
    for handler in logger.handlers[len(before):]:
        logger.removeHandler(handler)


def _mix(tmp_path: Path) -> Path:
    path = tmp_path / "expected.yaml"
    path.write_text("- {name: big, weight: 1, device: {deviceClassName: gpu, capacity: {requests: {memory: 20Gi}}}}\n")
    return path


def _device(plan: dict) -> list[str]:
    return [d["device"] for a in plan["deviceAllocations"] for d in a["devices"]]


def test_the_cli_flag_reaches_the_plan(api: ApiServerDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _cluster(api)
    devices = []
    for extra in ([], ["--expected-pods", str(_mix(tmp_path))]):
        assert cli.main(["adapter", "--api-server", api.url, "--in-process", "--dry-run", *extra]) == 0
        devices.append(_device(json.loads(capsys.readouterr().out)))
    assert devices == [["gpu-1"], ["gpu-0"]]


def test_through_the_solver_service_the_same(api: ApiServerDouble, tmp_path: Path) -> None:
    _cluster(api)
    mix = loader.load_expected_pods(str(_mix(tmp_path)))
    running = server.start(server.ServerConfig(address="127.0.0.1:0", metrics_address=None))
    try:
        got = {}
        for name, solve in (("local", in_process(5.0, expected=mix)),
                            ("remote", remote(f"127.0.0.1:{running.port}", 5.0, expected=mix))):
            out = io.StringIO()
            assert dry_run(Adapter(Cluster.at(api.url), solve), out) == 0
            got[name] = _device(json.loads(out.getvalue()))
    finally:
        running.stop(5)
    assert got == {"local": ["gpu-0"], "remote": ["gpu-0"]}


def test_a_bad_file_is_one_line_naming_the_entry(api: ApiServerDouble, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {name: big, weight: 0}\n")
    assert cli.main(["adapter", "--api-server", api.url, "--in-process", "--dry-run", "--expected-pods", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "ExpectedPod/big: weight: must be a number above 0" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
