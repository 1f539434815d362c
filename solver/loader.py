"""Read recorded snapshots from disk: a JSON List, multi-document YAML, or a directory.

The only module of ``solver`` that reads snapshot files (and parses snapshot bytes).
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


def parse_documents(text: str, source: str, fmt: str) -> list[Any]:
    """The objects of a JSON document (``fmt`` "json") or of multi-document YAML."""
    try:
        if fmt == "json":
            return [json.loads(text)]
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise SnapshotInvalidError(source, "", f"not valid {fmt.upper()}: {exc}") from exc


def read_documents(path: Path) -> list[Any]:
    return parse_documents(path.read_text(encoding="utf-8"), str(path), path.suffix[1:])


def snapshot_from_bytes(data: bytes, source: str = "request") -> ClusterSnapshot:
    """A snapshot sent as bytes (gRPC): a JSON List or multi-document YAML (JSON is YAML)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SnapshotInvalidError(source, "", f"not UTF-8: {exc}") from exc
    fmt = "json" if text.lstrip()[:1] in ("{", "[") else "yaml"
    return kube.snapshot_from_objects(parse_documents(text, source, fmt))


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
