"""The real scheduler's outcome scored on the snapshot (``solver.bench.upstream.score``): its own
pod -> node bindings are kept, so the devices it allocated to a pod sit on that pod's node
(issue 50, item 4: identical pods were renamed by the decoder while their devices stayed with
the old names, and the verifier refused a valid outcome)."""

from __future__ import annotations

from pathlib import Path

from solver import api, kube, reading
from solver.bench import upstream
from solver.kube import loader

ROOT = Path(__file__).resolve().parent.parent.parent


def test_a_scheduler_outcome_naming_identical_pods_otherwise_than_the_decoder_is_valid() -> None:
    snapshot = reading.read(kube.flatten(loader.read_documents(ROOT / "examples" / "dra-gpus.yaml")))
    plan = api.plan(snapshot)
    node_of = {b.pod: b.node for b in plan.bindings}
    trainers = sorted(p for p in node_of if "/trainer-" in p)
    a, b = next((x, y) for x in trainers for y in trainers if node_of[x] != node_of[y])
    swap = {a: b, b: a}  # a identical pod bound where the decoder would put the other, its devices with it
    run = upstream.SchedulerRun(
        bindings={swap.get(p, p): n for p, n in node_of.items()}, deleted=[e.pod for e in plan.evictions],
        seconds_to_last_binding=0.0, settled=True,
        allocations=[(swap.get(d.pod, d.pod) if d.pod else d.pod_group, not d.pod, d.claim, d.request, dev)
                     for d in plan.device_allocations for dev in d.devices])
    scored = upstream.score(snapshot, run, dra_preemption=True)  # as api.plan planned it
    assert scored.violations == [] and scored.unplanned == []
    assert {x.pod: x.node for x in scored.plan.bindings} == run.bindings  # the scheduler's own names
    tiers = ("satisfied_workloads", "placed_pods", "pdb_violations", "preemption_cost", "evicted_pods")
    assert [getattr(scored.plan.objective, t) for t in tiers] == [getattr(plan.objective, t) for t in tiers]
