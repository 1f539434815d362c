"""The shared words of every step: the snapshot (``snapshot``), the plan (``plan``), the error
tree (``errors``), quantities, feature gates, options and the stop (``stopping``).

Standard library only: every other package of the solver imports from here, and this package
imports from none of them (.importlinter contracts in pyproject.toml).
"""
