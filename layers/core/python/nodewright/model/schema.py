"""Small typed readers over YAML-loaded data that report problems through a `Collector`.

YAML gives us `Any`; these helpers narrow it to the type a field must have and, when it does not, record
an error naming the field and return None, so the caller can keep checking the rest of the document.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from nodewright.model.errors import Collector
from nodewright.model.quantity import QuantityError, parse_quantity, to_canonical

# A label/annotation key: an optional DNS-subdomain prefix and a name of at most 63 characters.
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def join(path: str, key: str | int) -> str:
    """Extend a field path: `spec` + `template` -> `spec.template`; an int makes `[i]`."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if not path:
        return key
    return f"{path}.{key}"


def map_key(path: str, key: str) -> str:
    """The path of an entry of a free-form map, e.g. `spec.tags["team"]`."""
    return f'{path}["{key}"]'


def type_name(value: Any) -> str:
    """How a YAML value's type reads in an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    return type(value).__name__


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """The nearest valid spelling of `word` among `choices`, if one is close enough."""
    options = list(choices)
    matches = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not matches:
        # Case slips ("nodeclassref") are common and difflib scores them low.
        lowered = {o.lower(): o for o in options}
        if word.lower() in lowered:
            return lowered[word.lower()]
        return None
    return matches[0]


def check_fields(
    ctx: Collector,
    obj: Mapping[str, Any],
    path: str,
    allowed: Iterable[str],
    unsupported: Mapping[str, str] | None = None,
) -> None:
    """Report every key of `obj` that is not an allowed field.

    `unsupported` maps fields that exist in Karpenter (or older Karpenter versions) to a message saying
    what to do instead; they are reported with that message rather than as unknown.
    """
    allowed = tuple(allowed)
    for key in obj:
        if key in allowed:
            continue
        where = join(path, str(key))
        if unsupported and key in unsupported:
            ctx.error(where, unsupported[key])
            continue
        near = suggest(str(key), allowed)
        if near:
            ctx.error(where, f'unknown field "{key}"; did you mean {near}?')
        else:
            ctx.error(where, f'unknown field "{key}"; valid fields here are {", ".join(sorted(allowed))}')


def get_map(ctx: Collector, value: Any, path: str, required: bool = False) -> dict[str, Any] | None:
    """`value` as a map; None (with an error if required or of the wrong type) otherwise."""
    if value is None:
        if required:
            ctx.error(path, "is required")
        return None
    if not isinstance(value, dict):
        ctx.error(path, f"must be a map, not {type_name(value)}")
        return None
    return value


def get_list(ctx: Collector, value: Any, path: str, required: bool = False) -> list[Any] | None:
    """`value` as a list; None (with an error if required or of the wrong type) otherwise."""
    if value is None:
        if required:
            ctx.error(path, "is required")
        return None
    if not isinstance(value, list):
        ctx.error(path, f"must be a list, not {type_name(value)}")
        return None
    return value


def get_str(ctx: Collector, value: Any, path: str, required: bool = False) -> str | None:
    """`value` as a string; numbers and booleans are refused because Kubernetes refuses them too."""
    if value is None:
        if required:
            ctx.error(path, "is required")
        return None
    if not isinstance(value, str):
        ctx.error(path, f'must be a string, not {type_name(value)} (quote it: "{value}")')
        return None
    if required and not value:
        ctx.error(path, "must not be empty")
        return None
    return value


def get_int(
    ctx: Collector,
    value: Any,
    path: str,
    minimum: int | None = None,
    maximum: int | None = None,
    required: bool = False,
) -> int | None:
    """`value` as an integer within [minimum, maximum]."""
    if value is None:
        if required:
            ctx.error(path, "is required")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        ctx.error(path, f"must be an integer, not {type_name(value)}")
        return None
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        if minimum is not None and maximum is not None:
            ctx.error(path, f"{value} is out of range; use an integer from {minimum} to {maximum}")
        elif minimum is not None:
            ctx.error(path, f"{value} is too small; use an integer of at least {minimum}")
        else:
            ctx.error(path, f"{value} is too large; use an integer of at most {maximum}")
        return None
    return value


def get_bool(ctx: Collector, value: Any, path: str) -> bool | None:
    """`value` as a boolean (true/false)."""
    if value is None:
        return None
    if not isinstance(value, bool):
        ctx.error(path, f"must be true or false, not {type_name(value)}")
        return None
    return value


def get_enum(ctx: Collector, value: Any, path: str, choices: Iterable[str], required: bool = False) -> str | None:
    """`value` as one of `choices`, naming the nearest one when it is not."""
    text = get_str(ctx, value, path, required=required)
    if text is None:
        return None
    options = tuple(choices)
    if text in options:
        return text
    near = suggest(text, options)
    hint = f"; did you mean {near}?" if near else ""
    ctx.error(path, f'"{text}" is not valid; use one of {", ".join(options)}{hint}')
    return None


def get_str_map(ctx: Collector, value: Any, path: str) -> dict[str, str]:
    """A map of string to string (labels, annotations, tags); wrong entries are reported and dropped."""
    raw = get_map(ctx, value, path)
    if raw is None:
        return {}
    out: dict[str, str] = {}
    for key, item in raw.items():
        if not isinstance(key, str):
            ctx.error(map_key(path, str(key)), f"keys must be strings, not {type_name(key)}")
            continue
        if not isinstance(item, str):
            ctx.error(map_key(path, key), f'must be a string, not {type_name(item)} (quote it: "{item}")')
            continue
        out[key] = item
    return out


def get_resources(ctx: Collector, value: Any, path: str, allow_negative: bool = False) -> dict[str, int]:
    """A Kubernetes resource list parsed into canonical integers; bad quantities are reported by name."""
    raw = get_map(ctx, value, path)
    if raw is None:
        return {}
    out: dict[str, int] = {}
    for name, quantity in raw.items():
        where = map_key(path, str(name))
        if not isinstance(quantity, (str, int, float)) or isinstance(quantity, bool):
            ctx.error(where, f"must be a quantity such as 500m or 2Gi, not {type_name(quantity)}")
            continue
        try:
            exact = parse_quantity(quantity)
        except QuantityError as exc:
            ctx.error(where, str(exc))
            continue
        if exact.numerator < 0 and not allow_negative:  # Fraction keeps the sign there; comparing with 0 is slow
            ctx.error(where, f"{quantity!r} is negative; resource quantities must be zero or more")
            continue
        out[str(name)] = to_canonical(str(name), quantity)
    return out


@lru_cache(maxsize=4096)
def label_key_problem(key: str) -> str | None:
    """Why `key` is not a valid Kubernetes label key (qualified name), or None when it is.

    Kept by key: a cluster's objects carry a few dozen distinct label keys, and a cold provisioner checked every
    key of 3,000 Nodes' labels (84,000 checks, two regular expressions each) to parse them."""
    if not key:
        return "a label key must not be empty"
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        return f'"{key}" has an empty prefix before "/"'
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f'"{key}" has an invalid prefix "{prefix}" (use a lower-case DNS subdomain such as example.com)'
    if len(name) > 63 or not _NAME_PART.match(name):
        return (
            f'"{key}" is not a valid label key (the name part must be at most 63 characters: letters, digits, '
            "'-', '_' or '.', starting and ending with a letter or digit)"
        )
    return None


def label_value_problem(value: str) -> str | None:
    """Why `value` is not a valid label value, or None when it is."""
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        return (
            f'"{value}" is not a valid label value (at most 63 characters: letters, digits, '
            "'-', '_' or '.', starting and ending with a letter or digit)"
        )
    return None


def dns_subdomain_problem(name: str) -> str | None:
    """Why `name` is not a valid object name (DNS-1123 subdomain), or None."""
    if not name:
        return "must not be empty"
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        return (
            f'"{name}" is not a valid name (lower-case letters, digits, "-" and ".", starting and ending alphanumeric)'
        )
    return None
