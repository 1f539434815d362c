"""Read recorded snapshots from disk: a JSON List, multi-document YAML, or a directory.

The only module of ``solver`` that reads snapshot files (and parses snapshot bytes). What it
refuses before anything is built, each with one message naming the source:

- bytes that are not UTF-8;
- nesting deeper than the parser's recursion allows (JSON or YAML);
- YAML whose aliases would expand past ``MAX_YAML_NODES`` nodes or past a byte budget of a
  few times the input (``expansion_budget``; an "alias bomb": a few hundred bytes that grow to
  gigabytes, by many nodes or by long strings repeated), judged on the composed graph before
  it is expanded, as go-yaml refuses "excessive aliasing" for kube-apiserver. JSON has no
  aliases: what it parses to grows with its size, which the caller bounds (the service's
  ``--max-message-mb``);
- strings holding a lone surrogate (a JSON ``"\\ud800"``), which no UTF-8 output can carry.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from solver.core.errors import SnapshotInvalidError
from solver.core.snapshot import ClusterSnapshot, ExpectedPod
from solver.kube.expected import expected_pods
from solver.kube.objects import encodable, ident_of

SUFFIXES = (".json", ".yaml", ".yml")
MAX_YAML_NODES = 10_000_000  # a 15,000-node snapshot is ~5 million YAML nodes
# YAML aliases may expand the input to EXPANSION_FACTOR times its bytes plus EXPANSION_SLACK
# (``expansion_budget``); a node counts NODE_BYTES besides a scalar's text
EXPANSION_FACTOR, EXPANSION_SLACK, NODE_BYTES = 8, 1 << 20, 16
# libyaml's parser when PyYAML was built with it (the wheels are): 10x the pure-Python one
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SURROGATE_ESCAPE = re.compile(r"\\[uU]0{0,4}[dD][89a-fA-F][0-9a-fA-F]{2}")


def parse_documents(text: str, source: str, fmt: str) -> list[Any]:
    """The objects of a JSON document (``fmt`` "json") or of multi-document YAML."""
    try:
        if fmt == "json":
            docs = [json.loads(text)]
        else:
            if "*" in text and "&" in text:  # aliases need anchors: only then can it expand
                _check_expansion(text, source)
            docs = [doc for doc in yaml.load_all(text, Loader=_YAML_LOADER) if doc is not None]
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        if "maximum nesting depth" in str(exc):  # libyaml's limit (1,000 levels)
            raise SnapshotInvalidError(source, "", f"not valid {fmt.upper()}: nested too deeply") from None
        raise SnapshotInvalidError(source, "", f"not valid {fmt.upper()}: {_one_line(exc)}") from exc
    except RecursionError:
        raise SnapshotInvalidError(source, "", f"not valid {fmt.upper()}: nested too deeply") from None
    if _SURROGATE_ESCAPE.search(text):
        _check_text(docs, source)
    return docs


def _one_line(exc: Exception) -> str:
    """A parser's error on one line: PyYAML's spans four (context, its mark, problem, its mark)."""
    if isinstance(exc, yaml.MarkedYAMLError):
        parts = [exc.context, exc.problem]
        mark = exc.problem_mark or exc.context_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        return ": ".join(p for p in parts if p) + where
    return " ".join(str(exc).split())


def expansion_budget(text: str) -> int:
    """Bytes the YAML documents of ``text`` may expand to through aliases: a snapshot without
    aliases expands to its own size, so a few times the input is room enough for any honest
    use of anchors, and far below what an alias bomb reaches."""
    return EXPANSION_FACTOR * len(text.encode("utf-8", "surrogatepass")) + EXPANSION_SLACK


def _check_expansion(text: str, source: str) -> None:
    """Count the nodes and bytes the YAML documents expand to, aliases counted at their full
    size: at most ``MAX_YAML_NODES`` nodes and ``expansion_budget(text)`` bytes (a scalar its
    length plus ``NODE_BYTES``, a collection ``NODE_BYTES``)."""
    sizes: dict[int, tuple[int, int]] = {}

    def size(node: yaml.Node) -> tuple[int, int]:
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = (1, NODE_BYTES)  # a recursive alias counts once
        nodes, size_bytes = 1, NODE_BYTES
        if isinstance(node, yaml.ScalarNode):
            size_bytes += len(node.value)
        elif isinstance(node, yaml.SequenceNode):
            for child in node.value:
                n, b = size(child)
                nodes, size_bytes = nodes + n, size_bytes + b
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                (kn, kb), (vn, vb) = size(k), size(v)
                nodes, size_bytes = nodes + kn + vn, size_bytes + kb + vb
        sizes[id(node)] = (nodes, size_bytes)
        return nodes, size_bytes

    budget = expansion_budget(text)
    nodes = size_bytes = 0
    for doc in yaml.compose_all(text, Loader=_YAML_LOADER):
        # an alias never crosses documents, and a document's nodes are freed once the next is
        # composed: their ids are reused, so the sizes known by id are one document's only
        sizes.clear()
        if doc is not None:
            n, b = size(doc)
            nodes, size_bytes = nodes + n, size_bytes + b
        if nodes > MAX_YAML_NODES:
            raise SnapshotInvalidError(source, "", f"YAML aliases expand past {MAX_YAML_NODES} nodes")
        if size_bytes > budget:
            raise SnapshotInvalidError(source, "", f"YAML aliases expand past {budget} bytes "
                                                   f"({EXPANSION_FACTOR} times the input, plus {EXPANSION_SLACK})")


def _check_text(value: Any, source: str) -> None:
    """Every string (keys too) encodes as UTF-8; walked only when the text has a surrogate escape.
    The error names the object (the nearest mapping with a kind and metadata) and the field."""
    stack: list[tuple[Any, str, str]] = [(value, source, "")]
    while stack:
        cur, obj, field = stack.pop()
        if isinstance(cur, str):
            try:
                cur.encode("utf-8")
            except UnicodeEncodeError:
                raise SnapshotInvalidError(obj, field, f"a lone surrogate in the string {cur!r}") from None
        elif isinstance(cur, dict):
            if "kind" in cur and "metadata" in cur:
                obj, field = ident_of(cur), ""
            for k, v in cur.items():
                key = k if isinstance(k, str) and encodable(k) else "?"
                path = f"{field}.{key}" if field else key
                stack.append((k, obj, f"{path} (the key)"))
                stack.append((v, obj, path))
        elif isinstance(cur, list):
            stack.extend((v, obj, f"{field}[{i}]") for i, v in enumerate(cur))


def read_documents(path: Path) -> list[Any]:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SnapshotInvalidError(str(path), "", f"not UTF-8: {exc}") from exc
    return parse_documents(text, str(path), path.suffix[1:])


def documents_from_bytes(data: bytes, source: str = "request") -> list[Any]:
    """The documents of bytes sent whole (gRPC, standard input): a JSON List or multi-document
    YAML (JSON is YAML)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SnapshotInvalidError(source, "", f"not UTF-8: {exc}") from exc
    return parse_documents(text, source, "json" if text.lstrip()[:1] in ("{", "[") else "yaml")


def nothing_to_plan(snapshot: ClusterSnapshot) -> str:
    """Why ``snapshot`` holds nothing to plan ("" when it holds a Node or a Pod): an empty or
    comment-only input is bad input for the CLI and the service alike, never an empty plan."""
    if snapshot.nodes or snapshot.pods:
        return ""
    held = ", ".join(f"{n} {k}" for k, n in sorted(snapshot.skipped_kinds.items()))
    return "no Node and no Pod to plan" + (f" (it holds {held})" if held else "")


def snapshot_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    if not path.exists():
        raise SnapshotInvalidError(str(path), "", "no such file or directory")
    return [path]


def load_documents(path: str | Path) -> list[Any]:
    """The documents of a snapshot file, or of every snapshot file of a directory."""
    docs: list[Any] = []
    for file in snapshot_files(Path(path)):
        docs.extend(read_documents(file))
    return docs


def load_expected_pods(path: str | None) -> tuple[ExpectedPod, ...]:
    """``--expected-pods FILE`` (docs/fragmentation.md), read; none without a path. The device
    classes are checked against the snapshot when a plan reads the devices."""
    if not path:
        return ()
    return expected_pods(read_documents(Path(path)), source=path)
