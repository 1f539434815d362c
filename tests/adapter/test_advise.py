"""The advisor (issue 49, the plan ready before the cycle asks): it watches the API server double,
plans on every change, and answers ``Advise`` from memory, over a real gRPC server on loopback.
Exact answers: the gang's pods on the verified plan's nodes, its victims, and no advice where the
plan has none (not planned yet, a newer object than the plan saw, a workload it does not hold)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from adapter.advise import Advisor, serve, workloads_of
from adapter.cache import WatchCache
from adapter.cluster import Cluster
from adapter.main import in_process
from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc
from tests.apiserver import ApiServerDouble
from tests.builders import composite, gang_scenario, node, ours, pod, pod_group
from tests.grpc.test_tls import write_pki


@contextmanager
def advising(api: ApiServerDouble, **kw: Any) -> Iterator[Advisor]:
    """An advisor of gangplace's pods over a watch of the double, synced; its watch ended after."""
    cache = WatchCache(Cluster.at(api.url))
    cache.start()
    try:
        assert cache.wait_synced(10)
        yield Advisor(cache, in_process(5.0), scheduler_name="gangplace", **kw)
    finally:
        cache.stop()


@pytest.fixture()
def advisor(api: ApiServerDouble) -> Iterator[Advisor]:
    gang_scenario(api.put)
    with advising(api) as advisor:
        yield advisor


def _ask(advisor: Advisor, kind: str = "PodGroup", name: str = "train", rv: str = "") -> pb.AdviseResponse:
    return advisor.advise(kind, "default", name, rv)


def test_no_advice_before_the_first_plan(advisor: Advisor) -> None:
    answer = _ask(advisor)
    assert not answer.planned and answer.reason == "no plan yet" and list(answer.bindings) == []


def test_the_gang_is_advised_onto_the_plans_nodes_with_its_victims(advisor: Advisor, api: ApiServerDouble) -> None:
    advised = advisor.plan_once()
    assert advised is not None and advised.plan.status == "OPTIMAL"
    answer = _ask(advisor)
    # the plan (verified by api.plan): both gang pods on n1 once low-b is gone (builders.gang_scenario)
    assert answer.planned and answer.status == "OPTIMAL"
    assert {(b.pod, b.node) for b in answer.bindings} == {("default/train-0", "n1"), ("default/train-1", "n1")}
    assert [(e.pod, e.node) for e in answer.evictions] == [("default/low-b", "n1")]
    assert answer.resource_version == api.get("podgroups", "default", "train")["metadata"]["resourceVersion"]
    assert answer.covered and answer.age_seconds == 0.0  # the plan is of the latest state seen


def test_age_is_how_long_the_cluster_has_been_ahead_of_the_plan_and_covered_what_it_considered(
        advisor: Advisor, api: ApiServerDouble) -> None:
    advisor.plan_once()
    assert _ask(advisor).age_seconds == 0.0
    generation = advisor.cache.generation
    api.put(ours(pod("late").cpu_m(500).priority(50)))  # arrives after the plan
    deadline = time.monotonic() + 10
    while advisor.cache.generation == generation:
        assert time.monotonic() < deadline, "the watch did not see the new pod"
        time.sleep(0.02)
    time.sleep(0.3)
    answer, late = _ask(advisor), _ask(advisor, kind="Pod", name="late")
    assert answer.planned and answer.covered and answer.age_seconds >= 0.3
    assert not late.planned and not late.covered and late.reason == "Pod/default/late is not in the plan"
    advisor.plan_once()
    answer, late = _ask(advisor), _ask(advisor, kind="Pod", name="late")
    assert answer.age_seconds == 0.0 and late.covered and late.planned


def test_a_newer_object_than_the_plan_saw_gets_no_advice(advisor: Advisor) -> None:
    advisor.plan_once()
    seen = _ask(advisor).resource_version
    assert _ask(advisor, rv=seen).planned
    newer = str(int(seen) + 1)
    answer = _ask(advisor, rv=newer)
    assert not answer.planned
    assert answer.reason == f"the plan was made from PodGroup/default/train at resourceVersion {seen}, before {newer}"


def test_a_workload_the_plan_does_not_hold_gets_no_advice(advisor: Advisor) -> None:
    advisor.plan_once()
    answer = _ask(advisor, name="other")
    assert not answer.planned and answer.reason == "PodGroup/default/other is not in the plan"
    assert not _ask(advisor, kind="Pod", name="low-a").planned  # running: not a workload of the plan


def test_the_advisor_replans_when_the_watch_sees_a_change(advisor: Advisor, api: ApiServerDouble) -> None:
    stop = threading.Event()
    worker = threading.Thread(target=advisor.run, args=(stop,), kwargs={"wait": 0.1}, daemon=True)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while not _ask(advisor).planned:
            assert time.monotonic() < deadline, "no plan from the watch"
            time.sleep(0.05)
        before = advisor.plans
        api.put(ours(pod("solo").cpu_m(500).priority(50)))  # a standalone pending pod of ours
        while not _ask(advisor, kind="Pod", name="solo").planned:
            assert time.monotonic() < deadline, "the change was not planned"
            time.sleep(0.05)
        assert advisor.plans > before
        answer = _ask(advisor, kind="Pod", name="solo")
        assert [b.pod for b in answer.bindings] == ["default/solo"]
        assert answer.plan == advisor.plans > before  # the plugin asks a held group again on a new number
    finally:
        stop.set()
        worker.join(10)


def test_advise_over_grpc_answers_from_memory_and_refuses_a_bad_kind(advisor: Advisor) -> None:
    advisor.plan_once()
    server, port = serve(advisor)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.PlacementServiceStub(channel)
            answer = stub.Advise(pb.AdviseRequest(kind="PodGroup", namespace="default", name="train"), timeout=5)
            local = _ask(advisor)  # over the wire as in memory
            assert (answer.bindings, answer.evictions, answer.status) == (local.bindings, local.evictions, local.status)
            assert answer.planned and {b.node for b in answer.bindings} == {"n1"}
            with pytest.raises(grpc.RpcError) as err:
                stub.Advise(pb.AdviseRequest(kind="Deployment", namespace="default", name="x"), timeout=5)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            with pytest.raises(grpc.RpcError) as err:  # the advisor does not solve
                stub.Solve(pb.SolveRequest(), timeout=5)
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        server.stop(0)


def test_workloads_are_named_by_their_root_and_a_pod_alone_by_itself() -> None:
    from tests.builders import pod_group

    group = pod_group("train", 2).build()
    group["metadata"]["resourceVersion"] = "7"
    objs = [group, ours(pod("train-0").group("train")), ours(pod("solo")), pod("ran").on("n0").build()]
    pods, versions = workloads_of(objs)
    assert pods == {"PodGroup/default/train": ["default/train-0"], "Pod/default/solo": ["default/solo"]}
    assert versions["PodGroup/default/train"] == "7"


def test_the_adapter_command_advises_on_the_address_it_is_given(api: ApiServerDouble) -> None:
    """``gangplace adapter --advise HOST:PORT``: the watch, a plan, the RPC; SIGTERM ends it with 0."""
    import socket
    import subprocess
    import sys

    gang_scenario(api.put)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "solver.cli", "adapter", "--api-server", api.url, "--in-process",
                             "--scheduler-name", "gangplace", "--advise", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.PlacementServiceStub(channel)
            deadline = time.monotonic() + 60
            while True:
                try:
                    answer = stub.Advise(pb.AdviseRequest(kind="PodGroup", namespace="default", name="train"),
                                         timeout=2, wait_for_ready=True)
                except grpc.RpcError:
                    answer = None
                if answer is not None and answer.planned:
                    break
                assert time.monotonic() < deadline and proc.poll() is None, "no advice from the command"
                time.sleep(0.2)
        assert {(b.pod, b.node) for b in answer.bindings} == {("default/train-0", "n1"), ("default/train-1", "n1")}
        assert not any(verb in ("POST", "PUT", "PATCH", "DELETE") and "/leases" not in path
                       for verb, path, _ in list(api.calls)), "the advisor wrote to the cluster"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()


def test_a_grouped_pod_named_alone_is_answered_with_its_workloads_advice(advisor: Advisor) -> None:
    """kube-scheduler's PreFilter knows a pod, not its group's root: the answer is the gang's."""
    advisor.plan_once()
    answer = _ask(advisor, kind="Pod", name="train-1")
    gang = _ask(advisor)
    assert answer.planned and (answer.bindings, answer.evictions) == (gang.bindings, gang.evictions)
    assert {(b.pod, b.node) for b in answer.bindings} == {("default/train-0", "n1"), ("default/train-1", "n1")}


def test_an_address_the_advisor_cannot_listen_on_is_exit_2_naming_the_flag(api: ApiServerDouble) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "solver.cli", "adapter", "--api-server", api.url, "--in-process",
                           "--advise", "127.0.0.1:notaport"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == ("gangplace: --advise 127.0.0.1:notaport: "
                                            "Failed to bind to address 127.0.0.1:notaport")


def test_advise_over_mutual_tls_answers_only_the_client_with_the_token(advisor: Advisor, tmp_path: Path) -> None:
    from solver.service.server import ServerConfig

    pki = write_pki(tmp_path)
    advisor.plan_once()
    server, port = serve(advisor, ServerConfig(
        address="127.0.0.1:0", tls_cert=str(pki / "server.crt"), tls_key=str(pki / "server.key"),
        tls_client_ca=str(pki / "ca.crt"), token_file=str(pki / "token")))
    creds = grpc.ssl_channel_credentials((pki / "ca.crt").read_bytes(), (pki / "client.key").read_bytes(),
                                         (pki / "client.crt").read_bytes())
    ask = pb.AdviseRequest(kind="PodGroup", namespace="default", name="train")
    try:
        with grpc.secure_channel(f"localhost:{port}", creds) as channel:
            stub = pb_grpc.PlacementServiceStub(channel)
            assert stub.Advise(ask, timeout=5, metadata=[("authorization", "Bearer s3cret")]).planned
            with pytest.raises(grpc.RpcError) as err:
                stub.Advise(ask, timeout=5)
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with grpc.insecure_channel(f"localhost:{port}") as plain, pytest.raises(grpc.RpcError) as err:
            pb_grpc.PlacementServiceStub(plain).Advise(ask, timeout=3, metadata=[("authorization", "Bearer s3cret")])
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        server.stop(1).wait()


def test_a_cluster_with_nothing_ready_has_a_current_plan_of_nothing(api: ApiServerDouble) -> None:
    """The plugin holds a group's pods only while its advisor has a current plan; a quiet cluster
    has one too (a plan of nothing), so the first gang to arrive is held for its plan."""
    api.put(node("n1").cpu_m(4000).build())
    with advising(api) as advisor:
        advised = advisor.plan_once()
        assert advised is not None and advised.plan.status == "NOTHING_READY"
        answer = advisor.advise("Pod", "", "anything")
        assert (answer.status, answer.covered, answer.planned, answer.age_seconds) == ("NOTHING_READY", False, False, 0.0)


def test_a_child_group_of_a_tree_is_answered_with_its_own_pods_of_the_trees_plan(api: ApiServerDouble) -> None:
    """kube-scheduler's PlacementGenerate asks for each PodGroup of a CompositePodGroup tree."""
    api.put(node("n1").cpu_m(4000).build())
    api.put(node("n2").cpu_m(4000).build())
    api.put(composite("job", 2).build())
    for child in ("job-a", "job-b"):
        api.put(pod_group(child, 1).parent("job").build())
        api.put(ours(pod(f"{child}-0").group(child).cpu_m(3000)))
    with advising(api) as advisor:
        advisor.plan_once()
        whole = advisor.advise("CompositePodGroup", "default", "job")
        assert whole.planned and sorted(b.pod for b in whole.bindings) == ["default/job-a-0", "default/job-b-0"]
        assert len({b.node for b in whole.bindings}) == 2  # 3 cpu each on 4-cpu nodes
        for child in ("job-a", "job-b"):
            part = advisor.advise("PodGroup", "default", child)
            assert part.planned and part.covered
            assert [(b.pod, b.node) for b in part.bindings] == [(b.pod, b.node) for b in whole.bindings
                                                               if b.pod == f"default/{child}-0"]


def test_a_victim_unit_spread_over_nodes_the_workload_does_not_take_is_evicted_whole(api: ApiServerDouble) -> None:
    """An `all` group is evicted whole: its pod on n2 is a victim of the gang that takes n1 only."""
    for name in ("n1", "n2"):
        api.put(node(name).cpu_m(4000).build())
    api.put(pod_group("eval", 2).disruption_all().priority(1).build())
    api.put(pod("eval-0").on("n1").group("eval").priority(1).cpu_m(3000).build())
    api.put(pod("eval-1").on("n2").group("eval").priority(1).cpu_m(1000).build())
    api.put(pod("big").on("n2").cpu_m(2500).priority(1000).build())  # n2 has no room for the gang either way
    api.put(pod_group("train", 2).priority(100).build())
    for k in range(2):
        api.put(ours(pod(f"train-{k}").group("train").priority(100).cpu_m(2000)))
    with advising(api) as advisor:
        advisor.plan_once()
        answer = advisor.advise("PodGroup", "default", "train")
        assert answer.planned and {b.node for b in answer.bindings} == {"n1"}
        assert sorted((e.pod, e.node) for e in answer.evictions) == [("default/eval-0", "n1"), ("default/eval-1", "n2")]


def _gang_a(api: ApiServerDouble) -> None:
    """Two nodes of 4 cpu and gang a (2 x 2 cpu, priority 100): the plan packs it on n1."""
    for name in ("n1", "n2"):
        api.put(node(name).cpu_m(4000).build())
    api.put(pod_group("a", 2).priority(100).build())
    for k in range(2):
        api.put(ours(pod(f"a-{k}").group("a").priority(100).cpu_m(2000)))


def test_advice_handed_out_is_kept_by_the_next_plan_for_a_while_then_planned_afresh(api: ApiServerDouble) -> None:
    """kube-scheduler may be binding a gang it was just advised on: the next plan takes that
    advice (and its victims' evictions) as decided for HONOUR_SECONDS, so it sends no other
    group to those nodes; a pod still pending after that is planned afresh."""
    from adapter.advise import HONOUR_SECONDS

    _gang_a(api)
    now = [1000.0]
    with advising(api, clock=lambda: now[0]) as advisor:
        advisor.plan_once()
        first = advisor.advise("PodGroup", "default", "a")
        assert first.planned and {b.node for b in first.bindings} == {"n1"}  # packed on the first node
        # b (lower priority) can only go to n1: a fresh plan would move a to n2 to fit both
        api.put(pod_group("b", 1).priority(50).build())
        api.put(ours(pod("b-0").group("b").priority(50).cpu_m(4000).selector("kubernetes.io/hostname", "n1")))
        deadline = time.monotonic() + 10
        while not any(o["metadata"]["name"] == "b-0" for o in advisor.cache.objects() if o["kind"] == "Pod"):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        now[0] += HONOUR_SECONDS / 2
        advisor.plan_once()
        kept = advisor.advise("PodGroup", "default", "a")
        assert [(b.pod, b.node) for b in kept.bindings] == [(b.pod, b.node) for b in first.bindings]
        assert not advisor.advise("PodGroup", "default", "b").planned
        now[0] += HONOUR_SECONDS  # a is still pending: its binding did not happen
        advisor.plan_once()
        moved = advisor.advise("PodGroup", "default", "a")
        assert {b.node for b in moved.bindings} == {"n2"}
        assert [(b.pod, b.node) for b in advisor.advise("PodGroup", "default", "b").bindings] == [("default/b-0", "n1")]


def test_a_pod_made_again_under_an_advised_name_is_a_new_pod_not_decided(api: ApiServerDouble) -> None:
    """Advice is honoured for the pod it was handed out for, by uid: gang a's pods deleted and
    made again at once under the same names (as a StatefulSet or an Indexed Job does) are planned
    afresh, not pinned to the node their namesakes were advised to."""
    from adapter.advise import HONOUR_SECONDS

    _gang_a(api)
    now = [1000.0]
    with advising(api, clock=lambda: now[0]) as advisor:
        advisor.plan_once()
        assert {b.node for b in advisor.advise("PodGroup", "default", "a").bindings} == {"n1"}
        old = {k: api.get("pods", "default", f"a-{k}")["metadata"]["uid"] for k in range(2)}
        for k in range(2):
            api.delete("pods", "default", f"a-{k}")
            api.put(ours(pod(f"a-{k}").group("a").priority(100).cpu_m(2000)))
        # b can only go to n1: a plan free to move the new a-0 and a-1 puts them on n2
        api.put(pod_group("b", 1).priority(50).build())
        api.put(ours(pod("b-0").group("b").priority(50).cpu_m(4000).selector("kubernetes.io/hostname", "n1")))

        def caught_up() -> bool:
            pods = {o["metadata"]["name"]: o["metadata"]["uid"] for o in advisor.cache.objects() if o["kind"] == "Pod"}
            return "b-0" in pods and all(pods.get(f"a-{k}") not in (None, old[k]) for k in range(2))

        deadline = time.monotonic() + 10
        while not caught_up():
            assert time.monotonic() < deadline, "the watch did not see the pods made again"
            time.sleep(0.02)
        now[0] += HONOUR_SECONDS / 2  # the old advice is still within its time
        advisor.plan_once()
        assert {b.node for b in advisor.advise("PodGroup", "default", "a").bindings} == {"n2"}
        assert [(b.pod, b.node) for b in advisor.advise("PodGroup", "default", "b").bindings] == [("default/b-0", "n1")]


def test_honoured_advice_is_answered_with_its_victims_until_they_are_gone(advisor: Advisor, api: ApiServerDouble) -> None:
    """The gang was advised (both pods on n1, low-b evicted); the next plan takes that as decided
    and has nothing left to plan, but the gang's next cycle must still be told to evict low-b."""
    advisor.plan_once()
    first = _ask(advisor)
    assert [e.pod for e in first.evictions] == ["default/low-b"]
    advised = advisor.plan_once()
    assert advised is not None and advised.plan.status == "NOTHING_READY"  # the gang is taken as bound
    again = _ask(advisor)
    assert again.planned and list(again.bindings) == list(first.bindings)
    assert [e.pod for e in again.evictions] == ["default/low-b"]
    api.delete("pods", "default", "low-b")
    deadline = time.monotonic() + 10
    while advisor.cache.get("Pod", "default/low-b") is not None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    advisor.plan_once()
    assert list(_ask(advisor).evictions) == []  # gone: nothing to evict


@pytest.mark.parametrize(("tls", "said"), [
    ({"tls_cert": "server.crt"}, "--advise-tls-cert and --advise-tls-key go together"),
    ({"tls_client_ca": "ca.crt"}, "--advise-tls-client-ca needs --advise-tls-cert and --advise-tls-key"),
    ({"tls_cert": "token", "tls_key": "token"}, "cannot serve TLS on 127.0.0.1:0 with {d}/token and {d}/token: "
                                               "not a usable PEM certificate and key"),
])
def test_tls_options_that_do_not_go_together_or_no_pem_are_refused_naming_them(
        advisor: Advisor, tmp_path: Path, tls: dict[str, str], said: str) -> None:
    """As `gangplace serve` refuses them (solver.service.server.tls), never a plaintext server
    that dropped an option, never a traceback."""
    from solver.service.server import ServerConfig

    pki = write_pki(tmp_path)
    with pytest.raises(OSError) as refused:
        serve(advisor, ServerConfig(address="127.0.0.1:0", **{k: str(pki / v) for k, v in tls.items()}))
    assert str(refused.value) == said.format(d=pki)
