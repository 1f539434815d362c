"""The Kubernetes CEL value types: ``quantity()`` and ``semver()`` values."""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal

import celpy.celtypes as ct

# ---- quantity and semver values -------------------------------------------------------

INT64 = (-(2**63), 2**63 - 1)


class Quantity:
    """A ``kubernetes.Quantity`` CEL value: an exact decimal."""

    __slots__ = ("value",)

    def __init__(self, value: Decimal) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Quantity({self.value})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            raise TypeError(f"no such overload: kubernetes.Quantity == {type_name(other)}")
        return self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)


_SEMVER = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)


class Semver:
    """A ``kubernetes.Semver`` CEL value (semver.org 2.0.0 precedence; build metadata ignored)."""

    __slots__ = ("major", "minor", "patch", "pre", "text")

    def __init__(self, text: str, major: int, minor: int, patch: int, pre: tuple[str, ...]) -> None:
        self.text, self.major, self.minor, self.patch, self.pre = text, major, minor, patch, pre

    def __repr__(self) -> str:
        return f"Semver({self.text})"

    def _key(self) -> tuple[object, ...]:
        # A release ranks above its pre-releases; numeric identifiers rank below alphanumeric ones.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)

    def compare(self, other: Semver) -> int:
        a, b = self._key(), other._key()
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            raise TypeError(f"no such overload: kubernetes.Semver == {type_name(other)}")
        return self.compare(other) == 0

    def __hash__(self) -> int:
        return hash(self._key())


def parse_semver(text: str) -> Semver:
    """A strict semver.org 2.0.0 version; ``ValueError`` otherwise (as blang/semver Parse)."""
    m = _SEMVER.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"not a semantic version: {text!r}")
    pre = tuple(m.group(4).split(".")) if m.group(4) else ()
    return Semver(text, int(m.group(1)), int(m.group(2)), int(m.group(3)), pre)


def normalize_semver(text: str) -> str:
    """Upstream normalizeAndParse: drop a "v", leading zeros, fill up minor and patch."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or not p[0].isdigit():
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def type_name(value: object) -> str:
    names: Sequence[tuple[type, str]] = (
        (ct.BoolType, "bool"), (ct.IntType, "int"), (ct.UintType, "uint"), (ct.DoubleType, "double"),
        (ct.StringType, "string"), (ct.BytesType, "bytes"), (ct.ListType, "list"), (ct.MapType, "map"),
        (Quantity, "kubernetes.Quantity"), (Semver, "kubernetes.Semver"),
        (ct.TimestampType, "google.protobuf.Timestamp"), (ct.DurationType, "google.protobuf.Duration"),
        (type(None), "null_type"), (ct.NullType, "null_type"), (type, "type"),
    )
    for cls, name in names:
        if isinstance(value, cls):
            return name
    return type(value).__name__
