"""NodeVolumeLimits (solver/model/attach.py): per node and CSI driver with a limit,

    Σ_{v ∈ new(n, d)} on[n, v] ≤ limit[n, d] − |held(n, d)|
    count[c, n] ≤ most[c, n]·on[n, v]                        for every class c with volume v

held(n, d): the driver's volumes that the pods bound to n and its VolumeAttachments hold;
new(n, d): the other volumes of d of the classes with a count on n. A volume two classes
share counts once, as upstream counts a volume once per node. Rows that cannot bind are left
out; problem.py has already dropped the nodes where one class alone would pass a limit.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.model import attach
from solver.model.problem import Problem
from solver.model.vars import PlacementVars


def add(problem: Problem, vars: PlacementVars) -> None:
    nodes = {n.name: n for n in problem.nodes if n.volume_limits}
    if not nodes:
        return
    for name, classes in sorted(vars.classes_by_node().items()):
        node = nodes.get(name)
        if node is None:
            continue
        have = problem.held_volumes.get(name, frozenset())
        users: dict[attach.Volume, list[int]] = {}
        for cls in classes:
            for volumes in attach.new_volumes(node, have, cls.pods[0].csi_volumes).values():
                for vol in volumes:
                    users.setdefault(vol, []).append(cls.index)
        left = attach.room(node, have)
        for driver in sorted({v[0] for v in users}):
            mine = sorted(v for v in users if v[0] == driver)
            if len(mine) <= left[driver]:
                continue  # every one of them fits
            on = []
            for vol in mine:
                used = vars.model.new_bool_var(f"attached[{name},{vol[1]}]")
                for c in users[vol]:
                    vars.model.add(vars.count_on(c, name) <= problem.candidates[c][name] * used)
                on.append(used)
            vars.model.add(cp_model.LinearExpr.sum(on) <= max(0, left[driver]))
