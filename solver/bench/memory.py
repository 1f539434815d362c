"""The resident peak of one bench case, not of the whole run.

``ru_maxrss`` only ever grows, so down a table it reports the largest case so far. On Linux
the high-water mark can be reset (writing ``5`` to ``/proc/self/clear_refs``, see proc(5)),
so each case starts its own mark at the process's current size, after a garbage collection
and ``malloc_trim`` have handed back what earlier cases freed. What is still resident from
them (imports, caches, arenas glibc keeps) counts in every case; the run's first row shows
that floor. Where the mark cannot be reset the process peak is reported, and the row says so.
"""

from __future__ import annotations

import gc
import re
import resource
from dataclasses import dataclass

from solver.service.memguard import trim

_CLEAR_REFS = "/proc/self/clear_refs"


def status_mib(field: str, pid: int | str = "self") -> float | None:
    """A ``kB`` field of /proc/<pid>/status (VmRSS, VmHWM) in MiB; None where there is none."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            found = re.search(rf"^{field}:\s+(\d+) kB", fh.read(), re.MULTILINE)
    except OSError:
        return None
    return int(found.group(1)) / 1024 if found else None


@dataclass
class Peak:
    """Reset at the start of a case; read at its end."""

    per_case: bool = False

    def start(self) -> None:
        gc.collect()
        trim()
        try:
            with open(_CLEAR_REFS, "w", encoding="ascii") as fh:
                fh.write("5")
            self.per_case = status_mib("VmHWM") is not None
        except OSError:
            self.per_case = False

    def mib(self) -> float:
        if self.per_case and (hwm := status_mib("VmHWM")) is not None:
            return round(hwm, 1)
        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)

    @property
    def scope(self) -> str:
        return "case" if self.per_case else "process"
