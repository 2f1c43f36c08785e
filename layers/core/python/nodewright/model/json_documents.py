"""A file of JSON (`kubectl get pods -o json`) read as JSON: Python's C decoder instead of the YAML parser.

JSON is YAML, so such a file always loaded through the YAML path; but PyYAML builds a node for every value and
resolves every scalar in Python, and on a 10,000-pod dump (about 90 MB of `-o json`) that is seconds where
`json.loads` takes a fraction of one. Where the two readings of valid JSON differ, the JSON one is what the API
server and kubectl read: a number with an exponent and no dot (`1e3`) is a number, not the string YAML 1.1 makes of
it, and an escaped surrogate pair (`"\\ud83d\\ude00"`) is one character, where PyYAML refuses the file. Anything
that is not strict JSON (YAML flow style such as `{a: 1}`, `NaN`, several documents, a syntax error) is left to the
YAML path, which reads it or reports the error with its line and column as before.
"""

from __future__ import annotations

import json
import re
from typing import Any

# JSON's whitespace, then the opening of an object or an array (a match, not a strip: no copy of a large text).
_OPENS = re.compile(r"[ \t\r\n]*[\[{]")


def load_json(text: str) -> list[Any] | None:
    """The documents of `text` when it is one strict JSON value: `[value]`; None when it is not (the caller reads it
    as YAML). `NaN`, `Infinity` and `-Infinity`, which Python's decoder accepts and JSON does not, make it None."""
    if not _OPENS.match(text):
        return None
    try:
        return [json.loads(text, parse_constant=_refuse)]
    except (ValueError, RecursionError):
        return None


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
