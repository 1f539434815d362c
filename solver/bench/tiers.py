"""Which of two plans wins, and on which tier: the plan's lexicographic order (``Tiers`` in
solver/core/plan.py, docs/design.md "Objective") on the tiers a bench row holds.

A plan is better when, on the first tier where the two differ, it has more satisfied workloads
(priority by priority from the highest), more placed pods, fewer PDB violations, a lower
preemption cost, fewer evicted pods, or earlier ``firstAvailable`` entries. A cost ratio means
something only where every tier before the cost ties: a plan that breaks fewer budgets may well
cost more.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# (row key, short name, more is better), in the order the objective decides
ORDER: tuple[tuple[str, str, bool], ...] = (
    ("satisfiedWorkloads", "satisfied", True),
    ("placedPods", "placed", True),
    ("pdbViolations", "pdb", False),
    ("preemptionCost", "cost", False),
    ("evictedPods", "evicted", False),
    ("firstAvailable", "firstAvailable", False),
)
COST = 3  # the index of preemptionCost in ORDER


@dataclass(frozen=True, slots=True)
class Decision:
    """The first tier where two plans differ (``tier`` None: every tier ties) and which wins:
    ``sign`` 1 the first plan, -1 the second, 0 a tie."""

    tier: str | None
    sign: int
    mine: Any = None  # the two values on that tier
    theirs: Any = None

    @property
    def index(self) -> int:
        """The tier's place in ORDER (len(ORDER) for a tie)."""
        return next((i for i, (key, _, _) in enumerate(ORDER) if key == self.tier), len(ORDER))

    @property
    def cost_comparable(self) -> bool:
        """Every tier before the preemption cost ties, so the costs may be compared."""
        return self.index >= COST

    @property
    def short(self) -> str:
        """The tier's short name ("pdb"), "tie" when every tier ties."""
        return next((name for key, name, _ in ORDER if key == self.tier), "tie")

    @property
    def values(self) -> str:
        """"0 vs 2": both plans' values on the tier ("" for a tie)."""
        return "" if self.tier is None else f"{_value(self.mine)} vs {_value(self.theirs)}"

    def label(self) -> str:
        """"pdb 0 vs 2" (the tier's short name and both values), "tie"."""
        return "tie" if self.tier is None else f"{self.short} {self.values}"


def _value(v: Any) -> str:
    if isinstance(v, tuple):  # satisfied by priority: the total
        return str(sum(n for _, n in v))
    return f"{v:g}" if isinstance(v, float) else str(v)


def _key(tiers: Mapping[str, Any], key: str) -> Any:
    if key == "satisfiedWorkloads" and "satisfiedByPriority" in tiers:
        # (priority, satisfied) from the highest priority, as Tiers compares them
        return tuple(sorted(((int(p), int(n)) for p, n in tiers["satisfiedByPriority"].items()), reverse=True))
    if key == "preemptionCost":
        return round(float(tiers[key]) * 1000)  # in milli-units, as Tiers.cost_milli
    return tiers.get(key, 0)


def decide(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> Decision:
    """The first tier of ORDER where ``mine`` and ``theirs`` (a bench row's tiers: "gangplace",
    "baseline", "upstream") differ, and who wins there. Satisfied workloads compare priority by
    priority when both rows say them (``satisfiedByPriority``), else as totals."""
    by_priority = "satisfiedByPriority" in mine and "satisfiedByPriority" in theirs
    for key, _, more_is_better in ORDER:
        if key == "satisfiedWorkloads" and not by_priority:
            a, b = mine.get(key, 0), theirs.get(key, 0)
        else:
            a, b = _key(mine, key), _key(theirs, key)
        if a != b:
            sign = 1 if (a > b) == more_is_better else -1
            shown = {"preemptionCost": (mine.get(key), theirs.get(key))}.get(key, (a, b))
            return Decision(key, sign, *shown)
    return Decision(None, 0)
