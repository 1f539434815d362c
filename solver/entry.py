"""The ``gangplace`` command's entry point: ``--version`` answered from the installed metadata
alone (importing the CLI loads OR-Tools, gRPC and the Kubernetes client: seconds on a cold
disk), everything else handed to ``solver.cli.main``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from solver.core.about import version


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        print(version())
        return 0
    from solver.cli import main as cli_main

    return cli_main(argv)
