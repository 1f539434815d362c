"""Snapshot -> problem (``build``): workloads and their pod classes, victim units
(``workloads``), DRA options per class (``dra``), and how an assignment of classes to nodes
scores (``assignment``). Pure: no I/O, no solver.
"""
