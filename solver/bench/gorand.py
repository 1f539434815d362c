"""Go's ``math/rand``, as the FGD protocol's arrivals draw from it (``fgd.arrivals``).

The authors' simulator is Go: its arrival order is what a ``math/rand`` source seeded with
the seed draws. Python cannot draw the same numbers (Go's source starts from a table of its
own), so a small Go program (``gorand/main.go``, stdlib only) draws them: it is built once
with the ``go`` on PATH into the user's cache (``$XDG_CACHE_HOME/gangplace/gorand/``, keyed
by the program's hash) and run once per seed. I/O: this is the bench's, not the core's."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from solver.core.errors import SetupError

SOURCE = Path(__file__).with_name("gorand") / "main.go"
BUILD_SECONDS = 300
RUN_SECONDS = 120


class GoRandError(SetupError, ValueError):
    """Go's draws could not be had: no ``go`` to build the program, or the program failed."""


def _cache() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    return Path(root) / "gangplace" / "gorand" / digest


def binary() -> Path:
    """The built program: from the cache, or built now (once per version of its source)."""
    out = _cache() / "gorand"
    if os.access(out, os.X_OK):
        return out
    go = shutil.which("go")
    if go is None:
        raise GoRandError(f"the FGD protocol's arrivals are Go's math/rand draws: no `go` on PATH to build "
                          f"{SOURCE.name} into {out.parent} (any Go from 1.20)")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f"gorand.{os.getpid()}.tmp")
    env = {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": os.environ.get("GOTOOLCHAIN", "local")}
    try:
        done = subprocess.run([go, "build", "-trimpath", "-o", str(partial), SOURCE.name], cwd=SOURCE.parent,
                              env=env, capture_output=True, text=True, timeout=BUILD_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        raise GoRandError(f"`go build` of {SOURCE} took over {BUILD_SECONDS} s") from None
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise GoRandError(f"`go build` of {SOURCE} failed: {done.stderr.strip()[-500:]}")
    partial.replace(out)
    return out


def draws(seed: int, n: int, count: int, *, shrink: bool = False) -> tuple[list[int], list[int]]:
    """From a source seeded with ``seed``, one ``Int()`` dropped: the permutation ``Shuffle``
    makes of ``range(n)``, then ``count`` draws of ``Intn(n)`` (``shrink``: ``Intn(n)``,
    ``Intn(n - 1)``, ...)."""
    args = [str(binary()), "-seed", str(seed), "-n", str(n), "-draws", str(count)] + (["-shrink"] if shrink else [])
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=RUN_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        raise GoRandError(f"gorand took over {RUN_SECONDS} s") from None
    lines = done.stdout.split("\n")
    if done.returncode != 0 or len(lines) < 2:
        raise GoRandError(f"gorand {' '.join(args[1:])} failed: {done.stderr.strip()[-500:]}")
    perm, drawn = ([int(x) for x in line.split()] for line in lines[:2])
    if sorted(perm) != list(range(n)) or len(drawn) != count:
        raise GoRandError(f"gorand {' '.join(args[1:])} printed {len(perm)} and {len(drawn)} numbers")
    return perm, drawn
