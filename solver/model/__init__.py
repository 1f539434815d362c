"""The pure core of gangplace: snapshot -> problem -> CP-SAT model -> plan.

Imports only the standard library, ``ortools``, ``numpy`` (``bounds``) and ``celpy``
with ``lark``, its parser (the DRA selectors of ``cel``); does no I/O and configures no
logging. import-linter ("The pure core does no I/O-bound imports") keeps the I/O-bound
packages and the edge modules out; review keeps the rest.
"""
