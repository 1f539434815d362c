"""When a run of the real kube-scheduler ends (solver.bench.upstream.wait_until_settled), on
scripted /metrics texts and pod watches with a clock of its own: no control plane here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from solver.bench import upstream
from solver.bench.upstream import SchedulerState, Waiting


def metrics(active: int = 0, backoff: int = 0, unschedulable: int = 0, *, retried: int = 0, scheduled: int = 0,
            podgroup_retried: int = 0, podgroup_preempting: int = 0) -> str:
    """/metrics as kube-scheduler 1.37.2 prints them (the lines the rule reads, and one it does not)."""
    return "\n".join([
        "# HELP scheduler_pending_pods [STABLE] Number of pending pods, by the queue type.",
        f'scheduler_pending_pods{{queue="active"}} {active}',
        f'scheduler_pending_pods{{queue="backoff"}} {backoff}',
        'scheduler_pending_pods{queue="gated"} 0',
        f'scheduler_pending_pods{{queue="unschedulable"}} {unschedulable}',
        f'scheduler_schedule_attempts_total{{profile="default-scheduler",result="scheduled"}} {scheduled}',
        f'scheduler_schedule_attempts_total{{profile="default-scheduler",result="unschedulable"}} {retried}',
        f'scheduler_podgroup_schedule_attempts_total{{profile="default-scheduler",result="unschedulable"}} '
        f"{podgroup_retried}",
        f'scheduler_podgroup_schedule_attempts_total{{profile="default-scheduler",result="waiting_on_preemption"}} '
        f"{podgroup_preempting}",
        'scheduler_unschedulable_pods{plugin="NodeResourcesFit",profile="default-scheduler"} 1',
    ]) + "\n"


@dataclass
class Watch:
    bound: dict[str, tuple[str, float]] = field(default_factory=dict)
    deleted: dict[str, float] = field(default_factory=dict)
    last_change: float = 0.0

    def bind(self, key: str, now: float) -> None:
        if key not in self.bound:
            self.bound[key] = ("n1", now)
            self.last_change = now


@dataclass
class Scheduler:
    """A clock of its own, and the scheduler's metrics at each moment from ``at(now, watch)``,
    which may bind or delete as time passes."""

    at: Callable[[float, Watch], str]
    watch: Watch = field(default_factory=Watch)
    now: float = 0.0
    text: str = ""

    def __post_init__(self) -> None:
        self.text = self.at(0.0, self.watch)

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.text = self.at(self.now, self.watch)

    def scheduler_metrics(self) -> str:
        return self.text


def run(at: Callable[[float, Watch], str], *, pods: int = 1, settle: float = 10.0, cap: float = 300.0,
        reports: list[Waiting] | None = None) -> tuple[bool, float]:
    """(settled, when the wait ended)"""
    scheduler = Scheduler(at)
    keys = {f"default/p{i}" for i in range(pods)}
    settled = upstream.wait_until_settled(scheduler, scheduler.watch, keys, settle=settle, deadline=cap,
                                          report=None if reports is None else reports.append,
                                          clock=scheduler.clock, sleep=scheduler.sleep)
    return settled, scheduler.now


def test_a_pod_retried_as_unschedulable_ends_the_run_at_the_settle_time() -> None:
    # 64 cpu on a 4-cpu node: retried from the backoff queue every 3 s, never placed; the
    # scheduler is never idle, but only failing
    def at(now: float, _: Watch) -> str:
        return metrics(backoff=1, retried=1 + int(now // 3))

    reports: list[Waiting] = []
    assert run(at, reports=reports) == (True, 10.0)
    assert reports == [Waiting(elapsed=10.0, bound=0, waiting=1, unschedulable=0, phase="retrying unschedulable",
                               quiet=10.0)]


def test_a_gang_retried_as_a_podgroup_settles_too() -> None:
    def at(now: float, _: Watch) -> str:
        return metrics(backoff=2, retried=2 * (1 + int(now // 4)), podgroup_retried=1 + int(now // 4))

    assert run(at, pods=2, settle=3) == (True, 4.0)  # quiet for 3 s, and retried since the start (at 4 s)


def test_a_pod_left_in_the_unschedulable_queue_is_idle_and_settles() -> None:
    assert run(lambda now, _: metrics(unschedulable=1, retried=1)) == (True, 10.0)


def test_the_run_goes_on_while_attempts_succeed_and_ends_a_settle_time_after_the_last() -> None:
    # a pod scheduled (and bound) every 2 s until 30 s, the rest then wait unschedulable
    def at(now: float, watch: Watch) -> str:
        done = min(int(now // 2), 15)
        for i in range(done):
            watch.bind(f"default/p{i}", now)
        return metrics(active=0 if done == 15 else 1, unschedulable=5 if done == 15 else 0, scheduled=done,
                       retried=5 * (done == 15))

    reports: list[Waiting] = []
    assert run(at, pods=20, reports=reports) == (True, 40.0)
    assert [(r.elapsed, r.bound, r.waiting, r.phase) for r in reports] == [
        (10.0, 5, 15, "working"), (20.0, 10, 10, "working"), (30.0, 15, 5, "idle"), (40.0, 15, 5, "idle")]


def test_attempts_that_are_not_failures_keep_the_run_going_though_nothing_is_bound() -> None:
    # a gang waiting at Permit for its last pods: attempts scheduled, no binding until 25 s
    def at(now: float, watch: Watch) -> str:
        if now >= 25:
            watch.bind("default/p0", now)
        return metrics(scheduled=min(int(now // 2), 12), active=int(now < 25))

    assert run(at) == (True, 35.0)


def test_a_gang_waiting_on_preemption_from_its_backoff_queue_is_working_not_retrying() -> None:
    # every 3 s until 30 s an attempt of the gang ends waiting on preemption (its pods back in
    # the backoff queue, never busy when polled, nothing bound yet): progress, not failure;
    # then it only fails, and the run ends the settle time after the last of those attempts
    def at(now: float, _: Watch) -> str:
        preempting = int(min(now, 30) // 3)
        return metrics(backoff=2, podgroup_preempting=preempting, retried=2 * int(now // 3),
                       podgroup_retried=int(now // 3) - preempting)

    reports: list[Waiting] = []
    assert run(at, pods=2, reports=reports) == (True, 40.0)
    assert [(r.elapsed, r.phase, r.quiet) for r in reports] == [
        (10.0, "working", 1.0), (20.0, "working", 2.0), (30.0, "working", 0.0),
        (40.0, "retrying unschedulable", 10.0)]


def test_an_attempt_longer_than_the_settle_time_is_work_and_the_cap_ends_it() -> None:
    # the pod under an attempt the whole time (in no queue), no counter moving: unsettled at the cap
    reports: list[Waiting] = []
    assert run(lambda now, _: metrics(), cap=60, reports=reports) == (False, 60.0)
    assert [(r.elapsed, r.phase) for r in reports] == [(t, "working") for t in (10.0, 20.0, 30.0, 40.0, 50.0, 60.0)]


def test_a_failed_retry_does_not_cover_an_attempt_under_way_now() -> None:
    # under an attempt until 2 s, which fails; in backoff until 3 s; then under an attempt that
    # runs on (in no queue): the failure says nothing of what the scheduler does now
    def at(now: float, _: Watch) -> str:
        return metrics(backoff=int(2 <= now < 3), retried=int(now >= 2))

    assert run(at, cap=100) == (False, 100.0)


def test_the_metrics_are_read_by_queue_and_result() -> None:
    state = SchedulerState.read(metrics(backoff=2, unschedulable=1, retried=7, scheduled=4, podgroup_retried=3))
    assert state.queues == {"active": 0, "backoff": 2, "gated": 0, "unschedulable": 1}
    assert state.attempts == {"scheduled": 4, "unschedulable": 10, "waiting_on_preemption": 0}
    assert (state.retries, state.work, state.busy(3), state.busy(4)) == (10, 4, False, True)
    assert SchedulerState.read(metrics(active=1, unschedulable=3)).busy(3) is True


def test_metrics_refused_for_a_moment_decide_nothing() -> None:
    # kube-scheduler answers /metrics 403 for a moment after its /healthz answers
    import urllib.error

    class Refusing(Scheduler):
        def scheduler_metrics(self) -> str:
            if self.now < 2:
                raise urllib.error.HTTPError("https://127.0.0.1/metrics", 403, "Forbidden", None, None)  # type: ignore[arg-type]
            return super().scheduler_metrics()

    scheduler = Refusing(lambda now, _: metrics(unschedulable=1, retried=1))
    settled = upstream.wait_until_settled(scheduler, scheduler.watch, {"default/p0"}, settle=10, deadline=300,
                                          clock=scheduler.clock, sleep=scheduler.sleep)
    assert (settled, scheduler.now) == (True, 10.0)
