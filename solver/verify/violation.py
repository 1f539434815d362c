"""What a check returns, and the preemption power of a ``Never`` preemptor."""

from __future__ import annotations

from dataclasses import dataclass

NEVER = float("-inf")  # preemption power of a `Never` preemptor


@dataclass(frozen=True, slots=True, kw_only=True)
class Violation:
    rule: str
    subject: str
    detail: str
    requested: float = 0
    used: float = 0
    capacity: float = 0

    def __str__(self) -> str:
        return f"{self.rule}: {self.subject}: {self.detail}"
