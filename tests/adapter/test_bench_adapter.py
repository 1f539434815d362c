"""scripts/bench_adapter.py on a small cluster: the outcome it times, not the time."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_adapter.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_adapter", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("pdbs", ["loose", "generated"])
def test_the_bench_binds_the_gang_evicting_only_what_the_verified_plan_planned(pdbs: str) -> None:
    r = _bench().run_once(64, pdbs, limit=10.0)
    assert r.gang == 64 and all(r.bound.values()) and len(r.bound) == 64
    assert len({int(n.split("-")[1]) // 16 for n in r.bound.values()}) == 1  # node-NNNNN, 16 a rack: one rack
    assert r.violations == [] and r.replans == []
    assert r.evicted and r.evicted == r.planned
    assert set(r.seconds) == {"total", "to_solve", "solve", "evict", "victim_wait", "bind"}
