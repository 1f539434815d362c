"""The Alibaba GPU cluster trace (cluster-trace-gpu-v2023, "openb") as Kubernetes object dicts.

The trace (github.com/alibaba/clusterdata, ``cluster-trace-gpu-v2023``; Weng et al.,
*Beware of Fragmentation*, USENIX ATC'23) is citation-required research data: it is read
from wherever it lies (``/work/shared/traces/alibaba-gpu-2023/csv/``) and never copied into
this repository. It gives nodes and tasks, but no topology, gangs, numeric priorities or
placements; this module fills those gaps as follows, and the result is the same object
shapes ``solver.bench.generate`` emits (Node, Pod, PriorityClass, scheduling.k8s.io/v1beta1
PodGroup), every namespaced object in namespace ``trace``.

Nodes (``sn,cpu_milli,memory_mib,gpu,model``)
    ``status.allocatable``: ``cpu`` (millicores), ``memory`` (Mi), ``pods`` "110", and the GPUs
    as the extended resources ``alibabacloud.com/gpu-count`` (= gpu) and
    ``alibabacloud.com/gpu-milli`` (= 1000 × gpu), as the trace's own node YAML does; label
    ``alibabacloud.com/gpu-card-model`` when ``model`` is non-empty. ``max_nodes`` keeps the
    first N rows. The topology labels are **synthetic** (the trace has none): in CSV order,
    racks of ``rack_size`` nodes (``topology.kubernetes.io/rack`` = ``z<zone>-r<rack>``, rack
    numbers global) and zones of ``racks_per_zone`` racks (``topology.kubernetes.io/zone`` =
    ``z<zone>``), plus ``kubernetes.io/hostname``.

Pods (``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
deletion_time,scheduled_time``)
    Requests ``cpu``, ``memory``, ``alibabacloud.com/gpu-milli`` = num_gpu × gpu_milli (when
    num_gpu > 0) and ``alibabacloud.com/gpu-count`` = num_gpu only for whole-GPU tasks
    (gpu_milli == 1000). Fractional GPU sharing is thereby aggregated per node (the sum of
    gpu-milli ≤ 1000 × GPUs); that is looser than real per-GPU packing (three 600-milli tasks
    fit a 2-GPU node here, not on real GPUs). A non-empty ``gpu_spec`` (models joined by ``|``)
    becomes required node affinity ``alibabacloud.com/gpu-card-model In [models]``, models in
    trace order. ``qos`` becomes a PriorityClass (all four are emitted): Guaranteed →
    ``trace-guaranteed`` 1000, LS → ``trace-ls`` 500, Burstable → ``trace-burstable`` 100,
    BE → ``trace-be`` 10. Times (seconds) become timestamps from a synthetic epoch,
    2023-01-01T00:00:00Z (the trace's own epoch is not disclosed).

The snapshot at time ``at`` (default: the lower median of all tasks' creation_time)
    Running background: tasks with creation_time ≤ at < deletion_time (no deletion_time:
    never deleted) and pod_phase Running, Succeeded or Failed (the phase they ended in; at
    ``at`` they ran). The trace records no node, so they are placed by a deterministic
    first-fit: tasks by (creation_time, name), each onto the first node in CSV order with
    room for its cpu, memory, pods, gpu-milli and gpu-count and, with a gpu_spec, one of
    its models. A task that fits nowhere is skipped and counted in
    ``Converted.unplaced_background``, never silently dropped.

    Pending workload: the first ``gang_pods`` tasks by (creation_time, name) created after
    ``at`` (any phase) that request at least one whole GPU (num_gpu ≥ 1, gpu_milli == 1000)
    become the pods of one PodGroup ``trace-gang``, gang minCount = their number (fewer
    than ``gang_pods`` when the trace runs out; none: no PodGroup), priority class
    ``trace-guaranteed`` (so it may preempt LS, Burstable and BE tasks, not Guaranteed
    ones), and a topology constraint on ``gang_topology`` (default the zone; None: none).

Five-column pod files (the ``multigpu*`` variants: no qos, phase or times)
    Without times there is no moment to cut: no running background, ``at`` is None (giving
    one is an error), and the gang is the first ``gang_pods`` whole-GPU tasks in CSV order.

Bad input — a missing column, a non-integer or negative number, an unknown qos or phase, a
duplicate name — raises ``ValueError`` naming the file and row, the header being row 1
(``openb_pod_list_default.csv row 12: cpu_milli: 'x' is not an integer``).

Pure: ``parse_csv`` and ``convert`` do no I/O; ``load_trace`` reads the two CSV files. The same
inputs give the same objects, byte for byte.
"""

from __future__ import annotations

import csv
import io
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from solver.bench import generate
from solver.core.errors import InputError


class TraceError(InputError, ValueError):
    """Bad trace input, naming the file, the row and the column."""


ZONE = "topology.kubernetes.io/zone"
RACK = "topology.kubernetes.io/rack"
HOST = "kubernetes.io/hostname"
GPU_COUNT = "alibabacloud.com/gpu-count"
GPU_MILLI = "alibabacloud.com/gpu-milli"
GPU_MODEL = "alibabacloud.com/gpu-card-model"
NS = "trace"
GANG = "trace-gang"
MAX_PODS = 110
EPOCH = datetime(2023, 1, 1, tzinfo=UTC)  # synthetic: the trace's times are seconds from an undisclosed start

PRIORITY_CLASSES = {"Guaranteed": ("trace-guaranteed", 1000), "LS": ("trace-ls", 500),
                    "Burstable": ("trace-burstable", 100), "BE": ("trace-be", 10)}
GANG_PRIORITY_CLASS = "trace-guaranteed"
RAN_PHASES = ("Running", "Succeeded", "Failed")
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
POD_TIME_COLUMNS = ("gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time")

_UINT = re.compile(r"[0-9]+")


# ---- tables ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Table:
    """The rows of one CSV file and where they came from, for error messages."""

    source: str  # the file name errors name
    header: tuple[str, ...]
    rows: tuple[Mapping[str, str], ...]
    row_numbers: tuple[int, ...]  # file row of each row; the header is row 1


def parse_csv(text: str, source: str) -> Table:
    """CSV text (a header, then rows) -> Table. Blank lines are skipped; ragged rows are errors."""
    reader = csv.reader(io.StringIO(text))
    header: tuple[str, ...] | None = None
    rows: list[Mapping[str, str]] = []
    numbers: list[int] = []
    for fields in reader:
        if not fields or all(not f.strip() for f in fields):
            continue
        if header is None:
            header = tuple(f.strip() for f in fields)
            continue
        if len(fields) != len(header):
            raise TraceError(f"{source} row {reader.line_num}: {len(fields)} fields, the header has {len(header)}")
        rows.append(dict(zip(header, (f.strip() for f in fields), strict=True)))
        numbers.append(reader.line_num)
    if header is None:
        raise TraceError(f"{source} row 1: no header")
    return Table(source=source, header=header, rows=tuple(rows), row_numbers=tuple(numbers))


def _as_table(rows: Table | Sequence[Mapping[str, str]], source: str) -> Table:
    if isinstance(rows, Table):
        return rows
    rows = tuple(rows)
    header = tuple(rows[0]) if rows else ()
    return Table(source=source, header=header, rows=rows, row_numbers=tuple(range(2, len(rows) + 2)))


def load_trace(trace_dir: Path, pod_file: str = "openb_pod_list_default.csv",
               node_file: str = "openb_node_list_all_node.csv") -> tuple[Table, Table]:
    """(nodes, pods) tables from ``trace_dir`` (or its ``csv/`` subdirectory, as the trace is laid out)."""
    base = Path(trace_dir)
    if not (base / node_file).exists() and (base / "csv" / node_file).exists():
        base = base / "csv"
    tables = []
    for name in (node_file, pod_file):
        with (base / name).open(encoding="utf-8", newline="") as f:
            tables.append(parse_csv(f.read(), name))
    return tables[0], tables[1]


# ---- parsed rows -----------------------------------------------------------------


class _Row:
    def __init__(self, table: Table, index: int) -> None:
        self.values = table.rows[index]
        self.where = f"{table.source} row {table.row_numbers[index]}"

    def unique(self, column: str, seen: set[str], what: str) -> str:
        """The non-empty text in ``column``, not seen before (and now seen)."""
        name = self.text(column)
        if not name:
            raise self.fail(column, "empty")
        if name in seen:
            raise self.fail(column, f"duplicate {what} {name!r}")
        seen.add(name)
        return name

    def fail(self, column: str, reason: str) -> TraceError:
        return TraceError(f"{self.where}: {column}: {reason}")

    def text(self, column: str) -> str:
        value = self.values.get(column)
        if value is None:
            raise TraceError(f"{self.where}: missing column {column!r}")
        return str(value).strip()

    def uint(self, column: str, *, optional: bool = False) -> int | None:
        value = self.text(column)
        if not value and optional:
            return None
        if _UINT.fullmatch(value):
            return int(value)
        if value.startswith("-") and _UINT.fullmatch(value[1:]):
            raise self.fail(column, f"{value!r} is negative")
        raise self.fail(column, f"{value!r} is not an integer")

    def required_uint(self, column: str) -> int:
        value = self.uint(column)
        assert value is not None
        return value


@dataclass(frozen=True, slots=True)
class _Node:
    name: str
    cpu_m: int
    mem_mi: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class _Task:
    name: str
    cpu_m: int
    mem_mi: int
    num_gpu: int
    gpu_milli: int
    models: tuple[str, ...]
    qos: str | None
    phase: str | None
    created: int | None
    deleted: int | None
    scheduled: int | None

    @property
    def whole_gpus(self) -> int:
        return self.num_gpu if self.num_gpu and self.gpu_milli == 1000 else 0

    @property
    def milli(self) -> int:
        return self.num_gpu * self.gpu_milli if self.num_gpu else 0


def _check_header(table: Table, columns: Sequence[str]) -> None:
    for column in columns:
        if column not in table.header:
            raise TraceError(f"{table.source} row 1: missing column {column!r}")


def _nodes(table: Table) -> list[_Node]:
    _check_header(table, NODE_COLUMNS)
    out: list[_Node] = []
    seen: set[str] = set()
    for i in range(len(table.rows)):
        row = _Row(table, i)
        name = row.unique("sn", seen, "node")
        out.append(_Node(name=name, cpu_m=row.required_uint("cpu_milli"), mem_mi=row.required_uint("memory_mib"),
                         gpus=row.required_uint("gpu"), model=row.text("model")))
    return out


def _tasks(table: Table) -> tuple[list[_Task], bool]:
    """The tasks, and whether the file has the time columns (11 columns, not 5)."""
    _check_header(table, POD_COLUMNS)
    timed = any(c in table.header for c in POD_TIME_COLUMNS)
    if timed:
        _check_header(table, POD_TIME_COLUMNS)
    out: list[_Task] = []
    seen: set[str] = set()
    for i in range(len(table.rows)):
        row = _Row(table, i)
        name = row.unique("name", seen, "task")
        gpu_milli = row.required_uint("gpu_milli")
        if gpu_milli > 1000:
            raise row.fail("gpu_milli", f"{gpu_milli} is more than 1000 milli-GPU")
        models: tuple[str, ...] = ()
        qos = phase = None
        created = deleted = scheduled = None
        if timed:
            models = tuple(dict.fromkeys(m.strip() for m in row.text("gpu_spec").split("|") if m.strip()))
            qos = row.text("qos")
            if qos not in PRIORITY_CLASSES:
                raise row.fail("qos", f"{qos!r} is not one of {', '.join(PRIORITY_CLASSES)}")
            phase = row.text("pod_phase")
            if phase not in PHASES:
                raise row.fail("pod_phase", f"{phase!r} is not one of {', '.join(PHASES)}")
            created = row.required_uint("creation_time")
            deleted = row.uint("deletion_time", optional=True)
            scheduled = row.uint("scheduled_time", optional=True)
        out.append(_Task(name=name, cpu_m=row.required_uint("cpu_milli"), mem_mi=row.required_uint("memory_mib"),
                         num_gpu=row.required_uint("num_gpu"), gpu_milli=gpu_milli, models=models, qos=qos,
                         phase=phase, created=created, deleted=deleted, scheduled=scheduled))
    return out, timed


# ---- the conversion --------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AlibabaSpec:
    at: int | None = None  # snapshot time in trace seconds; None: the lower median creation_time
    gang_pods: int = 32  # whole-GPU tasks created after `at` that form the pending gang; 0: none
    gang_topology: str | None = ZONE  # the gang's topology key (e.g. RACK); None: no constraint
    rack_size: int = 16  # nodes per synthetic rack, in CSV order
    racks_per_zone: int = 8  # synthetic racks per synthetic zone
    max_nodes: int | None = None  # keep the first N nodes of the node file
    # the state the trace recorded instead of a time cut: background = tasks whose pod_phase
    # is Running, gang = whole-GPU tasks whose pod_phase is Pending (both by creation_time)
    by_phase: bool = False

    def __post_init__(self) -> None:
        if self.at is not None and self.at < 0:
            raise TraceError(f"at must be >= 0, not {self.at}")
        if self.gang_pods < 0:
            raise TraceError(f"gang_pods must be >= 0, not {self.gang_pods}")
        if self.rack_size < 1 or self.racks_per_zone < 1:
            raise TraceError(f"rack_size and racks_per_zone must be >= 1, not {self.rack_size}, {self.racks_per_zone}")
        if self.max_nodes is not None and self.max_nodes < 1:
            raise TraceError(f"max_nodes must be >= 1, not {self.max_nodes}")
        if self.by_phase and self.at is not None:
            raise TraceError("by_phase and at exclude each other")
        if self.gang_topology is not None and not self.gang_topology:
            raise TraceError("gang_topology must be a label key or None, not ''")


@dataclass(frozen=True, slots=True, kw_only=True)
class Converted:
    objects: list[dict[str, Any]]
    unplaced_background: int  # tasks running at `at` that first-fit found no node for
    running: tuple[tuple[str, str], ...]  # (task, node) of the placed background, in first-fit order
    pending: tuple[str, ...]  # the gang's tasks, in order
    at: int | None  # the snapshot time used; None for a file without times


def _timestamp(seconds: int) -> str:
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node_object(node: _Node, index: int, spec: AlibabaSpec) -> dict[str, Any]:
    rack = index // spec.rack_size
    zone = rack // spec.racks_per_zone
    labels = {ZONE: f"z{zone}", RACK: f"z{zone}-r{rack}", HOST: node.name}
    if node.model:
        labels[GPU_MODEL] = node.model
    alloc = {"cpu": f"{node.cpu_m}m", "memory": f"{node.mem_mi}Mi", "pods": str(MAX_PODS)}
    if node.gpus:
        alloc[GPU_COUNT] = str(node.gpus)
        alloc[GPU_MILLI] = str(1000 * node.gpus)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node.name, "labels": labels},
            "spec": {}, "status": {"allocatable": alloc}}


def _pod_object(task: _Task, *, priority_class: str, node: str | None = None,
                group: str | None = None) -> dict[str, Any]:
    requests = {"cpu": f"{task.cpu_m}m", "memory": f"{task.mem_mi}Mi"}
    if task.milli:
        requests[GPU_MILLI] = str(task.milli)
    if task.whole_gpus:
        requests[GPU_COUNT] = str(task.whole_gpus)
    meta: dict[str, Any] = {"name": task.name, "namespace": NS}
    if task.created is not None:
        meta["creationTimestamp"] = _timestamp(task.created)
    spec: dict[str, Any] = {"priorityClassName": priority_class,
                            "containers": [{"name": "main", "image": "trace",
                                            "resources": generate.resources(requests)}]}
    if task.models:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": GPU_MODEL, "operator": "In", "values": list(task.models)}]}]}}}
    status: dict[str, Any] = {"phase": "Pending"}
    if node is not None:
        spec["nodeName"] = node
        start = task.scheduled if task.scheduled is not None else task.created
        status = {"phase": "Running"}
        if start is not None:
            status["startTime"] = _timestamp(start)
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


class _FirstFit:
    def __init__(self, nodes: Sequence[_Node]) -> None:
        self.nodes = nodes
        self.used = [[0, 0, 0, 0, 0] for _ in nodes]  # cpu_m, mem_mi, pods, gpu-milli, gpu-count

    def place(self, task: _Task) -> str | None:
        need = (task.cpu_m, task.mem_mi, 1, task.milli, task.whole_gpus)
        for node, used in zip(self.nodes, self.used, strict=True):
            if task.models and node.model not in task.models:
                continue
            cap = (node.cpu_m, node.mem_mi, MAX_PODS, 1000 * node.gpus, node.gpus)
            if all(u + n <= c for u, n, c in zip(used, need, cap, strict=True)):
                for k, n in enumerate(need):
                    used[k] += n
                return node.name
        return None


def convert(nodes_rows: Table | Sequence[Mapping[str, str]], pod_rows: Table | Sequence[Mapping[str, str]],
            spec: AlibabaSpec = AlibabaSpec()) -> Converted:
    """The trace's node and pod rows -> Kubernetes objects of the snapshot at ``spec.at``.

    Rows are Tables (``parse_csv``, ``load_trace``) or plain mappings of column -> text (errors
    then name ``nodes``/``pods`` and the row as if a header were row 1).
    """
    node_table, pod_table = _as_table(nodes_rows, "nodes"), _as_table(pod_rows, "pods")
    nodes = _nodes(node_table)
    if spec.max_nodes is not None:
        nodes = nodes[:spec.max_nodes]
    tasks, timed = _tasks(pod_table)

    at: int | None = None
    if spec.by_phase and not timed:
        raise TraceError(f"{pod_table.source}: no pod_phase column, so by_phase cannot apply")
    if spec.by_phase:
        pass
    elif timed:
        created = [t.created for t in tasks if t.created is not None]
        at = spec.at if spec.at is not None else (statistics.median_low(created) if created else None)
    elif spec.at is not None:
        raise TraceError(f"{pod_table.source}: no creation_time column, so at={spec.at} cannot apply")

    objects: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        for name, value in PRIORITY_CLASSES.values()
    ]
    objects.extend(_node_object(n, i, spec) for i, n in enumerate(nodes))

    running: list[tuple[str, str]] = []
    unplaced = 0
    if at is not None or spec.by_phase:
        fit = _FirstFit(nodes)
        if spec.by_phase:
            alive = [t for t in tasks if t.phase == "Running"]
        else:
            assert at is not None  # the branch's condition, without by_phase
            alive = [t for t in tasks if t.phase in RAN_PHASES and t.created is not None
                     and t.created <= at and (t.deleted is None or at < t.deleted)]
        background = sorted(alive, key=lambda t: (t.created or 0, t.name))
        for task in background:
            node = fit.place(task)
            if node is None:
                unplaced += 1
                continue
            running.append((task.name, node))
            objects.append(_pod_object(task, priority_class=PRIORITY_CLASSES[task.qos or "BE"][0], node=node))

    if spec.by_phase:
        later = sorted((t for t in tasks if t.phase == "Pending"), key=lambda t: (t.created or 0, t.name))
    elif timed:
        later = sorted((t for t in tasks if at is not None and t.created is not None and t.created > at),
                       key=lambda t: (t.created, t.name))
    else:
        later = tasks  # CSV order
    gang = [t for t in later if t.whole_gpus][:spec.gang_pods]
    if gang:
        group_spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": len(gang)}},
                                      "priorityClassName": GANG_PRIORITY_CLASS}
        if spec.gang_topology:
            group_spec["schedulingConstraints"] = {"topology": [{"key": spec.gang_topology}]}
        objects.append({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                        "metadata": {"name": GANG, "namespace": NS}, "spec": group_spec})
        objects.extend(_pod_object(t, priority_class=GANG_PRIORITY_CLASS, group=GANG) for t in gang)

    return Converted(objects=objects, unplaced_background=unplaced, running=tuple(running),
                     pending=tuple(t.name for t in gang), at=at)
