"""Kubernetes resource quantities, parsed exactly.

A quantity is `<sign><number><suffix>` where the suffix is a binary SI suffix (Ki, Mi, Gi, Ti, Pi, Ei),
a decimal SI suffix (n, u, m, "", k, M, G, T, P, E) or a decimal exponent (e3, E-2). Parsing goes through
`fractions.Fraction`, so `0.1` is exactly one tenth and nothing is lost to floating point.

Inside nodewright every resource is an integer in its canonical unit: CPU in millicores, every other
resource (memory and storage in bytes, pods, GPUs, extended resources) in whole units. Conversion rounds
up, as the Kubernetes scheduler does when it compares requests (`MilliValue()` / `Value()` round up).
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?))$"
)

# Resources whose canonical unit is the milli-unit; all others are counted in whole units.
MILLI_RESOURCES = frozenset({"cpu"})


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Fraction:
    """Parse a Kubernetes quantity exactly.

    Input: a string such as `500m`, `2Gi`, `1e3`, `1.5`, or a YAML number.
    Output: the exact value as a Fraction. Raises QuantityError naming the text when it is malformed.
    """
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(str(text))
    if not isinstance(text, str):
        raise QuantityError(f"{text!r} is not a quantity")
    return _parse_text(text)


# A cluster's pods repeat a handful of request strings ("500m", "1Gi") thousands of times, and exact
# parsing through Fraction costs ~60 us each: parsed once per distinct string instead. Fractions are
# immutable, so sharing them is safe; malformed text raises every time (exceptions are not cached).
@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Fraction:
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(
            f"{text!r} is not a quantity (expected a number with an optional suffix such as 500m, 2Gi or 1e3)"
        )
    value = Fraction(match["number"])
    if match["exp"]:
        value *= Fraction(10) ** int(match["exp"][1:])
    else:
        suffix = match["suffix"] or ""
        value *= _BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix]
    return -value if match["sign"] == "-" else value


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def to_canonical(resource: str, text: str | int | float) -> int:
    """Convert a quantity for `resource` to nodewright's integer unit (millicores for cpu, else units).

    Rounds up, so a request never looks smaller than it is.
    """
    if isinstance(text, str):
        return _canonical_text(resource in MILLI_RESOURCES, text)
    value = parse_quantity(text)
    if resource in MILLI_RESOURCES:
        value *= 1000
    return _ceil(value)


@lru_cache(maxsize=4096)
def _canonical_text(milli: bool, text: str) -> int:
    value = _parse_text(text)
    return _ceil(value * 1000 if milli else value)


def format_canonical(resource: str, value: int) -> str:
    """Render a canonical integer back as a short human quantity (for tables and messages)."""
    if resource in MILLI_RESOURCES:
        return f"{value // 1000}" if value % 1000 == 0 else f"{value}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value and value % factor == 0:
                return f"{value // factor}{suffix}"
    return str(value)
