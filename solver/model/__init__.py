"""The pure core of gangplace: snapshot -> problem -> CP-SAT model -> plan.

Imports only the standard library and ``ortools``; does no I/O and configures
no logging (import-linter enforces the first, review the rest).
"""
