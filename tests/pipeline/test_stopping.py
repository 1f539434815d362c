"""A stop reaches every phase (issue 32, item 4): set while the problem, the hint, the model,
the search or the verifier runs, the plan ends at that phase's next checkpoint with
``Stopped`` naming it, and no later phase starts. Over gRPC a cancelled call frees its slot."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from solver import api
from solver.baseline import greedy, preempt, victims
from solver.core import stopping
from solver.core.stopping import Stopped
from solver.model import build
from solver.model.bounds import floors
from solver.problem import build as problem
from solver.service import client, server
from tests.builders import RACK, node, pod, pod_group, snapshot


def _case() -> Any:
    """Two racks of victims and a gang that must preempt in one: every phase has work to do."""
    objs: list[Any] = []
    for rack in ("ra", "rb"):
        for k in range(3):
            objs.append(node(f"{rack}-{k}").rack(rack).cpu_m(4000))
            objs.append(pod(f"{rack}-v{k}").on(f"{rack}-{k}").cpu_m(3000).priority(1))
    objs += [pod_group("g", 3).topology(RACK).priority(100)] + [
        pod(f"g-{k}").group("g").priority(100).cpu_m(2000) for k in range(3)]
    return snapshot(*objs)


def _stopping_in(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, stop: threading.Event,
                 reached: list[str]) -> None:
    """``module.name`` sets the stop when it starts, then runs as usual."""
    real: Callable[..., Any] = getattr(module, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        reached.append(name)
        stop.set()
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapped)


@pytest.mark.parametrize("module, name, where", [
    (problem, "_candidate_nodes", "the candidate nodes"),
    (greedy, "hint", "the greedy walk"),
    (floors, "_node_costs", "the cost floor"),
    (victims, "classified_counts", "the victims' budgets"),
    (build, "build_model", "the model ("),  # the first constraint family's checkpoint
    (api, "solve", ("the cost floor", "the search")),  # the search prices its floor first, when it has one
], ids=["problem", "hint", "cost-floor", "budgets", "model", "search"])
def test_a_stop_set_in_a_phase_ends_the_plan_at_its_next_checkpoint(monkeypatch: pytest.MonkeyPatch, module: Any,
                                                                   name: str, where: str | tuple[str, ...]) -> None:
    stop = threading.Event()
    reached: list[str] = []
    _stopping_in(monkeypatch, module, name, stop, reached)
    if module is build:  # api holds its own reference to build_model
        monkeypatch.setattr(api, "build_model", build.build_model)
    verified: list[int] = []
    monkeypatch.setattr(api.verify_mod, "verify", lambda *a, **k: verified.append(1) or [])
    with pytest.raises(Stopped) as err:
        api.plan(_case(), api.PlanOptions(time_limit=30, decompose=False, stop=stop))
    assert err.value.where.startswith(where) and reached[:1] == [name]
    assert not verified  # nothing after the phase ran


def test_the_walks_reprieves_stop_between_victims(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stop set once the reprieve has its victims classified (the budgets' own checkpoint
    is behind it): the reprieve loop's checkpoint ends the plan."""
    stop = threading.Event()

    def classified(*args: Any, **kwargs: Any) -> set[int]:
        stop.set()
        return set()

    monkeypatch.setattr(preempt, "pdb_violating", classified)
    with pytest.raises(Stopped) as err:
        api.plan(_case(), api.PlanOptions(time_limit=30, decompose=False, stop=stop))
    assert err.value.where == "the greedy walk (reprieves)"


def test_the_verifier_stops_between_its_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    from solver import verify

    stop = threading.Event()
    rules: list[str] = []
    real = verify.check_bindings

    def first(view: Any) -> Any:
        rules.append("bindings")
        stop.set()
        return real(view)

    monkeypatch.setattr(verify, "check_bindings", first)
    snap = _case()
    plan = api.plan(snap, api.PlanOptions(time_limit=30))
    with stopping.watching(stop), pytest.raises(Stopped, match="verifying"):
        verify.verify(snap.facts, snap, plan)
    assert rules == ["bindings"]


def test_without_a_stop_the_checkpoints_are_silent() -> None:
    plan = api.plan(_case(), api.PlanOptions(time_limit=30))
    assert plan.status == "OPTIMAL" and len(plan.bindings) == 3


def test_a_cancelled_call_frees_its_slot(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A call cancelled while its problem is built: the server's one slot is free again soon
    after (measured at scale by the bench; here only that it is freed, well within 30 s)."""
    gate = threading.Event()
    real = problem._all_candidates

    def slow(*args: Any, **kwargs: Any) -> Any:
        gate.set()
        while not stopping.stopped():  # a problem that would take long: until the caller goes
            time.sleep(0.01)
        return real(*args, **kwargs)

    monkeypatch.setattr(problem, "_all_candidates", slow)
    caplog.set_level("INFO", logger="gangplace")
    running = server.start(server.ServerConfig(address="127.0.0.1:0", metrics_address=None, max_inflight=1))
    try:
        body = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            node("n1").build(), pod("p").cpu_m(100).build()]}).encode()
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as ch:
            from solver.gen.gangplace.v1 import placement_pb2 as pb
            from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc

            call = pb_grpc.PlacementServiceStub(ch).Solve.future(  # type: ignore[no-untyped-call]
                pb.SolveRequest(kubernetes_objects=body), timeout=60)
            assert gate.wait(30)
            cancelled = time.perf_counter()
            call.cancel()
            while running.metrics.in_flight._value.get() > 0:
                assert time.perf_counter() - cancelled < 30
                time.sleep(0.01)
        monkeypatch.setattr(problem, "_all_candidates", real)
        logged = [json.loads(r.getMessage()) for r in caplog.records if r.getMessage().startswith("{")]
        assert [e.get("during") for e in logged if e.get("event") == "stopped"] == ["the candidate nodes"]
        assert not [e for e in logged if e.get("event") == "internal"]
        with client.PlacementClient(f"127.0.0.1:{running.port}") as c:  # the slot serves the next call
            assert [b.pod for b in c.solve(body).bindings] == ["default/p"]
    finally:
        running.stop(5)
