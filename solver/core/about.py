"""What this build is: the line ``gangplace --version`` prints (standard library only, so the
command's entry point answers it without loading the solver)."""

from __future__ import annotations

import platform
from importlib import metadata


def version() -> str:
    return (f"gangplace {metadata.version('gangplace')} (ortools {metadata.version('ortools')}, "
            f"python {platform.python_version()})")
