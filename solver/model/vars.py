"""The decision variables of the placement model, in one container.

Constraint modules ask this container for variables through intention-revealing
queries and never index its dicts directly; a variable that does not exist yet
is created on first use.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from solver.core import snapshot as s
from solver.problem.assignment import Assignment, evaluate
from solver.problem.build import Problem
from solver.problem.dra import AllocKey, SharedOption
from solver.problem.workloads import PodClass

LinearExpr = cp_model.LinearExprT


@dataclass(slots=True)
class Conflicts:
    """What ``constraints/interpod.py`` hands ``constraints/preemption.py`` (its return value,
    the builder passes it on): per victim unit, the literals any one of which makes its
    eviction necessary besides capacity and devices (an inter-pod conflict with, or a spread
    constraint of, a pod that may preempt it); and the units whose eviction needs necessity
    rows whatever lands beside them (in some conflict or spread count)."""

    needs: dict[int, list[cp_model.IntVar]] = field(default_factory=dict)
    forced: set[int] = field(default_factory=set)

    def need(self, unit: int, literal: cp_model.IntVar) -> None:
        self.needs.setdefault(unit, []).append(literal)


class PlacementVars:
    def __init__(self, problem: Problem, model: cp_model.CpModel) -> None:
        self.problem = problem
        self.model = model
        # count[c][n] == number of pending pods of class c bound to node n.
        self._count: list[dict[s.NodeName, cp_model.IntVar]] = [{} for _ in problem.classes]
        # evict[u] == 1 iff every member of victim unit u is evicted.
        self._evict: dict[int, cp_model.IntVar] = {}
        # ok[g] == 1 iff group g's gang rule holds (running members counted).
        self._ok: dict[s.GroupKey, cp_model.IntVar] = {}
        # satisfied[w] == 1 iff workload w's root holds and the plan adds a pod to it.
        self._satisfied: dict[int, cp_model.IntVar] = {}
        # in_domain[g, v] == 1 iff every pod under group g lands where label key(g) == v.
        self._in_domain: dict[tuple[s.GroupKey, str], cp_model.IntVar] = {}
        # pdb_violations[b] == evictions beyond budget b's disruptionsAllowed.
        self._pdb_violations: dict[s.PdbKey, cp_model.IntVar] = {}
        # DRA (constraints/devices.py): alloc[c, n][slot, alt, value, type] == devices of the type
        # the pods of class c on node n take for that slot via that alternative and match value;
        # shared_alloc[i][slot, alt, value, option][type] the same for shared claim i (All mode
        # has one option per distinct reachable set, so (alt, value) alone may repeat).
        self._alloc: dict[tuple[int, s.NodeName], dict[AllocKey, cp_model.IntVar]] = {}
        self._shared_alloc: dict[int, dict[SharedOption, dict[int, cp_model.IntVar]]] = {}
        self._takers: dict[int, list[tuple[int, cp_model.IntVar]]] | None = None  # device_takers, once
        # (rank, pick): pods (or a shared claim) taking their rank-th usable firstAvailable entry
        self._alt_picks: list[tuple[int, cp_model.IntVar]] = []
        # present[classes, key, value] == 1 iff a pod of the classes lands where label key == value
        # (key "": on node value); constraints/interpod.py
        self._present: dict[tuple[tuple[int, ...], str, str], cp_model.IntVar] = {}
        self._landed: dict[tuple[int, str, str], cp_model.IntVar] = {}
        self._labels = {n.name: n.labels for n in problem.nodes}
        self._grouped: dict[tuple[int, str], dict[str, list[tuple[s.NodeName, cp_model.IntVar]]]] = {}
        self._create_counts()

    # ---- creation ----------------------------------------------------------------
    def _create_counts(self) -> None:
        for cls in self.problem.classes:
            for node, most in sorted(self.problem.candidates[cls.index].items()):
                self._count[cls.index][node] = self.model.new_int_var(0, most, f"count[{cls.index},{node}]")

    # ---- queries -----------------------------------------------------------------
    def count(self, cls: int, node: s.NodeName) -> cp_model.IntVar | None:
        return self._count[cls].get(node)

    def count_on(self, cls: int, node: s.NodeName) -> cp_model.IntVar:
        """count[cls, node] for a candidate node of the class (KeyError on any other)."""
        return self._count[cls][node]

    def nodes_of(self, cls: int) -> dict[s.NodeName, cp_model.IntVar]:
        return self._count[cls]

    def classes_by_node(self) -> dict[s.NodeName, list[PodClass]]:
        """node -> the classes that have a count variable there, in class order."""
        out: dict[s.NodeName, list[PodClass]] = defaultdict(list)
        for cls in self.problem.classes:
            for node in self._count[cls.index]:
                out[node].append(cls)
        return out

    def counts(self) -> Iterable[tuple[tuple[int, s.NodeName], cp_model.IntVar]]:
        for cls, by_node in enumerate(self._count):
            for node, var in by_node.items():
                yield (cls, node), var

    def by_value(self, cls: int, key: str) -> dict[str, list[tuple[s.NodeName, cp_model.IntVar]]]:
        """The count variables of a class grouped by their node's value of ``key`` (key "": by
        node name); nodes without the label are left out."""
        cached = self._grouped.get((cls, key))
        if cached is None:
            cached = self._grouped[cls, key] = defaultdict(list)
            for node, var in self._count[cls].items():
                value = node if key == "" else self._labels[node].get(key)
                if value is not None:
                    cached[value].append((node, var))
        return cached

    def in_domain_counts(self, classes: Iterable[int], key: str, value: str,
                         nodes: set[s.NodeName] | None = None) -> list[cp_model.IntVar]:
        """count[c, n] of the classes on nodes where label ``key`` is ``value`` (key "": node
        ``value``), only nodes in ``nodes`` when given."""
        return [var for c in classes for node, var in self.by_value(c, key).get(value, ())
                if nodes is None or node in nodes]

    def present(self, classes: tuple[int, ...], key: str, value: str) -> cp_model.IntVar:
        var = self._present.get((classes, key, value))
        if var is None:
            var = self._present[classes, key, value] = self.model.new_bool_var(f"present[{classes},{key},{value}]")
            for c in classes:
                for node, count in self.by_value(c, key).get(value, ()):
                    self.model.add(count <= self.problem.candidates[c][node] * var)
        return var

    def landed(self, cls: int, key: str, value: str) -> cp_model.IntVar:
        """True only if a pod of ``cls`` lands in the domain: a reason an eviction is necessary.
        ``present`` is not one: it is only forced up by a pod there, and may be 1 with none."""
        var = self._landed.get((cls, key, value))
        if var is None:
            var = self._landed[cls, key, value] = self.model.new_bool_var(f"landed[{cls},{key},{value}]")
            counts = [count for _, count in self.by_value(cls, key).get(value, ())]
            self.model.add(cp_model.LinearExpr.sum(counts) >= 1).only_enforce_if(var)
        return var

    def placed(self, classes: Iterable[int]) -> LinearExpr:
        """Σ_n count[c, n] over the given classes."""
        return cp_model.LinearExpr.sum([v for c in classes for v in self._count[c].values()])

    def evicts(self, unit: int) -> cp_model.IntVar:
        var = self._evict.get(unit)
        if var is None:
            var = self._evict[unit] = self.model.new_bool_var(f"evict[{self.problem.units[unit].key}]")
        return var

    def has_evict(self, unit: int) -> bool:
        return unit in self._evict

    def evictions(self) -> Iterable[tuple[int, cp_model.IntVar]]:
        return self._evict.items()

    def group_ok(self, group: s.GroupKey) -> cp_model.IntVar:
        var = self._ok.get(group)
        if var is None:
            var = self._ok[group] = self.model.new_bool_var(f"ok[{group}]")
        return var

    def satisfied(self, workload: int) -> cp_model.IntVar:
        var = self._satisfied.get(workload)
        if var is None:
            var = self._satisfied[workload] = self.model.new_bool_var(
                f"satisfied[{self.problem.workloads[workload].key}]"
            )
        return var

    def in_domain(self, group: s.GroupKey, value: str) -> cp_model.IntVar:
        var = self._in_domain.get((group, value))
        if var is None:
            var = self._in_domain[group, value] = self.model.new_bool_var(f"in_domain[{group},{value}]")
        return var

    def domains(self) -> Iterable[tuple[tuple[s.GroupKey, str], cp_model.IntVar]]:
        return self._in_domain.items()

    def pdb_violations(self, pdb: s.PdbKey, most: int) -> cp_model.IntVar:
        var = self._pdb_violations.get(pdb)
        if var is None:
            var = self._pdb_violations[pdb] = self.model.new_int_var(0, most, f"pdb_violations[{pdb}]")
        return var

    def all_pdb_violations(self) -> list[cp_model.IntVar]:
        return list(self._pdb_violations.values())

    def all_satisfied(self) -> Iterable[tuple[int, cp_model.IntVar]]:
        return self._satisfied.items()

    def all_ok(self) -> Iterable[tuple[s.GroupKey, cp_model.IntVar]]:
        return self._ok.items()

    # ---- DRA (constraints/devices.py) --------------------------------------------
    def add_alloc(self, cls: int, node: s.NodeName, key: AllocKey, var: cp_model.IntVar) -> None:
        """Record ``var``: the devices the pods of ``cls`` on ``node`` take for ``key``."""
        self._alloc.setdefault((cls, node), {})[key] = var

    def add_shared_alloc(self, claim: int, option: SharedOption, dtype: int, var: cp_model.IntVar) -> None:
        """Record ``var``: the devices of type ``dtype`` shared claim ``claim`` takes through ``option``."""
        self._shared_alloc.setdefault(claim, {}).setdefault(option, {})[dtype] = var

    def add_alt_pick(self, rank: int, pick: cp_model.IntVar) -> None:
        """``pick`` owners take their ``rank``-th usable firstAvailable entry (rank > 0)."""
        self._alt_picks.append((rank, pick))

    def alt_picks(self) -> Sequence[tuple[int, cp_model.IntVar]]:
        return self._alt_picks

    def pod_allocs(self) -> Iterator[tuple[int, s.NodeName, AllocKey, cp_model.IntVar]]:
        """(class, node, key, var) of every per-pod allocation variable, in creation order."""
        for (c, node), by_key in self._alloc.items():
            for key, var in by_key.items():
                yield c, node, key, var

    def device_takers(self) -> dict[int, list[tuple[int, cp_model.IntVar]]]:
        """type -> (class, literal) of every allocation that may take a device of the type (not
        with admin access, which takes it held or not). A PodGroup's claim counts for its
        weakest class (they are alike). A claim several pending pods name is allocated by
        whichever of them upstream schedules first, so it counts for each of them placed: per
        class naming it, a literal that holds only when the class has a pod placed and the
        claim takes devices of the type (the verifier takes any of them too)."""
        if self._takers is not None:
            return self._takers
        out: dict[int, list[tuple[int, cp_model.IntVar]]] = {}
        dra = self.problem.dra
        for c, _, key, var in self.pod_allocs():
            if not dra.class_slots[c][key.slot].request.alternatives[key.alt].admin_access:
                out.setdefault(key.dtype, []).append((c, var))
        classes = self.problem.classes
        for i, options in self._shared_alloc.items():
            claim = dra.shared[i]
            owner = min(claim.users, key=lambda c: (classes[c].power is not None, classes[c].power or 0, c))
            for option, by_type in options.items():
                if claim.slots[option.slot].request.alternatives[option.alt].admin_access:
                    continue  # admin access needs no device freed
                for t, var in by_type.items():
                    if not claim.pods:
                        out.setdefault(t, []).append((owner, var))
                        continue
                    for c in sorted(claim.users):
                        lit = self.model.new_bool_var(f"takes[{claim.claim.key},{c},{t}]")
                        self.model.add(var >= 1).only_enforce_if(lit)
                        self.model.add(self.placed([c]) >= 1).only_enforce_if(lit)
                        out.setdefault(t, []).append((c, lit))
        self._takers = out
        return out

    # ---- solutions and hints -----------------------------------------------------
    def extract(self, values: Sequence[int]) -> Assignment:
        """The assignment a solution describes (``values``: every variable's, by index)."""
        counts = {key: n for key, var in self.counts() if (n := values[var.index]) > 0}
        evicted = frozenset(u for u, var in self._evict.items() if values[var.index] > 0)
        devices: dict[tuple[int, s.NodeName], dict[AllocKey, int]] = {}
        for owner, by_key in self._alloc.items():
            taken = {key: n for key, var in by_key.items() if (n := values[var.index]) > 0}
            if taken:
                devices[owner] = taken
        shared: dict[int, dict[AllocKey, int]] = {}
        for i, options in self._shared_alloc.items():
            for o, by_type in options.items():
                for t, var in by_type.items():
                    if (n := values[var.index]) > 0:  # one option per (slot, alt, value) is picked
                        shared.setdefault(i, {})[AllocKey(o.slot, o.alt, o.value, t)] = n
        return Assignment(counts=counts, evicted=evicted, devices=devices, shared=shared)

    def hint(self, assignment: Assignment, model: cp_model.CpModel | None = None) -> None:
        """Hint the model (or ``model``, a clone of it: the variables are the same indices) with
        ``assignment``, completely: counts, evictions, devices, and the gang and domain literals
        it implies."""
        model = model if model is not None else self.model
        problem = self.problem
        model.proto.clear_solution_hint()
        for placed, var in self.counts():
            model.add_hint(var, assignment.counts.get(placed, 0))
        for u, var in self._evict.items():
            model.add_hint(var, int(u in assignment.evicted))
        for owner, by_key in self._alloc.items():
            took = assignment.devices.get(owner, {})
            for alloc, var in by_key.items():
                model.add_hint(var, took.get(alloc, 0))
        for i, options in self._shared_alloc.items():
            self._hint_shared(model, options, assignment.shared.get(i, {}))
        ev = evaluate(problem, assignment)
        for group, var in self._ok.items():
            model.add_hint(var, int(ev.ok.get(group, False)))
        for w, var in self._satisfied.items():
            model.add_hint(var, int(ev.satisfied[w]))
        used: set[tuple[s.GroupKey, str]] = set()
        for (c, node), n in assignment.counts.items():
            leaf = problem.classes[c].group
            if n > 0 and leaf is not None:
                for g in problem.tree.ancestors(leaf):
                    label = problem.groups[g].topology_key
                    if label is not None:
                        used.add((g, self._labels[node].get(label, "")))
        for (g, value), var in self._in_domain.items():
            model.add_hint(var, int((g, value) in used))

    def _hint_shared(self, model: cp_model.CpModel, options: dict[SharedOption, dict[int, cp_model.IntVar]],
                     took_all: Mapping[AllocKey, int]) -> None:
        repeats = Counter((o.slot, o.alt, o.value) for o in options)
        for o, by_type in options.items():
            took = {k.dtype: n for k, n in took_all.items() if (k.slot, k.alt, k.value) == (o.slot, o.alt, o.value)}
            # All mode repeats (slot, alt, value) per reachable set: hint the one the assignment took
            mine = repeats[o.slot, o.alt, o.value] == 1 or set(took) == set(by_type)
            for t, var in by_type.items():
                model.add_hint(var, took.get(t, 0) if mine else 0)
