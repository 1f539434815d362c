"""Read recorded snapshots from disk: a JSON List, multi-document YAML, or a directory.

The only module of ``solver`` that reads snapshot files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from solver import kube
from solver.model.errors import SnapshotInvalidError
from solver.model.snapshot import ClusterSnapshot

SUFFIXES = (".json", ".yaml", ".yml")


def read_documents(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".json":
            return [json.loads(text)]
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise SnapshotInvalidError(str(path), "", f"not valid {path.suffix[1:].upper()}: {exc}") from exc


def snapshot_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    if not path.exists():
        raise SnapshotInvalidError(str(path), "", "no such file or directory")
    return [path]


def load_snapshot(path: str | Path) -> ClusterSnapshot:
    docs: list[Any] = []
    for file in snapshot_files(Path(path)):
        docs.extend(read_documents(file))
    return kube.snapshot_from_objects(docs)
