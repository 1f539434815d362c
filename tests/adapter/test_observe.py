"""The adapter's /metrics, /healthz and /readyz (adapter.observe), read over HTTP while the
adapter runs against the API server double, and its JSON logs."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client import generate_latest

from adapter.cluster import Cluster
from adapter.main import Adapter, in_process, serve_probes, stale_after
from adapter.observe import Heartbeat
from solver.service import telemetry
from tests.adapter.test_e2e import run_until
from tests.apiserver import ApiServerDouble
from tests.builders import gang_scenario, node, ours, pdb, pod


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _sample(text: str, series: str) -> float:
    found = re.search(rf"^{re.escape(series)} (\S+)$", text, re.M)
    assert found, f"{series} not in\n{text}"
    return float(found.group(1))


def test_metrics_and_probes_follow_the_adapter_through_a_plan(api: ApiServerDouble) -> None:
    api.put(pdb("batch", 5, app="batch").build())
    gang_scenario(api.put)
    adapter = Adapter(Cluster.at(api.url), in_process(5.0), renew=0.1)
    endpoint = serve_probes(adapter, "127.0.0.1", 0)
    try:
        assert _get(endpoint.port, "/readyz")[0] == 503  # the cache has listed nothing yet
        assert _get(endpoint.port, "/healthz")[0] == 200
        stop = threading.Event()
        runner = threading.Thread(target=adapter.run, args=(stop,), daemon=True)
        runner.start()
        deadline = time.monotonic() + 30
        while not (api.get("pods", "default", "train-0") or {}).get("spec", {}).get("nodeName"):
            assert time.monotonic() < deadline, list(adapter.outcomes)
            time.sleep(0.05)
        assert _get(endpoint.port, "/readyz") == (200, "ok\n")
        running = _get(endpoint.port, "/metrics")[1]
        stop.set()
        runner.join(15)
        after = _get(endpoint.port, "/metrics")[1]
        assert _get(endpoint.port, "/nothing")[0] == 404
    finally:
        endpoint.stop()
    evicted = sum(len(o.evicted) for o in adapter.outcomes)
    bound = sum(len(o.bound) for o in adapter.outcomes)
    assert (evicted, bound) == (1, 2)  # low-b makes room for the two gang pods on n1
    assert _sample(running, "gangplace_adapter_leader") == 1.0 and _sample(after, "gangplace_adapter_leader") == 0.0
    assert _sample(after, "gangplace_adapter_evictions_total") == evicted
    assert _sample(after, "gangplace_adapter_bindings_total") == bound
    statuses = {p.status for p in adapter.plans}
    assert statuses == {"OPTIMAL"}
    assert _sample(after, 'gangplace_adapter_plans_total{status="OPTIMAL"}') == len(adapter.plans)
    assert _sample(after, "gangplace_adapter_plan_seconds_count") == len(adapter.plans)
    assert _sample(after, "gangplace_adapter_solve_failures_total") == 0
    assert "process_resident_memory_bytes " in after and "gangplace_build_info{" in after
    # kube-scheduler's view: the gang was scheduled; nothing is left pending
    assert _sample(after, 'gangplace_adapter_schedule_attempts_total{result="scheduled"}') >= 1
    assert _sample(after, "gangplace_adapter_pending_pods") == 0 == _sample(after, "gangplace_adapter_pending_workloads")
    assert _sample(after, "gangplace_adapter_plan_e2e_seconds_count") == len(adapter.outcomes)


def test_a_gang_left_pending_shows_in_the_scheduler_style_series(api: ApiServerDouble) -> None:
    """Three 3-cpu pods in one rack of two 4-cpu nodes: never. The series say three pods and one
    workload pending, every attempt unschedulable, and how old the oldest pending pod is."""
    from tests.builders import RACK, node, ours, pod, pod_group

    for name in ("n0", "n1"):
        api.put(node(name).rack("r0").cpu_m(4000).build())
    api.put(pod_group("train", 3).topology(RACK).priority(100).build())
    for k in range(3):
        p = ours(pod(f"train-{k}").group("train").priority(100).cpu_m(3000))
        p["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
        api.put(p)
    adapter = Adapter(Cluster.at(api.url), in_process(5.0), renew=0.1)
    stop = threading.Event()
    runner = threading.Thread(target=adapter.run, args=(stop,), daemon=True)
    runner.start()
    deadline = time.monotonic() + 30
    while not adapter.outcomes:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    stop.set()
    runner.join(15)
    text = generate_latest(adapter.metrics.registry).decode()
    assert _sample(text, "gangplace_adapter_pending_pods") == 3
    assert _sample(text, "gangplace_adapter_pending_workloads") == 1
    assert _sample(text, 'gangplace_adapter_schedule_attempts_total{result="unschedulable"}') == len(adapter.outcomes)
    assert _sample(text, "gangplace_adapter_oldest_pending_seconds") > 300 * 86400  # since 2026-01-01


def test_liveness_fails_when_the_loop_is_not_seen() -> None:
    beat = Heartbeat(stale_after=0.05)
    assert beat.alive()
    time.sleep(0.1)
    assert not beat.alive()
    beat.beat()
    assert beat.alive()
    assert stale_after(10) == 120 and stale_after(60) == 300  # a plan and its evictions fit inside


def test_the_adapter_logs_json_lines_as_the_solver_does(capsys: pytest.CaptureFixture[str]) -> None:
    logger = logging.getLogger("gangplace")
    before = list(logger.handlers)
    telemetry.log_json_to_stderr()
    try:
        logging.getLogger("gangplace.adapter").warning(json.dumps({"event": "lease-lost"}))
        logging.getLogger("gangplace.adapter").info("plain text")
    finally:
        for handler in logger.handlers[len(before):]:
            logger.removeHandler(handler)
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [(r["level"], r.get("event"), r.get("message")) for r in lines] == [
        ("WARNING", "lease-lost", None), ("INFO", None, "plain text")]
    assert all(isinstance(r["time"], float) for r in lines)


def test_a_lease_the_adapter_may_not_touch_makes_it_unready_with_the_reason_logged_once(
        api: ApiServerDouble, caplog: pytest.LogCaptureFixture) -> None:
    # issue 50, item 10: a 403 on the Lease was logged every renew while /readyz said 200
    caplog.set_level("INFO", logger="gangplace.adapter")
    api.fail_next("*", "/leases", 403, times=1000, message='leases.coordination.k8s.io "gangplace" is forbidden')
    adapter = Adapter(Cluster.at(api.url), in_process(5.0), renew=0.05)
    endpoint = serve_probes(adapter, "127.0.0.1", 0)
    stop = threading.Event()
    runner = threading.Thread(target=adapter.run, args=(stop,), daemon=True)
    try:
        runner.start()
        deadline = time.monotonic() + 30
        while "403" not in _get(endpoint.port, "/readyz")[1]:
            assert time.monotonic() < deadline, _get(endpoint.port, "/readyz")
            time.sleep(0.05)
        code, body = _get(endpoint.port, "/readyz")
        assert code == 503 and "Lease kube-system/gangplace-adapter (--lease-namespace, --lease-name): " \
            "get_lease: 403" in body
        time.sleep(0.5)  # about ten renews
        errors = [r for r in caplog.records if '"lease-error"' in r.getMessage()]
        assert len(errors) == 1, [r.getMessage() for r in errors]
        api.clear_faults()  # the role now allows the Lease
        while _get(endpoint.port, "/readyz")[0] != 200:
            assert time.monotonic() < deadline, _get(endpoint.port, "/readyz")
            time.sleep(0.05)
        assert any('"lease-ok"' in r.getMessage() for r in caplog.records)
    finally:
        stop.set()
        runner.join(15)
        endpoint.stop()


def test_every_pod_left_pending_says_why_and_the_pending_age_moves_while_nothing_changes(
        api: ApiServerDouble) -> None:
    # issue 50, item 9: a standalone pod left pending had no Event, a pod naming a PodGroup that
    # does not exist had nothing at all, and the oldest-pending age froze between plans
    api.put(node("n1").cpu_m(1000).build())
    api.put(ours(pod("big").cpu_m(4000)))  # fits no node
    api.put(ours(pod("orphan-0").group("nowhere").cpu_m(100)))  # its PodGroup was never created
    adapter = Adapter(Cluster.at(api.url), in_process(5.0), renew=0.1)

    def said(name: str) -> set[str]:
        return {e.get("note", "") for e in api.list("events", "default")
                if e["reason"] == "FailedScheduling" and e.get("regarding", {}).get("name") == name}

    run_until(adapter, lambda: bool(said("big") and said("orphan-0")), timeout=30)
    assert said("orphan-0") == {"PodGroup default/nowhere not found: waiting for it to be created"}
    cond = next(c for c in api.get("pods", "default", "orphan-0")["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (cond["status"], cond["reason"]) == ("False", "SchedulingGated") and "nowhere not found" in cond["message"]
    first = generate_latest(adapter.metrics.registry).decode()
    time.sleep(1.1)  # nothing changes in the cluster meanwhile
    second = generate_latest(adapter.metrics.registry).decode()
    assert _sample(first, "gangplace_adapter_pending_pods") == 2.0
    assert _sample(second, "gangplace_adapter_oldest_pending_seconds") >= \
        _sample(first, "gangplace_adapter_oldest_pending_seconds") + 1.0


def test_each_plan_carried_out_is_one_line_naming_what_it_placed_and_left_pending_and_why(
        api: ApiServerDouble, caplog: pytest.LogCaptureFixture) -> None:
    # issue 50, item 11: each plan logged {"status", "evicted", "bound"} 2-3 times per change
    caplog.set_level("DEBUG", logger="gangplace.adapter")
    api.put(node("n1").cpu_m(1000).build())
    api.put(ours(pod("big").cpu_m(4000)))
    api.put(ours(pod("small").cpu_m(500)))
    adapter = Adapter(Cluster.at(api.url), in_process(5.0), renew=0.1)
    # then the watch brings the binding back: a plan that does nothing new
    run_until(adapter, lambda: sum('"executed"' in r.getMessage() for r in caplog.records) >= 2, timeout=30)
    lines = [(r.levelname, json.loads(r.getMessage())) for r in caplog.records if '"executed"' in r.getMessage()]
    info = [line for level, line in lines if level == "INFO"]
    assert info[0]["placed"] == ["Pod/default/small"] and info[0]["bound"] == 1
    assert list(info[0]["pending"]) == ["Pod/default/big"] and "cpu" in info[0]["pending"]["Pod/default/big"]
    assert len(lines) >= 2 and len(info) == 1, lines  # the replans that changed nothing: debug level
    assert any('"leading"' in r.getMessage() for r in caplog.records)
    assert '"stopped"' in caplog.records[-1].getMessage()
