"""`gangplace replan`: sharding covers every snapshot once; reports are exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver import api, cli, reading, replan
from solver.kube import loader

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = [ROOT / "examples", ROOT / "tests" / "data" / "bench"]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 8])
def test_every_snapshot_goes_to_exactly_one_shard(count: int) -> None:
    files = sorted(f for d in SNAPSHOTS for f in loader.snapshot_files(d))
    shards = [replan.shard(files, i, count) for i in range(count)]
    assert sorted(f for s in shards for f in s) == files
    assert sum(len(s) for s in shards) == len(files)


@pytest.mark.parametrize("text, reason", [("4/4", "need 0 <= I < N"), ("x", "expected I/N"), ("0/0", "need 0")])
def test_a_bad_shard_is_an_error(text: str, reason: str) -> None:
    with pytest.raises(replan.ShardError, match=reason):
        replan.parse_shard(text)


def test_the_dra_example_report_gives_admissions_evictions_and_fragmentation() -> None:
    path = ROOT / "examples" / "dra-gpus.yaml"
    snap = reading.load(path)
    body = replan.report("dra-gpus", snap, api.plan(snap))
    assert body["admitted"] == ["default/trainer"] and body["notAdmitted"] == {}
    assert body["evictions"] == ["default/infer-b"] and body["preemptionCost"] == 11.0 and body["gap"] == 0.0
    # r0: gpu-node-0 has 3 of 8 held, gpu-node-1 1 of 8; r1: gpu-node-2 all free
    assert body["fragmentationBefore"] == {"r0": {"freeGpus": 12, "wholeNodes": 0, "fragmentedGpus": 12},
                                           "r1": {"freeGpus": 8, "wholeNodes": 1, "fragmentedGpus": 0}}
    # after: two trainers on gpu-node-2, one on each r0 node (infer-b's 2 GPUs freed)
    assert body["fragmentationAfter"] == {"r0": {"freeGpus": 6, "wholeNodes": 0, "fragmentedGpus": 6},
                                          "r1": {"freeGpus": 0, "wholeNodes": 0, "fragmentedGpus": 0}}


def test_replan_command_writes_one_report_per_snapshot_of_its_shard(tmp_path: Path) -> None:
    files = sorted(f for d in SNAPSHOTS for f in loader.snapshot_files(d))
    for i in range(2):
        assert cli.main(["replan", *map(str, SNAPSHOTS), "--shard", f"{i}/2", "--out", str(tmp_path / str(i)),
                         "--time-limit", "20"]) == 0
    written = {p.name: i for i in range(2) for p in (tmp_path / str(i)).glob("*.json")}
    assert sorted(written) == sorted(f"{f.stem}.json" for f in files)
    report = json.loads((tmp_path / str(written["gang-preemption.json"]) / "gang-preemption.json").read_text())
    assert report["status"] == "OPTIMAL" and report["admitted"] == ["default/train"]
    assert report["evictions"] == ["default/batch-1", "default/batch-2", "default/infer-0", "default/infer-1"]
