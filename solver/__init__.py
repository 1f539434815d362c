"""gangplace: optimal gang placement for Kubernetes workloads.

Layers (enforced by import-linter, see pyproject.toml):

- ``solver.model``  the pure core: snapshot types, CP-SAT model, greedy baseline, plan.
                    No I/O, no ``kubernetes``, no ``grpc``.
- ``solver.kube``   Kubernetes objects (dicts as the API prints them) -> Snapshot.
- ``solver.verify`` independent plan checker; knows nothing of the model builder.
- ``solver.api``    the one entry point every caller uses: plan(snapshot, options).
- ``solver.cli``    the ``gangplace`` command.
"""

__version__ = "0.1.0"
