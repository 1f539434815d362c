"""The adapter end to end: the real kubernetes client against the API server double.

The plain cases (a gang bound with its victim evicted, a PDB that forbids it, a pod held
terminating, two replicas and the Lease, claims the resourceclaim controller makes) run on the
real kube-apiserver in tests/controlplane/test_adapter.py. What stays here needs a fault or a
moment the double can produce on demand: a 429 or 409 on one request, a dropped or compacted
watch, a crash after each single write, a renewal held while a plan is made, a lease lost
mid-plan, a victim recreated under its name; and the claim the adapter makes itself where no
resourceclaim controller runs.

The crash test dies before each write one plan makes, every one: a write is any request but a
GET and the Lease's (``CrashingCluster`` counts them at the client, whichever Cluster method
sends them), and a first clean run's call log must match ``WRITE_KINDS`` (nominations, the
Preempted Event, the eviction, bindings and Scheduled Events, a left-out pod's PodScheduled,
the group's condition), so a new write shows up as a missing crash point. After the restart
each of those writes is found made exactly once. Every test here also runs under the double's
capacity check (tests/adapter/conftest.py)."""

from __future__ import annotations

import io
import json
import re
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from adapter.cluster import Cluster
from adapter.controller import CONDITION
from adapter.main import Adapter, dry_run, in_process
from solver import reading
from tests.apiserver import ApiServerDouble, Request
from tests.builders import RACK, gang_scenario, node, ours, pdb, pod, pod_group

WRITES = ("POST", "PUT", "PATCH", "DELETE")


def _cluster(server: ApiServerDouble, *, gang: int = 2, cpu: int = 2000, pdb_allowed: int | None = None) -> None:
    """builders.gang_scenario on the double, with a PDB over app=batch when asked."""
    if pdb_allowed is not None:
        server.put(pdb("batch", pdb_allowed, app="batch").build())
    gang_scenario(server.put, gang=gang, cpu=cpu)


def run_until(adapter: Adapter, until: Callable[[], bool], *, timeout: float, poll: float = 0.05) -> Adapter:
    """``adapter.run`` on a thread until ``until()`` holds (the test fails past ``timeout``), then stopped."""
    stop = threading.Event()
    t = threading.Thread(target=adapter.run, args=(stop,), daemon=True)
    t.start()
    deadline = time.monotonic() + timeout
    try:
        while not until():
            assert time.monotonic() < deadline, f"the adapter did not converge: {list(adapter.outcomes)}"
            time.sleep(poll)
    finally:
        stop.set()
        t.join(15)
    return adapter


def _run(server: ApiServerDouble, until: Callable[[], bool], *, timeout: float = 30.0,
         adapter: Adapter | None = None) -> Adapter:
    return run_until(adapter or Adapter(Cluster.at(server.url), in_process(5.0), renew=0.1), until, timeout=timeout)


def _node_of(server: ApiServerDouble, name: str) -> str | None:
    obj = server.get("pods", "default", name)
    return None if obj is None else obj["spec"].get("nodeName")


def _calls(server: ApiServerDouble, verb: str, pattern: str, code: int | None = None) -> list[str]:
    return [path for v, path, c in list(server.calls)
            if v == verb and re.search(pattern, path) and (code is None or c == code)]


def _bound(server: ApiServerDouble, *names: str) -> Callable[[], bool]:
    return lambda: all(_node_of(server, n) for n in names)


def _condition(server: ApiServerDouble, group: str) -> dict[str, Any] | None:
    obj = server.get("podgroups", "default", group)
    return next((c for c in (obj or {}).get("status", {}).get("conditions", []) if c["type"] == CONDITION), None)


def test_a_pdb_refusing_an_eviction_mid_plan_makes_the_adapter_replan(api: ApiServerDouble) -> None:
    _cluster(api, pdb_allowed=5)
    api.fail_next("POST", r"/pods/low-b/eviction$", 429)  # the budget changed after the plan was made
    adapter = _run(api, _bound(api, "train-0", "train-1"))
    assert adapter.outcomes[0].replan.startswith("eviction refused")
    assert len(_calls(api, "POST", r"/pods/low-b/eviction$", 429)) == 1
    assert (_node_of(api, "train-0"), _node_of(api, "train-1")) == ("n1", "n1")


def test_the_preempted_event_names_its_preemptor_as_upstreams_does(api: ApiServerDouble) -> None:
    # issue 50, item 11: upstream's Preempted Event has the preemptor as its related object
    _cluster(api, pdb_allowed=5)
    _run(api, _bound(api, "train-0", "train-1"))
    preempted = [e for e in api.list("events") if e["reason"] == "Preempted"]
    assert [e["regarding"]["name"] for e in preempted] == ["low-b"]
    assert preempted[0]["note"] == "Preempted by gangplace for pod default/train-0 and 1 more on node n1 (cost 2)"
    assert preempted[0]["related"]["name"] == "train-0" and preempted[0]["related"]["kind"] == "Pod"


def test_a_binding_refused_with_409_abandons_the_plan_but_the_other_bindings_complete(api: ApiServerDouble) -> None:
    _cluster(api, gang=4, cpu=500)  # four small pods: all fit on n1 (no eviction) or across the rack
    api.fail_next("POST", r"/pods/train-2/binding$", 409)  # as if another scheduler had bound it
    adapter = _run(api, _bound(api, *(f"train-{k}" for k in range(4))))
    first = adapter.outcomes[0]
    assert first.replan == "default/train-2 bound elsewhere"
    assert first.bound == ["default/train-0", "default/train-1", "default/train-3"]
    assert len(_calls(api, "POST", r"/pods/train-2/binding$", 409)) == 1
    for k in range(4):  # each pod bound exactly once: the replan binds train-2 only
        assert len(_calls(api, "POST", rf"/pods/train-{k}/binding$", 201)) == 1
    assert sorted(e["reason"] for e in api.list("events")).count("Scheduled") == 4


def test_a_dropped_watch_and_410_gone_still_converge(api: ApiServerDouble) -> None:
    for name, rack in (("n0", "r0"), ("n1", "r0")):
        api.put(node(name).rack(rack).cpu_m(4000).build())
    adapter = Adapter(Cluster.at(api.url), in_process(5.0), renew=0.1)
    stop = threading.Event()
    t = threading.Thread(target=adapter.run, args=(stop,), daemon=True)
    t.start()
    try:
        assert adapter.cache.wait_synced(10)
        api.drop_watches()
        api.compact()
        api.put(pod_group("train", 2).topology(RACK).priority(100).build())
        for k in range(2):
            api.put(ours(pod(f"train-{k}").group("train").priority(100).cpu_m(2000)))
        api.drop_watches()
        deadline = time.monotonic() + 30
        while not _bound(api, "train-0", "train-1")():
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        stop.set()
        t.join(10)
    assert adapter.cache.relists >= 1


class Crash(BaseException):
    """The adapter process dies here (not an Exception: nothing may catch it)."""


LEASES = "/apis/coordination.k8s.io/"  # the Lease's writes keep the elector going: not a plan's


class CrashingCluster(Cluster):
    """Dies before its ``after``-th write: every request it sends but a GET and but the Lease's
    counts, whichever Cluster method sends it, so a write the adapter starts making is a crash
    point without this list knowing it. ``made`` holds (method, path) of the writes let through."""

    def __init__(self, other: Cluster, after: int) -> None:
        super().__init__(other.api)
        self.left = after
        self.made: list[tuple[str, str]] = []
        lock = threading.Lock()
        send = self.api.call_api

        def guarded(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            if method != "GET" and LEASES not in url:
                with lock:  # bindings and nominations go out in parallel: exactly `after` pass
                    if self.left <= 0:
                        raise Crash(f"{method} {url}")
                    self.left -= 1
                    self.made.append((method, urlsplit(url).path))
            return send(method, url, *args, **kwargs)

        self.api.call_api = guarded  # type: ignore[method-assign]  # this client's requests only


def die_mid_plan(adapter: Adapter, *, rounds: int, pause: float = 0.0, sync: float = 10.0,
                 may_finish: bool = False) -> None:
    """Run ``adapter`` (on a CrashingCluster) until its cluster kills it, then leave it as a dead
    process leaves: its watch gone, its Lease never released. With ``may_finish`` a run that
    never reaches the fatal write counts as dead after ``rounds``; without it the test fails."""
    adapter.cache.start()
    assert adapter.cache.wait_synced(sync)
    with pytest.raises(Crash):
        for _ in range(rounds):
            adapter.elector.try_acquire_or_renew()
            adapter.reconcile()
            time.sleep(pause)
        if may_finish:
            raise Crash("finished without dying")
    adapter.cache.stop()


def _crash_case(put: Callable[[Any], Any]) -> None:
    """builders.gang_scenario (the gang evicts low-b and lands on n1) and a pod no node can take,
    so one plan makes every kind of write: nominations, an eviction, bindings, a pod's
    PodScheduled=False, the group's condition, Events."""
    gang_scenario(put)
    put(ours(pod("huge").cpu_m(64000)))


# the writes one plan of _crash_case makes, in the order of its phases (within a phase they go
# out in parallel): the preemptors nominated, the victim's Event and eviction, each binding
# with its Scheduled Event, the left-out pod's PodScheduled=False, the group's condition
PHASES: tuple[tuple[str, ...], ...] = (
    ("nominate train-0", "nominate train-1"),
    ("event Preempted low-b",),
    ("evict low-b",),
    ("bind train-0", "bind train-1", "event Scheduled train-0", "event Scheduled train-1"),
    ("event FailedScheduling huge", "pod condition huge"),
    ("podgroup condition train",),
)
WRITE_KINDS = tuple(w for phase in PHASES for w in phase)


def _write(r: Request) -> str | None:
    """What a request to the double wrote, as WRITE_KINDS names it; None for a read or the Lease."""
    if r.method not in WRITES or LEASES in r.path:
        return None
    name = r.path.split("/")[-2] if r.path.endswith(("/status", "/binding", "/eviction")) else ""
    body = r.body if isinstance(r.body, dict) else {}
    status = body.get("status") or {}
    if r.path.endswith("/eviction"):
        return f"evict {name}"
    if r.path.endswith("/binding"):
        return f"bind {name}"
    if "/pods/" in r.path and r.path.endswith("/status") and set(status) == {"nominatedNodeName"}:
        return f"nominate {name}"
    if "/pods/" in r.path and r.path.endswith("/status") and set(status) == {"conditions"}:
        return f"pod condition {name}"
    if "/podgroups/" in r.path and r.path.endswith("/status"):
        return f"podgroup condition {name}"
    if r.method == "POST" and r.path.endswith("/events"):
        return f"event {body.get('reason')} {(body.get('regarding') or {}).get('name')}"
    return f"{r.method} {r.path}"  # a write this list does not know: the clean-run test names it


def _writes(server: ApiServerDouble) -> list[tuple[str, int]]:
    return [(w, r.code) for r in server.requests if (w := _write(r)) is not None]


def test_one_plan_makes_exactly_the_writes_the_crash_test_dies_before() -> None:
    """A first clean run of _crash_case: the writes of its one plan, read from the double's call
    log, are WRITE_KINDS, phase by phase. A write the adapter starts making shows here (and is
    a crash point of the next test once WRITE_KINDS names it)."""
    with ApiServerDouble() as server:
        _crash_case(server.put)
        adapter = Adapter(Cluster.at(server.url), in_process(5.0), renew=0.1, identity="clean")
        adapter.cache.start()
        try:
            assert adapter.cache.wait_synced(10) and adapter.elector.try_acquire_or_renew()
            outcome = adapter.reconcile()
        finally:
            adapter.cache.stop()
        assert outcome is not None and outcome.replan == ""
        made = _writes(server)
        assert server.capacity_violations == []
    assert {code for _, code in made} <= {200, 201}, made
    assert sorted(w for w, _ in made) == sorted(WRITE_KINDS), made
    phase_of = {w: i for i, phase in enumerate(PHASES) for w in phase}
    assert [phase_of[w] for w, _ in made] == sorted(phase_of[w] for w, _ in made), made  # phase by phase


@pytest.mark.parametrize("after", range(len(WRITE_KINDS) + 1),
                         ids=[f"before-{w.replace(' ', '-')}" for w in WRITE_KINDS] + ["clean"])
def test_killed_before_any_write_and_restarted_it_makes_each_write_once_and_evicts_nothing_extra(
        api: ApiServerDouble, after: int) -> None:
    """The first process dies right before its ``after``-th write (the last id: it makes them
    all); a second one, after the Lease expires, finishes the plan from what the cluster shows.
    Across both: each pod bound once, nominated once, low-b evicted once, each condition written
    once, no pod's Scheduled Event twice, every write answered 2xx, no node overcommitted."""
    _crash_case(api.put)
    cluster = CrashingCluster(Cluster.at(api.url), after)
    crashing = Adapter(cluster, in_process(5.0), renew=0.1, identity="first", lease_duration=1)
    die_mid_plan(crashing, rounds=3, may_finish=after == len(WRITE_KINDS))
    assert len(cluster.made) == after and len(_writes(api)) == after  # the crash point is that write
    second = Adapter(Cluster.at(api.url), in_process(5.0), renew=0.1, identity="second")  # after the lease expires
    _run(api, lambda: _bound(api, "train-0", "train-1")() and _condition(api, "train") is not None and any(
        c["type"] == "PodScheduled" for c in api.get("pods", "default", "huge")["status"].get("conditions", [])),
        adapter=second)
    time.sleep(0.3)  # the second process's later reconciles (its cache catching up) write nothing more
    made = _writes(api)
    assert {code for _, code in made} <= {200, 201}, made
    once = [w for w in WRITE_KINDS if not w.startswith("event")]
    assert sorted(w for w, _ in made if not w.startswith("event")) == sorted(once), made
    scheduled = [w for w, _ in made if w.startswith("event Scheduled")]
    assert len(scheduled) == len(set(scheduled)), made  # one died after its binding: its Event may be lost
    assert all(api.get("pods", "default", p) is not None for p in ("low-a", "keep", "vip"))
    assert api.get("pods", "default", "low-b") is None


def test_the_lease_is_renewed_on_its_period_not_on_every_change(api: ApiServerDouble) -> None:
    _cluster(api)
    adapter = Adapter(Cluster.at(api.url), in_process(5.0), renew=600.0, identity="a")
    _run(api, lambda: _bound(api, "train-0", "train-1")() and _condition(api, "train") is not None,
         adapter=adapter)
    # the cache saw dozens of changes (evictions, bindings, kubelet starts, events): one acquire
    # (GET + POST), then the release on shutdown (GET + PUT), no renewal in between
    lease = r"/namespaces/kube-system/leases"
    assert len(_calls(api, "POST", lease)) == 1 and len(_calls(api, "PUT", lease)) == 1
    assert len(_calls(api, "GET", lease)) == 2
    assert api.get("leases", "kube-system", "gangplace-adapter")["spec"]["holderIdentity"] == ""


def test_the_lease_is_renewed_while_a_plan_is_being_made(api: ApiServerDouble) -> None:
    # the solve returns only after the lease was renewed three times during it: a solve longer
    # than the lease duration does not let a standby take over mid-plan
    _cluster(api)
    lease = r"/namespaces/kube-system/leases/gangplace-adapter$"
    inner = in_process(5.0)

    def slow_solve(objects: list[dict[str, Any]]) -> Any:
        before = len(_calls(api, "PUT", lease, 200))
        assert api.wait_until(lambda: len(_calls(api, "PUT", lease, 200)) >= before + 3, timeout=20)
        return inner(objects)

    adapter = Adapter(Cluster.at(api.url), slow_solve, renew=0.1, identity="a")
    _run(api, _bound(api, "train-0", "train-1"), adapter=adapter)
    assert len(adapter.outcomes) >= 1 and adapter.outcomes[0].bound == ["default/train-0", "default/train-1"]


def test_dry_run_prints_the_plan_and_writes_nothing(api: ApiServerDouble) -> None:
    _cluster(api)
    before = len(api.calls)
    out = io.StringIO()
    assert dry_run(Adapter(Cluster.at(api.url), in_process(5.0)), out) == 0
    plan = json.loads(out.getvalue())
    assert [b["node"] for b in plan["bindings"]] == ["n1", "n1"]
    assert [e["pod"] for e in plan["evictions"]] == ["default/low-b"]
    assert [c for c in list(api.calls)[before:] if c[0] in WRITES] == []
    assert _node_of(api, "train-0") is None and api.get("pods", "default", "low-b") is not None


def test_dra_claims_are_created_from_templates_and_allocated_before_binding(api: ApiServerDouble) -> None:
    from tests.dra_builders import two_gpu_gang

    two_gpu_gang(api.put)
    _run(api, _bound(api, "train-0", "train-1"))
    devices = []
    for k in range(2):
        c = api.get("resourceclaims", "default", f"train-{k}-gpu")
        assert c is not None and c["status"]["reservedFor"][0]["name"] == f"train-{k}"
        devices += [r["device"] for r in c["status"]["allocation"]["devices"]["results"]]
        statuses = api.get("pods", "default", f"train-{k}")["status"]["resourceClaimStatuses"]
        assert statuses == [{"name": "gpu", "resourceClaimName": f"train-{k}-gpu"}]
    assert sorted(devices) == ["gpu-0", "gpu-1"]


def test_a_group_shared_claim_with_two_requests_is_written_whole_and_named_in_the_group_status(
        api: ApiServerDouble) -> None:
    from adapter.cache import WatchCache
    from tests.dra_builders import DRIVER, claim_template, device_class, gpu_slice, group_claims, request, with_claims

    api.put(node("n0").rack("r0").cpu_m(8000).build())
    api.put(gpu_slice("n0", 4).build())
    api.put(device_class("gpu", f'device.driver == "{DRIVER}"').build())
    api.put(claim_template("pair", request("a", count=1), request("b", count=1)).build())
    api.put(claim_template("one", request("gpu", count=1)).build())
    api.put(group_claims(pod_group("train", 2).priority(100), shared="pair").build())
    for k in range(2):
        api.put(ours(with_claims(pod(f"train-{k}").group("train").priority(100).cpu_m(1000), shared="pair", own="one")))
    _run(api, _bound(api, "train-0", "train-1"))
    shared = api.get("resourceclaims", "default", "train-shared")
    assert shared is not None
    results = shared["status"]["allocation"]["devices"]["results"]
    assert sorted(r["request"] for r in results) == ["a", "b"]  # both requests, one write
    assert [(r["resource"], r["name"]) for r in shared["status"]["reservedFor"]] == [("podgroups", "train")]
    group = api.get("podgroups", "default", "train")
    assert group["status"]["resourceClaimStatuses"] == [{"name": "shared", "resourceClaimName": "train-shared"}]
    devices = [r["device"] for r in results]
    for k in range(2):
        own = api.get("resourceclaims", "default", f"train-{k}-own")
        devices += [r["device"] for r in own["status"]["allocation"]["devices"]["results"]]
        assert api.get("pods", "default", f"train-{k}")["status"]["resourceClaimStatuses"] == [
            {"name": "own", "resourceClaimName": f"train-{k}-own"}]
    assert sorted(devices) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    # what the next plan reads: the group's claim is the allocated one, not a claim still to make
    cache = WatchCache(Cluster.at(api.url))
    cache.start()
    try:
        assert cache.wait_synced(10)
        snap = reading.read(cache.objects())
    finally:
        cache.stop()
    uses = {c.name: (c.claim, c.shared_by) for c in snap.dra.pod_claims["default/train-0"]}
    assert uses["shared"] == ("default/train-shared", "default/train")
    assert snap.dra.claims["default/train-shared"].allocation


def test_a_replica_that_loses_its_lease_mid_plan_stops_before_binding(api: ApiServerDouble) -> None:
    from adapter.cache import WatchCache
    from adapter.controller import Executor
    from solver.kube.selection import select

    _cluster(api)
    cache = WatchCache(Cluster.at(api.url))
    cache.start()
    try:
        assert cache.wait_synced(10)
        sel = select(cache.objects(), "gangplace")
    finally:
        cache.stop()
    plan = in_process(5.0)(sel.objects)
    assert [e.pod for e in plan.evictions] == ["default/low-b"] and len(plan.bindings) == 2
    checks = iter([True, False])  # leading at the eviction, lost by the time the victim is gone
    outcome = Executor(Cluster.at(api.url), leading=lambda: next(checks)).execute(plan, sel.objects)
    assert (outcome.replan, outcome.evicted, outcome.bound) == ("the lease was lost", ["default/low-b"], [])
    assert not _calls(api, "POST", r"/binding$") and not _calls(api, "PATCH", r"podgroups/[^/]+/status$")
    # the preemptors were marked while it led (as upstream's preemption nominates them)
    assert sorted(_calls(api, "PATCH", r"/pods/train-\d/status$")) == [
        "/api/v1/namespaces/default/pods/train-0/status", "/api/v1/namespaces/default/pods/train-1/status"]


def test_a_victim_recreated_under_its_name_counts_as_gone(api: ApiServerDouble) -> None:
    # a StatefulSet recreates its pod under the same name: the new pod (another uid) is not the
    # victim, so the adapter binds without waiting out its timeout
    _cluster(api)
    api.kubelet_paused = True  # low-b stays terminating until the test replaces it
    old_uid = api.get("pods", "default", "low-b")["metadata"]["uid"]
    adapter = Adapter(Cluster.at(api.url), in_process(5.0), renew=0.1)
    stop = threading.Event()
    t = threading.Thread(target=adapter.run, args=(stop,), daemon=True)
    t.start()
    try:
        assert api.wait_until(lambda: _calls(api, "POST", r"/pods/low-b/eviction$", 201), timeout=30)
        api.delete("pods", "default", "low-b")
        api.put(pod("low-b").cpu_m(3000).priority(1).label("app", "batch").build())  # pending, new uid
        assert api.wait_until(_bound(api, "train-0", "train-1"), timeout=30)
    finally:
        stop.set()
        t.join(10)
    assert api.get("pods", "default", "low-b")["metadata"]["uid"] != old_uid
    assert adapter.outcomes[0].replan == "" and adapter.outcomes[0].bound == ["default/train-0", "default/train-1"]


def test_a_namespace_selector_reads_the_namespaces_the_adapter_watches(api: ApiServerDouble) -> None:
    """A required pod affinity whose namespaceSelector (team=ml) reaches a running pod in
    namespace ml only: the adapter places the pod beside it, as from a captured snapshot; with
    Namespaces unwatched the selector would match no namespace and the pod stay pending."""
    api.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "labels": {"team": "ml"}}})
    for n in ("n0", "n1"):
        api.put(node(n).cpu_m(4000).build())
    db = pod("db").on("n1").cpu_m(100).build()
    db["metadata"].update(namespace="ml", labels={"app": "db"})
    api.put(db)
    near = ours(pod("near").cpu_m(100))
    near["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "db"}}, "namespaceSelector": {"matchLabels": {"team": "ml"}},
        "topologyKey": "kubernetes.io/hostname"}]}}
    api.put(near)
    _run(api, _bound(api, "near"))
    assert _node_of(api, "near") == "n1"
    assert _calls(api, "GET", r"^/api/v1/namespaces($|\?)")  # listed


def test_a_settled_groups_condition_is_written_once_while_the_cache_lags() -> None:
    """record_settled writes a PodGroup's condition when its pods are all bound and it shows
    none; the next reconcile, from a watch cache that does not show it yet, must not write it
    again (a fresh-clone CI run on a busy machine once saw the condition written twice)."""
    from typing import cast

    from adapter.controller import Executor

    written: list[tuple[str, str]] = []

    class Recording:
        def set_podgroup_condition(self, namespace: str, name: str, condition: dict[str, Any]) -> None:
            written.append((namespace, name))

    group = {"kind": "PodGroup", "metadata": {"namespace": "default", "name": "g", "uid": "u1"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}, "status": {}}
    member = {"kind": "Pod", "metadata": {"namespace": "default", "name": "p"},
              "spec": {"schedulingGroup": {"podGroupName": "g"}, "nodeName": "n1", "schedulerName": "gangplace"}}
    executor = Executor(cast(Cluster, Recording()))
    for _ in range(3):  # the same stale view, three reconciles
        executor.record_settled([group, member], "gangplace")
    assert written == [("default", "g")]
    shown = {**group, "status": {"conditions": [{"type": CONDITION, "status": "True"}]}}
    executor.record_settled([shown, member], "gangplace")
    assert not executor.settled  # shown: nothing left to remember
