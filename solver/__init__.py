"""gangplace: optimal gang placement for Kubernetes workloads.

The packages, in pipeline order (each imports only those before it; the contracts in
pyproject.toml enforce it, CONTRIBUTING.md says what each owns):

- ``solver.core``      the shared words: snapshot, plan, errors, quantities, gates, the stop.
- ``solver.filters``   kube-scheduler's filter predicates; ``solver.cel`` the CEL runtime.
- ``solver.kube``      Kubernetes objects (dicts as the API prints them) -> snapshot.
- ``solver.problem``   snapshot -> problem: pod classes, victim units, DRA options.
- ``solver.baseline``  upstream's greedy walk: the baseline and the model's hint.
- ``solver.model``     problem -> CP-SAT: variables, constraint families, staged solve, bounds.
- ``solver.plan``      assignment -> plan, with each pending workload's reason.
- ``solver.verify``    the independent checker: its own reading of the objects.
- ``solver.reading``   objects read both ways: kube's snapshot and the verifier's facts.
- ``solver.api``       the one entry point every caller uses: plan(reading, options).
- ``solver.service``, ``solver.bench``, ``solver.cli``: the gRPC edge, benchmarks, the command.
"""

__version__ = "0.1.0"
