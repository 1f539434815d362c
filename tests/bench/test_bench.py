"""`gangplace bench` end to end on the shipped examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver import cli

ROOT = Path(__file__).resolve().parent.parent.parent


def test_bench_prints_the_table_and_writes_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results.jsonl"
    plot = tmp_path / "bench.png"
    assert cli.main(["bench", str(ROOT / "examples"), "--repeat", "2", "--out", str(out), "--plot", str(plot)]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].startswith("case ")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["case"] for r in rows] == ["composite-zone-rack", "gang-preemption"]
    for row in rows:
        assert row["verified"] is True and row["status"] == "OPTIMAL" and row["repeat"] == 2
        assert row["worseThanBaseline"] is False
        assert {"ortools", "kubernetes", "gangplace", "python"} <= set(row["versions"])
        assert row["gangplace"]["placedPods"] == row["baseline"]["placedPods"] == 4
    gp = next(r for r in rows if r["case"] == "gang-preemption")
    assert gp["gangplace"]["preemptionCost"] == 404.0 and gp["costRatio"] == 1.0
    assert plot.stat().st_size > 1000 and plot.read_bytes()[:4] == b"\x89PNG"


def test_bench_without_cases_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench"]) == 2
    assert "needs snapshots or --suite" in capsys.readouterr().err
