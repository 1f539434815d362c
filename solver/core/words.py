"""Counted nouns in messages: "1 eviction", "2 evictions" (never "1 evictions")."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun, singular for one."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
