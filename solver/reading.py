"""One reading of the objects, two readers: the snapshot ``solver.kube`` makes of them (what the
model plans with) and the verifier's own facts (``solver.verify.read``: what every plan is
checked against), side by side in a ``Reading``.

``api.plan`` takes a ``Reading``, so no plan leaves it unchecked by a second reading of the
same objects; ``verify.verify(facts, snapshot, plan)`` takes the facts as an argument. Neither
reader imports the other: this module, above both, joins them. Files and bytes are read here
too (``load``, ``from_bytes``), as ``solver.kube.loader`` turns them into documents.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solver import kube
from solver.core.snapshot import ClusterSnapshot
from solver.gcpause import without_gc
from solver.kube import loader
from solver.verify.read import Facts
from solver.verify.read import read as read_facts


@dataclass(frozen=True, slots=True, kw_only=True)
class Reading(ClusterSnapshot):
    """The snapshot of some objects, and the verifier's facts from the same objects."""

    facts: Facts = field(repr=False, compare=False)


def read(objects: Iterable[Any]) -> Reading:
    """``objects`` read by both readers (SnapshotInvalidError: kube's, naming the object and
    field at fault; the verifier reads only what kube accepted)."""
    snapshot, accepted = kube.read_objects(objects)
    return with_facts(snapshot, read_facts(accepted))


def with_facts(snapshot: ClusterSnapshot, facts: Facts) -> Reading:
    """``snapshot`` (or a changed copy of a reading's) beside ``facts``."""
    fields = {f.name: getattr(snapshot, f.name) for f in dataclasses.fields(ClusterSnapshot) if f.init}
    return Reading(**fields, facts=facts)


def from_bytes(data: bytes, source: str = "request") -> Reading:
    """A snapshot sent as bytes (gRPC, standard input): a JSON List or multi-document YAML."""
    with without_gc():
        return read(loader.documents_from_bytes(data, source))


def load(path: str | Path) -> Reading:
    """A snapshot file, or every snapshot file of a directory, as one reading."""
    with without_gc():
        return read(loader.load_documents(path))
