"""solver.cel's bounds: the compiled-selector cache by bytes, and evaluation within the
plan's deadline."""

from __future__ import annotations

import gc
import time
import tracemalloc

import pytest

from solver import api, cel
from solver.cel.cache import ByteLru, program_bytes
from solver.core.errors import LimitError
from solver.core.snapshot import Device
from solver.problem.build import build_problem
from solver.service import status as rpc_errors
from tests.builders import node, pod, snapshot
from tests.dra_builders import DRIVER, claim_template, device, device_class, request, resource_slice, with_claims


def _selector(i: int) -> str:
    return f'device.driver == "d{i:03d}.example.com"'  # one shape: each compiles to the same size


def _counting_compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The expressions compiled from now on, in order."""
    compiled: list[str] = []
    real = cel._compile

    def counting(expr: str) -> object:
        compiled.append(expr)
        return real(expr)

    monkeypatch.setattr(cel, "_compile", counting)
    return compiled


def _size(expr: str) -> int:
    program = cel._compile(expr)
    assert isinstance(program, cel.Program)
    return program_bytes(program.runner.ast) + len(expr)


def test_the_cache_holds_at_most_its_limit_and_drops_the_least_recently_used(monkeypatch: pytest.MonkeyPatch) -> None:
    one = _size(_selector(0))
    assert all(_size(_selector(i)) == one for i in (1, 99, 999))
    monkeypatch.setattr(cel, "_COMPILED", ByteLru(5 * one + one // 2))  # room for five
    for i in range(8):
        cel.compile_expression(_selector(i))
    assert cel._COMPILED.keys() == [_selector(i) for i in (3, 4, 5, 6, 7)]
    assert cel.cache_stats() == cel.CacheStats(entries=5, bytes=5 * one, limit=5 * one + one // 2, evicted=3)
    held = cel.compile_expression(_selector(3))  # used again: the most recent now
    cel.compile_expression(_selector(8))
    assert cel._COMPILED.keys() == [_selector(i) for i in (5, 6, 7, 3, 8)]
    assert cel.compile_expression(_selector(3)) is held  # kept, not compiled again
    assert cel.cache_stats().evicted == 4 and cel.cache_stats().bytes == 5 * one
    cel.set_cache_limit(2 * one)
    assert cel._COMPILED.keys() == [_selector(8), _selector(3)] and cel.cache_stats().bytes == 2 * one


def test_a_program_larger_than_the_limit_is_evaluated_but_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cel, "_COMPILED", ByteLru(2000))
    gpu = Device(driver="d001.example.com", pool="p", name="g")
    assert cel.selects(_selector(1), gpu) is True
    assert cel.cache_stats() == cel.CacheStats(entries=0, bytes=0, limit=2000, evicted=0)
    with pytest.raises(cel.CelError, match="syntax error"):
        cel.compile_expression("device.driver ==")  # an error is small: kept
    assert cel._COMPILED.keys() == ["device.driver =="]


@pytest.mark.parametrize("items", [1, 30, 600])
def test_the_program_size_estimate_is_conservative(items: int) -> None:
    # the bytes a compiled program keeps alive, measured, are under the estimate the cache counts
    expr = "device.driver in [" + ",".join(f'"{k}"' for k in range(items)) + "]"
    gc.collect()
    tracemalloc.start()
    try:
        program = cel._compile(expr)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert isinstance(program, cel.Program)
    assert kept <= program_bytes(program.runner.ast) < 1.5 * kept + 30_000


def test_each_question_compiles_its_selectors_once_whatever_the_cache_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    # a cache that keeps nothing: device by device, each of the 6 devices would compile both
    # selectors again; question by question, each is compiled once (and once before, when the
    # snapshot's selectors are compiled under the deadline)
    monkeypatch.setattr(cel, "_COMPILED", ByteLru(0))
    selectors = (f'device.driver == "{DRIVER}"', 'device.attributes["gpu.example.com"].index >= 2')
    snap = snapshot(
        node("n1").cpu_m(8000), device_class("gpu", *selectors),
        resource_slice("s", [device(f"gpu-{i}", index=i) for i in range(6)], node="n1"),
        claim_template("t", request("r", count=1)), with_claims(pod("p").cpu_m(100), gpu="t"))
    compiled = _counting_compiles(monkeypatch)
    monkeypatch.setattr(cel, "_RESULTS", {})
    problem = build_problem(snap).dra
    assert sorted(compiled) == sorted(selectors * 2)
    (slot,) = problem.class_slots[0]
    picked = sorted(d.name for t in slot.eligible[0] for d in problem.types[t].devices)
    assert picked == [f"gpu-{i}" for i in range(2, 6)]


# 10^4 comprehension steps, within the cost limit (estimate 131,150), read for each of 12
# devices that differ in the attribute it reads: ~1.5 s of cel-python a device
_TEN = "[1,2,3,4,5,6,7,8,9,10]"
SLOW = (f'device.attributes["{DRIVER}"].v >= 0 && '
        f"{_TEN}.all(a, {_TEN}.all(b, {_TEN}.all(c, {_TEN}.all(d, a+b+c+d > 0))))")


def test_selectors_past_the_time_limit_end_the_plan_naming_the_selector() -> None:
    cel.compile_expression(SLOW)  # in the cache before the plan starts: this is about evaluating
    snap = snapshot(
        node("n1").cpu_m(8000), device_class("gpu", SLOW),
        resource_slice("s", [device(f"gpu-{i}", v=i) for i in range(12)], node="n1"),
        claim_template("t", request("r", count=1)), with_claims(pod("p").cpu_m(100), gpu="t"))
    start = time.perf_counter()
    with pytest.raises(cel.CelTimeLimitError) as err:
        api.plan(snap, api.PlanOptions(time_limit=1.0))
    took = time.perf_counter() - start
    assert took < 1.0 + 5  # the evaluation checks the clock about every thousand steps (shared machine: generous)
    e = err.value
    assert isinstance(e, LimitError) and not isinstance(e, cel.CelError)
    assert (e.expression, e.limit) == (SLOW, 1.0)
    assert e.device.startswith(f"{DRIVER}/n1/gpu-") and 1 <= e.evaluations <= 12
    assert 0 < e.seconds <= e.total <= took
    assert str(e).startswith("the plan cannot be made within its time limit of 1 s: CEL selectors took too long. "
                             f"Selector {SLOW!r} was evaluating on device {e.device} when the limit passed, after ")
    assert rpc_errors.limit_reason(e) == "CEL_TIME_LIMIT"
    # nothing half-evaluated was kept: with time, the same snapshot plans (each device once more)
    assert not any(k[0] == SLOW and k[1] == (e.device,) for k in cel._RESULTS)


def _long(i: int) -> str:
    """A selector of nearly 10 KiB, different for each ``i``, cheap to evaluate."""
    terms = " || ".join(f'device.driver == "d{j}.example.com"' for j in range(300))[:9900].rsplit(" ||", 1)[0]
    return f'device.driver != "{i}" && ({terms} || device.driver == "{DRIVER}")'


def test_compiling_selectors_is_inside_the_deadline_and_names_where_each_was_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 50: a hundred selectors of 10 KiB took minutes to compile while the snapshot was
    read, before the plan's clock started. Reading now only checks their length; the plan
    compiles them under its deadline, and one that might not end in time is not started."""
    monkeypatch.setattr(cel, "_COMPILED", ByteLru(1 << 30))
    compiled = _counting_compiles(monkeypatch)
    classes = [device_class(f"many-{i}", _long(i)) for i in range(20)]
    snap = snapshot(node("n1").cpu_m(8000), *classes,
                    resource_slice("s", [device(f"gpu-{i}") for i in range(2)], node="n1"),
                    claim_template("t", request("r", count=1, device_class="many-3")),
                    with_claims(pod("p").cpu_m(100), gpu="t"))
    assert compiled == []  # read, not compiled
    assert snap.dra.selectors[_long(7)] == ("DeviceClass/many-7", "spec.selectors[0].cel.expression")
    with pytest.raises(cel.CelTimeLimitError) as err:
        api.plan(snap, api.PlanOptions(time_limit=0.3))
    assert compiled == []  # each would take up to 0.6 s: none was started
    assert str(err.value).startswith(
        "the plan cannot be made within its time limit of 0.3 s: CEL selectors took too long. Selector "
        f"{_long(0)[:200] + '...'!r} (DeviceClass/many-0: spec.selectors[0].cel.expression), ")
    assert "was not compiled: that takes up to 0.6" in str(err.value)
    assert rpc_errors.limit_reason(err.value) == "CEL_TIME_LIMIT"
    # with time, every selector is compiled once, the plan places the pod
    done = api.plan(snap, api.PlanOptions(time_limit=60))
    assert sorted(compiled) == sorted(_long(i) for i in range(20))
    assert [b.pod for b in done.bindings] == ["default/p"]


def test_many_short_evaluations_are_checked_against_the_deadline_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # each evaluation takes well under the thousand steps between two looks at the clock: the
    # count runs on across evaluations, so a run of them past the deadline still stops
    monkeypatch.setattr(cel, "_RESULTS", {})
    expr = f'device.attributes["{DRIVER}"].v >= 0 && [1,2,3,4,5,6,7,8,9,10].all(x, x > 0)'
    gpus = [Device(driver=DRIVER, pool="p", name=f"g{i}", attributes={DRIVER: {"v": i}}) for i in range(200)]
    with cel.within(time.perf_counter() - 1, 0.5), pytest.raises(cel.CelTimeLimitError) as err:
        for gpu in gpus:
            cel.selects(expr, gpu)
    assert err.value.expression == expr and err.value.evaluations < 200
    assert [cel.selects(expr, g) for g in gpus[:3]] == [True] * 3  # no deadline outside the scope
