"""solve(built, params, hint) -> SolveResult: the staged CP-SAT solve.

Each stage optimises one slice of the lexicographic objective (see
``solver.model.objective``), then fixes what it found before the next stage
starts, with the previous solution as a complete hint.

Proven floors (``solver.model.bounds.floors``) end stages early once stage 1 has placed
every pod: a stage whose hinted plan already meets its floor is taken without a
search (reported ``fromHint``), a search stops at the first solution that meets it,
and the cost is searched alone down to its floor before the evicted pods are. The
floor is never added to the model as a constraint: measured on
composite-topology-5000, a cost stage with ``cost ≥ floor`` added stayed at its hint
for 40 s, where the same model without it reached the optimum.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from ortools.sat.python import cp_model

from solver.core.plan import FEASIBLE, OPTIMAL, UNKNOWN, Tiers
from solver.model import objective
from solver.model.bounds import floors
from solver.model.build import BuiltModel
from solver.problem.assignment import Assignment, evaluate, score, trivial_bound

# (stage name, the improving solution's tiers, their proven bounds): the tiers the stage decides,
# in the plan's units and by the plan objective's names (objective.stage_values), e.g.
# ("preemptionCost+evictedPods", {"preemptionCost": 404.0, "evictedPods": 3}, {...})
OnSolution = Callable[[str, Mapping[str, float], Mapping[str, float]], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class SolveParams:
    time_limit: float = 10.0  # seconds for all stages together
    workers: int = 1
    seed: int = 0
    relative_gap: float = 0.0
    # LP at every level: measured 346 vs 379 PDB violations at the 60 s limit on the
    # 1,000-node scale case, and 2.35 s vs 2.60 s on the 1,000-node rack gang
    linearization_level: int = 2
    stop: threading.Event | None = None  # set it to end the search early (client gone, shutdown)
    # called on each improving solution, from the solver's thread
    on_solution: OnSolution | None = None


class StageReport(TypedDict, total=False):
    """One stage as ``stats.stages`` reports it (or, decomposed, one domain: ``domain``)."""

    stage: str  # objective.StageKind's value
    status: str  # CP-SAT's status name, or PRUNED / UNPLACEABLE for a domain
    seconds: float
    objective: float | None
    bound: float
    floor: int | None
    fromHint: bool  # taken from the hinted plan at a proven bound, no search
    domain: str
    tier: int  # a pruned domain: the tier it was proven worse on


@dataclass(frozen=True, slots=True, kw_only=True)
class SolveResult:
    assignment: Assignment | None  # None: no solution at all (cannot happen with a hint)
    status: str  # OPTIMAL when every stage is proven, else FEASIBLE / UNKNOWN (the plan derives its own from bound)
    # the best tiers any plan of this model can reach, lexicographically (objective.lex_bound):
    # every tier up to the first unproven one, that one's proven bound, the trivial best after
    bound: Tiers
    solve_seconds: float
    stages: tuple[StageReport, ...] = field(default_factory=tuple)
    pruned: bool = False  # a cutoff proved this model cannot match the incumbent


def solve(
    built: BuiltModel,
    params: SolveParams,
    hint: Assignment | None = None,
    stop: threading.Event | None = None,
    *,
    cost_cutoff: tuple[Tiers, int] | None = None,
    upto_cost: bool = False,
    stage_cutoff: Callable[[objective.StageKind, dict[objective.StageKind, tuple[int, bool]]], int | None]
    | None = None,
) -> SolveResult:
    """Run the stages in order.

    ``upto_cost`` stops before the stage deciding the preemption cost.
    ``cost_cutoff = (tiers, cost)`` asks that stage for a cost ≤ ``cost`` when every
    earlier stage was proven optimal and the solution's tiers 1-3 are exactly
    ``tiers`` (branch and bound across sub-models). ``stage_cutoff(i, found)`` may
    give an upper bound for minimising stage i from the (value, proven) pairs the
    earlier stages found, by kind. A stage made infeasible by either marks the result
    ``pruned``.
    """
    run = _Staged(built, built.model.clone(), params, stop if stop is not None else params.stop)
    run.start_from(hint)
    for i, stage in enumerate(built.stages):
        if upto_cost and stage.cost is not None:
            break
        if not run.stage(i, stage, cost_cutoff, stage_cutoff):
            break
    return run.result()


class _Staged:
    """One staged solve as it goes: what the stages found, which plan leads the hint, and what
    each stage reported. ``stage`` decides one stage: pruned by a cutoff, taken from the hinted
    plan when that meets a proven bound, or searched (the cost first, down to its floor)."""

    def __init__(self, built: BuiltModel, model: cp_model.CpModel, params: SolveParams,
                 stop: threading.Event | None) -> None:
        # ``model`` is a clone of ``built.model``: the stages add rows, objectives and hints to
        # it, and ``built`` stays as it was built, to be solved again (decompose's cost pass)
        self.built, self.model, self.params, self.stop = built, model, params, stop
        self.start = time.perf_counter()
        self.checked: dict[int, tuple[Assignment, bool]] = {}  # id(plan) -> (plan, does the model accept it)
        self.current: Assignment | None = None  # the stages' solution so far
        self.lead: Assignment | None = None  # the assignment the model is hinted with
        self.all_optimal = True
        self.reports: list[StageReport] = []
        self.pruned = False
        self.bounds: list[objective.StageBound] = []  # per stage decided: its value, its proven bound
        self.trivial = trivial_bound(built.problem) if params.on_solution is not None else None

    @property
    def found_values(self) -> dict[objective.StageKind, tuple[int, bool]]:
        """Per stage decided: the value found and whether it is proven."""
        return {done.stage.kind: (done.found, done.proven) for done in self.bounds}

    def start_from(self, hint: Assignment | None) -> None:
        floor = self.built.pdb_floor
        if floor is not None and floor.plan is not None and \
                (hint is None or _at_least_as_good(self.built, floor.plan, hint)):
            hint = floor.plan  # the per-domain programs' plan leads on tiers 1-3 (solver/model/bounds/floors.py)
        if hint is not None:
            self.built.vars.hint(hint, self.model)
        self.lead = hint

    def result(self) -> SolveResult:
        status = UNKNOWN if self.current is None else (OPTIMAL if self.all_optimal else FEASIBLE)
        bound = objective.lex_bound(self.built.problem, self.bounds)
        return SolveResult(assignment=self.current, status=status, bound=bound,
                           solve_seconds=time.perf_counter() - self.start, stages=tuple(self.reports),
                           pruned=self.pruned)

    def stage(self, i: int, stage: objective.Stage, cost_cutoff: tuple[Tiers, int] | None,
              stage_cutoff: Callable[[objective.StageKind, dict[objective.StageKind, tuple[int, bool]]], int | None]
              | None) -> bool:
        """Decide stage ``i``; False ends the run (pruned, out of time, or no solution)."""
        cut = self._cost_cut(stage, cost_cutoff)
        limit = stage_cutoff(stage.kind, self.found_values) if stage_cutoff is not None and not stage.maximize \
            else None
        floored, better = _floor(self.built, stage, self.current)
        if better is not None:
            self.lead = better  # the programs' plan leads: the cost stage starts from it
            self.built.vars.hint(better, self.model)
        if limit is not None and floored is not None and floored > limit and stage.cost is None:
            self.reports.append({"stage": stage.name, "status": "INFEASIBLE", "seconds": 0.0, "floor": floored})
            self.pruned, self.all_optimal = True, False  # proven by the floor, without a search
            return False
        if limit is not None:
            self.model.add(stage.expr <= limit)
            cut = True
        proven = _proven_by(self.built, self.model, stage, self.lead, floored)
        if proven is not None and (limit is None or proven <= limit) and \
                _holds(self.model, self.lead, self.params, self.checked):
            self._take_lead(stage, proven, floored)
            return True
        remaining = self.params.time_limit - (time.perf_counter() - self.start)
        if remaining <= 0.01 or (self.stop is not None and self.stop.is_set()):
            self.all_optimal = False
            return False
        share = remaining if i == len(self.built.stages) - 1 else remaining * 0.6
        return self._search(stage, share, floored, cut)

    def _cost_cut(self, stage: objective.Stage, cost_cutoff: tuple[Tiers, int] | None) -> bool:
        """Branch and bound across sub-models: the cost stage must beat the incumbent's cost
        when everything before it was proven and matched the incumbent's tiers 1-3."""
        if cost_cutoff is None or stage.cost is None or self.current is None:
            return False
        if not all(p for _, p in self.found_values.values()) or \
                score(self.built.problem, self.current).head != cost_cutoff[0]:
            return False
        self.model.add(stage.cost <= cost_cutoff[1])
        return True

    def _take_lead(self, stage: objective.Stage, proven: int, floored: int | None) -> None:
        """The hinted plan meets the stage's proven bound: no search (solver/model/bounds/floors.py)."""
        self.reports.append({"stage": stage.name, "status": "OPTIMAL", "seconds": 0.0, "objective": float(proven),
                             "bound": float(proven), "fromHint": True,
                             **({"floor": floored} if floored is not None else {})})
        self.bounds.append(objective.StageBound(stage, proven, proven))
        report = self._reporter(stage)
        if report is not None:
            report(proven, proven)
        self.current = self.lead
        self.model.add(stage.expr >= proven if stage.maximize else stage.expr <= proven)

    def _search(self, stage: objective.Stage, share: float, floored: int | None, cut: bool) -> bool:
        """CP-SAT on the stage, stopping at its floor; False when it found nothing."""
        floored_cost: int | None = None
        if floored is not None and stage.kind is objective.StageKind.COST_EVICTED:
            # the floor bounds the cost alone: reach it first, then the evicted pods at that cost
            floored_cost = floored
            share, floored = self._cost_first(stage, share, floored)
        code, solver = _run(self.model, stage.expr, stage.maximize, self.params, share, self.stop,
                            self._reporter(stage), floored)
        if floored is not None and code == cp_model.FEASIBLE and round(solver.objective_value) <= floored:
            code = cp_model.OPTIMAL  # stopped at a proven floor
        if floored_cost is not None:
            floored = floored_cost  # reported, and the cost's bound below
        found_any = code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
        self.reports.append({"stage": stage.name, "status": solver.status_name(code),
                             "seconds": round(solver.wall_time, 4),
                             "objective": solver.objective_value if found_any else None,
                             "bound": solver.best_objective_bound,
                             **({"floor": floored} if floored is not None else {})})
        if not found_any:
            self.pruned = code == cp_model.INFEASIBLE and cut
            self.all_optimal = False
            return False
        self._record(stage, code, solver, floored, floored_cost)
        return True

    def _cost_first(self, stage: objective.Stage, share: float, cost_floor: int) -> tuple[float, int | None]:
        """Search the cost alone down to its floor. Returns the time left for the stage and the
        floor of its weighted sum (cost·(E+1) + evicted), when the cost reached its own and the
        evicted pods have one."""
        assert stage.cost is not None
        alone = objective.Stage(objective.StageKind.COST, stage.cost, False, (1,), stage.bounds[:1], stage.cost)
        code, early = _run(self.model, stage.cost, False, self.params, share * 0.5, self.stop,
                           self._reporter(alone), cost_floor)
        share -= early.wall_time
        floored: int | None = None
        if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            if round(early.objective_value) <= cost_floor:
                self.model.add(stage.cost <= cost_floor)
                # and the evicted pods at their own floor, when there is one, end the stage
                pods = self.built.pdb_floor.evicted_pods if self.built.pdb_floor is not None else 0
                floored = stage.weights[0] * cost_floor + pods if pods else None
            self._hint_values(early.response_proto.solution)
        return share, floored

    def _reporter(self, stage: objective.Stage) -> Callable[[float, float], None] | None:
        """``params.on_solution`` for ``stage``: its value and bound decoded into the plan's tiers
        by the decoding the plan's bound goes through."""
        on_solution, trivial = self.params.on_solution, self.trivial
        if on_solution is None or trivial is None:
            return None

        def report(value: float, bound: float) -> None:
            on_solution(stage.name, objective.stage_values(stage, trivial, value, exact=True),
                        objective.stage_values(stage, trivial, bound, exact=False))
        return report

    def _record(self, stage: objective.Stage, code: cp_model.CpSolverStatus, solver: cp_model.CpSolver,
                floored: int | None, floored_cost: int | None) -> None:
        """Keep what the stage found and its proven bound, fix its value, and hint the next stage
        with the better of the lead and this solution."""
        values = list(solver.response_proto.solution)
        self.current = self.built.vars.extract(values)
        found = round(solver.objective_value)
        proven = code == cp_model.OPTIMAL
        if not proven:
            self.all_optimal = False
        bound = found if proven else solver.best_objective_bound
        if not proven and floored is not None and not stage.maximize:
            bound = max(bound, floored if floored_cost is None else stage.weights[0] * floored_cost)
        self.bounds.append(objective.StageBound(stage, found, bound))
        self.model.add(stage.expr >= found if stage.maximize else stage.expr <= found)
        if self.lead is not None and _at_least_as_good(self.built, self.lead, self.current):
            self.built.vars.hint(self.lead, self.model)  # the baseline still leads on the tiers below
        else:
            self.lead = self.current
            self._hint_values(values)

    def _hint_values(self, values: Sequence[int]) -> None:
        """Hint the model with a whole solution, variable by variable."""
        self.model.proto.clear_solution_hint()
        for var_index, value in enumerate(values):
            self.model.proto.solution_hint.vars.append(var_index)
            self.model.proto.solution_hint.values.append(value)


def _run(model: cp_model.CpModel, expr: cp_model.LinearExprT, maximize: bool, params: SolveParams, seconds: float,
         stop: threading.Event | None, report: Callable[[float, float], None] | None, floor: int | None
         ) -> tuple[cp_model.CpSolverStatus, cp_model.CpSolver]:
    """One CP-SAT solve of ``expr``; a minimisation stops as soon as it meets ``floor``;
    ``report(value, bound)`` on each improving solution."""
    if maximize:
        model.maximize(expr)
    else:
        model.minimize(expr)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = params.workers
    solver.parameters.random_seed = params.seed
    solver.parameters.relative_gap_limit = params.relative_gap
    solver.parameters.linearization_level = params.linearization_level
    watcher = _watch(stop, solver)
    callback = _Progress(report, floor) if report is not None or floor is not None else None
    code = solver.solve(model, callback)
    if watcher is not None:
        watcher.set()
    return code, solver


class _Progress(cp_model.CpSolverSolutionCallback):
    def __init__(self, report: Callable[[float, float], None] | None, floor: int | None) -> None:
        super().__init__()
        self.report = report
        self.floor = floor

    def on_solution_callback(self) -> None:
        if self.report is not None:
            self.report(self.objective_value, self.best_objective_bound)
        if self.floor is not None and round(self.objective_value) <= self.floor:
            self.stop_search()  # proven: nothing is below the floor


def _watch(stop: threading.Event | None, solver: cp_model.CpSolver) -> threading.Event | None:
    """Stop the running search when ``stop`` is set (client cancelled, shutdown)."""
    if stop is None:
        return None
    done = threading.Event()

    def run() -> None:
        while not done.wait(0.05):
            if stop.is_set():
                solver.stop_search()
                return

    threading.Thread(target=run, daemon=True).start()
    return done


def _at_least_as_good(built: BuiltModel, a: Assignment, b: Assignment) -> bool:
    problem = built.problem
    return score(problem, a) >= score(problem, b)


def _floor(built: BuiltModel, stage: objective.Stage, found: Assignment | None
           ) -> tuple[int | None, Assignment | None]:
    """A proven floor for this stage (solver/model/bounds/floors.py) once the stages before it placed
    every pod: fixed as found, every plan this stage may return places them all too. With it,
    the programs' plan when it is at least as good as what was found."""
    if found is None or (stage.kind is not objective.StageKind.PDB and stage.cost is None):
        return None, None
    if not _places_every_pod(built, found):
        return None, None
    if stage.kind is objective.StageKind.PDB:
        return (built.pdb_floor.violations if built.pdb_floor is not None else None), None
    # the PDB stage before this one is fixed: at most its violations
    violations = evaluate(built.problem, found).pdb_violations
    if violations not in built.cost_floors:
        built.cost_floors[violations] = floors.cost_floor(built.problem, violations)
    cost = built.cost_floors[violations]
    if cost is None:
        return None, None
    better = cost.plan if cost.plan is not None and _at_least_as_good(built, cost.plan, found) else None
    return cost.cost, better


def _proven_by(built: BuiltModel, model: cp_model.CpModel, stage: objective.Stage, lead: Assignment | None,
               floor: int | None
               ) -> int | None:
    """The stage's value when the hinted plan meets a proven bound on it, else None: every pod
    placed and every workload satisfied for the first stage, the floor for the others."""
    if lead is None:
        return None
    kind = stage.kind
    if kind in objective.TIER1_KINDS:
        return _hinted_value(model, stage.expr) if _places_every_pod(built, lead) else None
    if floor is None:
        return None
    ev = evaluate(built.problem, lead)
    if kind is objective.StageKind.PDB:
        return ev.pdb_violations if ev.pdb_violations <= floor else None
    if stage.cost is None or ev.cost_milli > floor:
        return None
    if kind is objective.StageKind.COST:
        return ev.cost_milli
    pods = built.pdb_floor.evicted_pods if built.pdb_floor is not None else 0
    return stage.weights[0] * ev.cost_milli + ev.evicted_pods if ev.evicted_pods <= pods else None


def _holds(model: cp_model.CpModel, lead: Assignment | None, params: SolveParams,
           checked: dict[int, tuple[Assignment, bool]]) -> bool:
    """Does the model accept the hinted plan as it stands? CP-SAT with every hinted variable
    fixed to its hint: a plan is taken without a search only when the model agrees it is one."""
    if lead is None:
        return False
    if id(lead) not in checked:
        solver = cp_model.CpSolver()
        solver.parameters.fix_variables_to_their_hinted_value = True
        solver.parameters.num_workers = params.workers
        solver.parameters.max_time_in_seconds = max(0.05, params.time_limit / 10)
        checked[id(lead)] = (lead, solver.solve(model) in (cp_model.OPTIMAL, cp_model.FEASIBLE))
    return checked[id(lead)][1]


def _hinted_value(model: cp_model.CpModel, expr: cp_model.LinearExprT) -> int | None:
    """``expr`` at the model's hint, None when the hint leaves one of its variables out."""
    model.minimize(expr)
    hinted = dict(zip(model.proto.solution_hint.vars, model.proto.solution_hint.values, strict=True))
    goal = model.proto.objective
    total = goal.offset
    for var, coeff in zip(goal.vars, goal.coeffs, strict=True):
        if var not in hinted:
            return None
        total += coeff * hinted[var]
    return round(total * (goal.scaling_factor or 1))


def _places_every_pod(built: BuiltModel, assignment: Assignment) -> bool:
    problem = built.problem
    ev = evaluate(problem, assignment)
    return all(ev.satisfied.values()) and ev.placed == sum(len(c.pods) for c in problem.classes)
