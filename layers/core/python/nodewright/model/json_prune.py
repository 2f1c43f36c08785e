"""A served object's `metadata.managedFields` left unparsed in a file of `kubectl get -o json`, where that is certain.

The field managers' bookkeeping is 40 % of such a file and more than half of `json.loads` (every `"f:x": {}` a key
and an empty map to build); nothing that reads files through the loader reads it (see yaml_prune). In pretty-printed
JSON a raw line break is never inside a string, so a line that opens `"managedFields": [` starts a member, and its
array ends at the first later line that is its indentation and `]`, if the text is valid. The array's text is
replaced by the constant `NaN` (a *marker*), which the decoder hands to `parse_constant` (strict JSON has no `NaN`:
`load_json` refuses it otherwise), and the marked text is decoded:
- if the array's text is a JSON value, the marked text decodes exactly when the whole text does, to the same
  objects but for the marker's place (JSON's grammar is context-free; a value replaced by a value);
- the decoded documents are accepted only when every constant the decoder met was a marker, and each marker is the
  `managedFields` of a document's top-level `metadata` (the document, or an item of its `List`); the marker is then
  removed. Anything else (a marker elsewhere, overwritten by a later duplicate key, a `NaN` of the text) decodes the
  whole text instead.
Whether the array's text is a JSON value is known without decoding it, by its *shape* (`_SHAPE`: every printable
ASCII character but quotes, backslashes, brackets, braces, commas and colons made `x`): where the shape has no `x`
outside strings (no number, `true`, `false` or `null`) and no backslash before an `x` (only `\\"` and `\\\\`
escapes), every text of that shape has the same strings, the same escapes and the same tokens between them, so it is
a value exactly when any one of them is; the first array of each shape is decoded.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A string of a shape (or of a text): from a quote outside strings to the next quote not escaped.
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_OPEN = '"managedFields": [\n'
_SHAPE = str.maketrans({chr(c): "x" for c in range(0x21, 0x7F) if chr(c) not in '"\\{}[],:'})
_MARKER = "NaN"
_MAX_SHAPES = 256


class _Marker:
    """What the decoder makes of a marker."""


def load_pruned(text: str) -> list[Any] | None:
    """`[value]` for the JSON text `text` with the certain `metadata.managedFields` left out (module doc); None when
    nothing was cut or the marked text is not certain (the caller then decodes the whole text)."""
    marked, markers = _mark(text)
    if not markers:
        return None
    met: list[_Marker] = []

    def constant(name: str) -> Any:
        met.append(_Marker())
        return met[-1]

    try:
        value = json.loads(marked, parse_constant=constant)
    except (ValueError, RecursionError):
        return None
    found = 0
    for metadata in _top_metadata(value):
        if type(metadata.get("managedFields")) is _Marker:
            del metadata["managedFields"]
            found += 1
    return [value] if found == markers == len(met) else None


def _top_metadata(value: Any) -> list[dict[str, Any]]:
    """The `metadata` maps of the document and of its `List`'s items."""
    documents = [value]
    if type(value) is dict and type(value.get("items")) is list:
        documents.extend(value["items"])
    return [doc["metadata"] for doc in documents if type(doc) is dict and type(doc.get("metadata")) is dict]


def _mark(text: str) -> tuple[str, int]:
    """`text` with each certain managedFields array replaced by a marker, and how many were."""
    pieces: list[str] = []
    shapes: dict[str, bool] = {}
    kept = position = 0
    while (start := text.find(_OPEN, position)) >= 0:
        position = start + len(_OPEN)
        line = text.rfind("\n", 0, start) + 1
        indent = text[line:start]
        if indent.strip(" "):
            continue
        close = text.find("\n" + indent + "]", position)
        if close < 0:
            break
        bracket, end = position - 2, close + len(indent) + 2  # the `[` and past the `]`
        position = end
        if _certain(text[bracket:end], shapes):
            pieces += (text[kept:bracket], _MARKER)
            kept = end
    if not pieces:
        return text, 0
    pieces.append(text[kept:])
    return "".join(pieces), len(pieces) // 2


def _certain(array: str, shapes: dict[str, bool]) -> bool:
    """Whether `array` is a JSON value, known by its shape (module doc)."""
    shape = array.translate(_SHAPE)
    known = shapes.get(shape)
    if known is None:
        if len(shapes) >= _MAX_SHAPES:
            return False
        known = shapes[shape] = _shape_decides(shape) and _decodes(array)
    return known


def _shape_decides(shape: str) -> bool:
    """Whether every text of this shape is a JSON value exactly when one is: no escape but `\\"` and `\\\\` (the
    character after a backslash is otherwise an `x`), and no `x` outside strings (a number or `true`)."""
    return "\\x" not in shape and "x" not in _STRINGS.sub("", shape)


def _decodes(array: str) -> bool:
    try:
        json.loads(array, parse_constant=_refuse)
    except (ValueError, RecursionError):
        return False
    return True


def _refuse(name: str) -> Any:
    raise ValueError(name)
