"""The gangplace plugin inside the real kube-scheduler 1.37.2 (issue 49), on the real control plane.

kube-scheduler is the plugin's build (scripts/build-scheduler-plugin.sh) run with the
KubeSchedulerConfiguration deploy/components/scheduler-plugin ships (its address, client
connection and leader election replaced by the test's, maxPlanAgeMilliseconds 30 s (5 s for
the stale case alone, so that it takes seconds), and the Advise deadline and the hold lengthened: on a shared test
machine running two control planes and solves at once, the in-process advisor can miss 50 ms, and
a cycle that misses it is upstream's by design, which is not what a test of the planned outcome
asks about (the slow test sleeps past the longer deadline)); its advisor is `gangplace adapter --advise`'s own parts
(``Advisor`` over the adapter's ``WatchCache``, as deploy/base's ServiceAccount, solving in
process) served on loopback. Every test runs under both gate sets the issue names: GenericWorkload
alone (the PodGroup cycle with per-pod PreFilter and PodGroupPostFilter) and with
TopologyAwareWorkloadScheduling (PlacementGenerate and PlacementScore too).

The outcomes are exact: where the plan is feasible at cycle time, kube-scheduler binds the plan's
pods on the plan's nodes and evicts the plan's victims (through the Eviction API: the audit log
names the scheduler's user); where there is no usable advice (the advisor down or slow, a stale
plan, a plan naming a node that is gone), it does what upstream does, which on these clusters is
a different and worse outcome, and gangplace_advice_total says why."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from adapter.advise import Advisor, serve
from adapter.cache import WatchCache
from adapter.cluster import Cluster
from adapter.main import in_process
from solver.bench import controlplane, upstream
from solver.bench.controlplane import ControlPlane
from solver.core.errors import SolverError
from solver.core.plan import Plan
from solver.service.server import ServerConfig
from tests.builders import gang_scenario, node, ours, pod, pod_group
from tests.controlplane.conftest import Real

SCHEDULER_USER = "system:kube-scheduler"
# the two gate sets of the issue: the PodGroup cycle alone, and with topology-aware placement
GATES = {
    "generic-workload": {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": False,
                         "CompositePodGroup": False},
    "topology-aware": {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True},
}
MAX_PLAN_AGE_MS = 30000  # a plan the test pauses stays current while kube-scheduler starts, however slowly
STALE_PLAN_AGE_MS = 5000  # the stale test's
ADVISE_TIMEOUT_MS = 1000  # deploy's 50 ms is for a dedicated advisor; see the module's docstring
HOLD_MS = 20000


class Paused:
    """The advisor's solve, which a test can stop (each replan then fails and the plan before
    stays, as when the solver is down or slower than the changes; PluginScheduler stops the
    plans of nothing too)."""

    def __init__(self, solve: Callable[[list[dict[str, Any]]], Plan]) -> None:
        self.solve = solve
        self.paused = False

    def __call__(self, objects: list[dict[str, Any]]) -> Plan:
        if self.paused:
            raise SolverError("paused by the test")
        return self.solve(objects)


class PluginScheduler:
    """The plugin's kube-scheduler and its advisor, on the session's control plane."""

    def __init__(self, plane: ControlPlane, kubeconfig: Path, gates: dict[str, bool]) -> None:
        self.plane = plane
        rest = upstream.Rest(plane)
        try:
            for obj in controlplane.plugin_rbac(SCHEDULER_USER):
                status, body = rest.request("POST", upstream.path_of(obj), obj)
                assert status in (201, 409), body  # 409: the other gate set's module made it
        finally:
            rest.close()
        self.gates = gates
        self.binary = controlplane.plugin_scheduler()
        self.cache = WatchCache(Cluster.connect(str(kubeconfig)))
        self.solve = Paused(in_process(5.0, "strict"))
        self.advisor = Advisor(self.cache, self.solve, scheduler_name="gangplace")
        plan_once = self.advisor.plan_once  # paused, no plan at all (not even one of nothing) is made
        self.advisor.plan_once = lambda: None if self.solve.paused else plan_once()  # type: ignore[method-assign]  # the test's pause
        self.stop = threading.Event()
        self.server: Any = None
        try:
            self._start(plane)
        except BaseException:
            self.close()
            raise

    def _start(self, plane: ControlPlane) -> None:
        self.cache.start()
        assert self.cache.wait_synced(30), "the advisor's watch did not sync"
        self.thread = threading.Thread(target=self.advisor.run, args=(self.stop,), kwargs={"wait": 0.2},
                                       name="advisor", daemon=True)
        self.thread.start()
        self.server, self.port = serve(self.advisor, ServerConfig(address="127.0.0.1:0"))
        self.up = True
        self.start_scheduler()

    def start_scheduler(self, *, healthy: bool = True, max_plan_age_ms: int = MAX_PLAN_AGE_MS) -> None:
        """Start kube-scheduler; with ``healthy``, wait until the plugin's probe has found the
        advisor healthy (before that, the plugin does what upstream does: no group is held)."""
        config = controlplane.plugin_config(f"127.0.0.1:{self.port}", scheduler_name="gangplace",
                                            maxPlanAgeMilliseconds=max_plan_age_ms,
                                            timeoutMilliseconds=ADVISE_TIMEOUT_MS, holdMilliseconds=HOLD_MS)
        self.max_plan_age_ms = max_plan_age_ms
        self.plane.start_scheduler(self.gates, binary=self.binary, config=config)
        if healthy:
            _until(lambda: "gangplace_advisor_healthy 1" in self.metrics(), "the advisor healthy", timeout=30)

    def metrics(self) -> str:
        """kube-scheduler's /metrics; "" while it does not yet know the admin's client certificate
        (it reads the API server's client CA a moment after it starts: 403 until then)."""
        import urllib.error

        try:
            return self.plane.scheduler_metrics()
        except (urllib.error.URLError, OSError):
            return ""

    def stop_scheduler(self) -> None:
        self.plane.stop_component("kube-scheduler")

    def advisor_down(self) -> None:
        self.server.stop(0).wait()
        self.up = False

    def advisor_up(self) -> None:
        if not self.up:
            self.server, _ = serve(self.advisor, ServerConfig(address=f"127.0.0.1:{self.port}"))
            self.up = True

    def advice(self) -> dict[tuple[str, str], float]:
        """gangplace_advice_total by (extension point, result), from kube-scheduler's /metrics."""
        out = {}
        deadline = time.monotonic() + 30
        while not (text := self.metrics()):
            assert time.monotonic() < deadline, "kube-scheduler's /metrics did not answer"
            time.sleep(0.2)
        for m in re.finditer(r'^gangplace_advice_total\{extension_point="(\w+)",result="(\w+)"\} (\S+)$',
                             text, re.M):
            out[m.group(1), m.group(2)] = float(m.group(3))
        return out

    def close(self) -> None:
        self.stop_scheduler()
        if self.server is not None:
            self.server.stop(0).wait()
        self.stop.set()
        if hasattr(self, "thread"):
            self.thread.join(10)
        self.cache.stop(join=5.0)


@pytest.fixture(scope="module", params=list(GATES))
def plugin(request: pytest.FixtureRequest, plane: ControlPlane, adapter_kubeconfig: Path) -> Iterator[PluginScheduler]:
    running = PluginScheduler(plane, adapter_kubeconfig, GATES[request.param])
    yield running
    running.close()


@pytest.fixture(autouse=True)
def _fresh(plugin: PluginScheduler) -> Iterator[None]:
    """Each test starts with the advisor up and solving and kube-scheduler running."""
    yield
    plugin.solve.paused = False
    if "kube-scheduler" not in plugin.plane.procs or plugin.max_plan_age_ms != MAX_PLAN_AGE_MS:
        plugin.start_scheduler()
    plugin.advisor_up()


def _until(check: Callable[[], bool], what: str, timeout: float = 60.0,
           state: Callable[[], str] = lambda: "") -> float:
    """Wait for ``check``; past ``timeout`` fail, with ``state()`` (what the cluster and the plugin
    did) in the message."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout, f"{what}: not within {timeout:.0f} s; {state()}"
        time.sleep(0.1)
    return time.monotonic() - start


def _state(plugin: PluginScheduler, real: Real, pods: tuple[str, ...]) -> Callable[[], str]:
    """What a failed wait reports: each pod's node, the advisor's current answer for it, and the
    plugin's advice counters."""
    def say() -> str:
        advice = {p: plugin.advisor.advise("Pod", "default", p) for p in pods}
        return (f"nodes {({p: real.node_of(p) for p in pods})}, advice "
                f"{({p: (a.planned, [(b.pod, b.node) for b in a.bindings]) for p, a in advice.items()})}, "
                f"plugin counters {plugin.advice()}")
    return say


def _two_gangs(real: Real, nodes: tuple[str, ...] = ("n1", "n2")) -> None:
    """Nodes of 4 cpu; gang a (2 x 2 cpu, priority 100) and gang b (1 x 4 cpu, priority 50).
    kube-scheduler alone spreads a's pods (NodeResourcesFit's least-allocated scoring), which
    leaves no node for b; gangplace's joint plan puts a on one node and b on another."""
    for name in nodes:
        real.put(node(name).cpu_m(4000).build())
    real.put(pod_group("a", 2).priority(100).build())
    real.put(pod_group("b", 1).priority(50).build())
    for k in range(2):
        real.put(ours(pod(f"a-{k}").group("a").priority(100).cpu_m(2000)))
    real.put(ours(pod("b-0").group("b").priority(50).cpu_m(4000)))


def _upstreams_outcome(real: Real) -> None:
    """What kube-scheduler alone does with ``_two_gangs``: a spread over two nodes, b pending."""
    _until(lambda: bool(real.node_of("a-0") and real.node_of("a-1")), "gang a bound")
    assert real.node_of("a-0") != real.node_of("a-1")
    time.sleep(2.0)  # b's retries find no node
    assert real.node_of("b-0") is None


def _evictions(real: Real) -> list[tuple[str, int]]:
    """(pod, code) of every eviction kube-scheduler's user made during this test."""
    time.sleep(1.5)  # the audit log is flushed within a second
    return [(ev["objectRef"].get("name", ""), int(ev.get("responseStatus", {}).get("code", 0)))
            for ev in real.plane.audit()
            if ev.get("user", {}).get("username") == SCHEDULER_USER and ev.get("stage") == "ResponseComplete"
            and ev.get("objectRef", {}).get("subresource") == "eviction"
            and _epoch(ev.get("requestReceivedTimestamp", "")) >= real.started]


def _epoch(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else 0.0


def test_both_gangs_are_bound_where_the_joint_plan_puts_them(plugin: PluginScheduler, real: Real) -> None:
    _two_gangs(real)
    _until(lambda: all(real.node_of(p) for p in ("a-0", "a-1", "b-0")), "every pod bound",
           state=_state(plugin, real, ("a-0", "a-1", "b-0")))
    # the plan (docs/design.md's tie rule: the first node by name): a packed on n1, b on n2
    assert {p: real.node_of(p) for p in ("a-0", "a-1", "b-0")} == {"a-0": "n1", "a-1": "n1", "b-0": "n2"}
    assert plugin.advice().get(("PreFilter", "planned"), 0) >= 3
    assert _evictions(real) == []


def test_the_plans_victim_is_evicted_through_the_eviction_api_and_the_gang_bound_where_planned(
        plugin: PluginScheduler, real: Real) -> None:
    real.put({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
              "metadata": {"name": "batch", "namespace": "default"},
              "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "batch"}}}})
    gang_scenario(real.put)  # n1 holds low-b: the plan evicts it and puts both train pods there
    _until(lambda: bool(real.node_of("train-0") and real.node_of("train-1")), "the gang bound")
    assert (real.node_of("train-0"), real.node_of("train-1")) == ("n1", "n1")
    assert real.pod("low-b") is None and all(real.pod(p) for p in ("low-a", "keep", "vip"))
    assert _evictions(real) == [("low-b", 201)]  # strict: one eviction, not refused
    assert plugin.advice().get(("PodGroupPostFilter", "planned"), 0) >= 1


@pytest.mark.parametrize("fault", ["down", "slow"])
def test_without_an_advisor_in_time_kube_scheduler_does_what_upstream_does(
        plugin: PluginScheduler, real: Real, fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable() -> float:  # a cycle's first question; the rest of the cycle remembers the answer
        return sum(plugin.advice().get((point, "unavailable"), 0) for point in ("PreFilter", "PlacementGenerate"))

    before = unavailable()
    if fault == "down":
        plugin.advisor_down()
    else:
        answer = plugin.advisor.advise
        late = ADVISE_TIMEOUT_MS / 1000 + 0.5
        monkeypatch.setattr(plugin.advisor, "advise", lambda *a: (time.sleep(late), answer(*a))[1])  # past the deadline
    # the plugin's probe (every 0.2 s, each bounded by the deadline) finds it unhealthy: no group is held
    _until(lambda: "gangplace_advisor_healthy 0" in plugin.metrics(), "the advisor unhealthy", timeout=30)
    start = time.monotonic()
    _two_gangs(real)
    _upstreams_outcome(real)
    # released at once, not held for holdMilliseconds: the advisor could not answer
    assert time.monotonic() - start < 10
    assert unavailable() > before


def test_a_plan_naming_a_node_that_is_gone_is_no_advice(plugin: PluginScheduler, real: Real) -> None:
    plugin.stop_scheduler()
    _two_gangs(real, ("n1", "n2", "n3"))
    _until(lambda: plugin.advisor.advise("PodGroup", "default", "a").planned, "a plan for gang a")
    planned = {b.node for b in plugin.advisor.advise("PodGroup", "default", "a").bindings}
    assert len(planned) == 1
    plugin.solve.paused = True  # the advisor keeps the plan it made
    gone = planned.pop()
    real.rest.call("DELETE", f"/api/v1/nodes/{gone}")
    plugin.start_scheduler(healthy=False)
    # gang a's advice names the gone node: upstream's choice among the nodes left. Whether that
    # spreads a (upstream alone) or packs it beside b depends on which cycle runs first: b's
    # advice (a node that is still there) is good, and a gang that follows it packs a.
    _until(lambda: bool(real.node_of("a-0") and real.node_of("a-1")), "gang a bound",
           state=_state(plugin, real, ("a-0", "a-1", "b-0")))
    assert gone not in {real.node_of("a-0"), real.node_of("a-1")}, (gone, _state(plugin, real, ("a-0", "a-1", "b-0"))())
    assert plugin.advice().get(("PreFilter", "node_gone"), 0) >= 1


def test_a_plan_the_cluster_has_been_ahead_of_for_too_long_is_no_advice(plugin: PluginScheduler, real: Real) -> None:
    plugin.stop_scheduler()
    _two_gangs(real)
    _until(lambda: plugin.advisor.advise("PodGroup", "default", "b").planned, "a plan for gang b")
    plugin.solve.paused = True
    real.rest.call("PATCH", "/api/v1/nodes/n2", {"metadata": {"labels": {"touched": "yes"}}},
                   content_type="application/merge-patch+json")
    _until(lambda: plugin.advisor.advise("PodGroup", "default", "a").age_seconds > STALE_PLAN_AGE_MS / 1000,
           "the plan aged", timeout=10)
    plugin.start_scheduler(healthy=False, max_plan_age_ms=STALE_PLAN_AGE_MS)
    _upstreams_outcome(real)
    assert sum(plugin.advice().get((point, "stale"), 0) for point in ("PreFilter", "PlacementGenerate")) >= 1


def test_a_pod_outside_any_group_is_placed_by_the_plan_and_another_schedulers_pod_is_left_alone(
        plugin: PluginScheduler, real: Real) -> None:
    real.put(node("n1").cpu_m(4000).build())
    real.put(ours(pod("solo").priority(10).cpu_m(1000)))
    other = pod("theirs").cpu_m(1000).build()
    other["spec"]["schedulerName"] = "someone-else"
    real.put(other)
    _until(lambda: real.node_of("solo") == "n1", "the plain pod bound")
    time.sleep(1.0)
    assert real.node_of("theirs") is None  # not this profile's: never scheduled by it


def _bound_as_planned(plugin: PluginScheduler, real: Real, kind: str, name: str, put: Callable[[], None]) -> dict[str, str]:
    """The objects ``put`` writes, planned while kube-scheduler is stopped (so the advice can be
    read before anything binds), then scheduled: every planned pod bound on its planned node."""
    plugin.stop_scheduler()
    put()
    _until(lambda: plugin.advisor.advise(kind, "default", name).planned, f"a plan for {kind} {name}")
    plan = {b.pod.split("/", 1)[1]: b.node for b in plugin.advisor.advise(kind, "default", name).bindings}
    plugin.start_scheduler()
    _until(lambda: all(real.node_of(p) for p in plan), f"{name}'s pods bound")
    assert {p: real.node_of(p) for p in plan} == plan
    return plan


def test_a_composite_pod_group_tree_is_bound_where_the_plan_puts_it(plugin: PluginScheduler, real: Real) -> None:
    if not plugin.gates["CompositePodGroup"]:
        pytest.skip("CompositePodGroup is scheduled only with its gate (and TopologyAwareWorkloadScheduling)")
    from tests.builders import RACK, composite

    def put() -> None:
        for name, rack in (("n0", "r0"), ("n1", "r0"), ("n2", "r1"), ("n3", "r1")):
            real.put(node(name).rack(rack).cpu_m(4000).build())
        root = composite("job", 2).topology(RACK).priority(100).build()
        root["spec"]["workloadRef"] = {"workloadName": "job", "templateName": "job"}  # the API server wants it
        real.put(root)
        for child in ("job-a", "job-b"):
            group = pod_group(child, 2).parent("job").build()
            group["spec"]["workloadRef"] = {"workloadName": "job", "templateName": child}
            real.put(group)
            for k in range(2):
                real.put(ours(pod(f"{child}-{k}").group(child).priority(100).cpu_m(2000)))

    plan = _bound_as_planned(plugin, real, "CompositePodGroup", "job", put)
    # (kube-scheduler was restarted for it: its counters are this test's) the plan's placement was offered
    assert plugin.advice().get(("PlacementGenerate", "planned"), 0) >= 1
    assert len(plan) == 4 and len(set(plan.values())) == 2  # two nodes of a rack, full
    racks = {real.get(f"/api/v1/nodes/{n}")["metadata"]["labels"][RACK] for n in plan.values()}  # type: ignore[index]
    assert len(racks) == 1  # the tree's topology constraint: one rack


def test_a_dra_gang_is_bound_where_planned_with_its_claims_allocated_by_kube_scheduler(
        plugin: PluginScheduler, real: Real) -> None:
    from tests.dra_builders import DRIVER, two_gpu_gang

    def put() -> None:
        real.put(node("n1").cpu_m(8000).build())  # no GPU: the plan cannot use it
        two_gpu_gang(real.put)

    plan = _bound_as_planned(plugin, real, "PodGroup", "train", put)
    assert plan == {"train-0": "n0", "train-1": "n0"}
    devices = []
    for k in range(2):
        _until(lambda k=k: bool((real.pod(f"train-{k}") or {}).get("status", {}).get("resourceClaimStatuses")),
               "the claim's status")
        (entry,) = real.pod(f"train-{k}")["status"]["resourceClaimStatuses"]  # type: ignore[index]
        claim = real.get(f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{entry['resourceClaimName']}")
        assert claim is not None and [r["name"] for r in claim["status"]["reservedFor"]] == [f"train-{k}"]
        results = claim["status"]["allocation"]["devices"]["results"]
        assert {r["driver"] for r in results} == {DRIVER} and {r["pool"] for r in results} == {"n0"}
        devices += [r["device"] for r in results]
    assert sorted(devices) == ["gpu-0", "gpu-1"]  # kube-scheduler's DynamicResources allocated them
