"""``resource.Quantity`` parsing (k8s.io/apimachinery/pkg/api/resource), pure.

The one quantity parser of the project: ``solver.kube`` turns every quantity of an object
into base units with it, and ``solver.cel`` builds CEL ``quantity()`` values with it.
It lives in the pure core because the core must not import ``kubernetes``.

The grammar is upstream's (quantity.go)::

    <quantity>        ::= <signedNumber><suffix>
    <signedNumber>    ::= <number> | + <number> | - <number>
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= e <signedNumber> | E <signedNumber>   (an integer exponent)

Examples: ``parse_quantity("1Gi") == 1073741824``, ``parse_quantity("250m") == Decimal("0.250")``,
``parse_quantity("1.5e3") == 1500``. The value is exact (a ``Decimal``), never rounded.
"""

from __future__ import annotations

import math
import re
from decimal import Context, Decimal

_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_QUANTITY = re.compile(rf"({_NUMBER})(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}  # powers of two
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}  # powers of ten
MAX_EXPONENT = 60  # |decimal exponent| beyond this is refused: no real quantity is 1e61
MAX_DIGITS = 128  # characters of a quantity string: the largest real one has a few dozen
_EXACT = Context(prec=200)  # enough digits that no product below is ever rounded


def parse_quantity(raw: object) -> Decimal:
    """The exact value of a quantity; ``ValueError`` naming the problem when it is none.

    Accepts a string in the grammar above, or a JSON number (int or finite float), as
    ``Quantity.UnmarshalJSON`` does.
    """
    if isinstance(raw, bool):
        raise ValueError(f"not a quantity: {raw!r}")
    if isinstance(raw, int):
        return Decimal(raw)
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise ValueError(f"not a quantity: {raw!r}")
        raw = repr(raw)
    if not isinstance(raw, str):
        raise ValueError(f"not a quantity: {raw!r}")
    if len(raw) > MAX_DIGITS:  # before any arithmetic: a million digits overflow Decimal's context
        raise ValueError(f"quantity out of range: {len(raw)} characters")
    m = _QUANTITY.fullmatch(raw)
    if m is None:
        raise ValueError(f"not a quantity: {raw!r}")
    number, suffix = Decimal(m.group(1)), m.group(2) or ""
    if suffix in _BINARY:
        return _EXACT.multiply(number, Decimal(2 ** _BINARY[suffix]))
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        exponent = int(suffix[1:])
    else:
        exponent = _DECIMAL.get(suffix, 0)
    if abs(exponent) > MAX_EXPONENT:
        raise ValueError(f"quantity out of range: {raw!r}")
    return number.scaleb(exponent, _EXACT)
