"""A served object's `metadata.managedFields` cut from YAML text before any parser reads it, where that is certain.

An API server's objects carry the field managers' bookkeeping (`metadata.managedFields`): on the bench's 10,000 served
Pod documents it is 40 % of the bytes and more than half of the parse (every `f:x: {}` is a key and an empty map to
build). Nothing that reads files through `yaml_documents.load_all` (`validate`, `simulate`, `disrupt`) reads it, and
the model checks no field of a top-level `metadata` by name. So it is cut from the text, unparsed, where the cut is
certain to change nothing else: what a parser reads of the rest, and whether and how the text fails.

A block is cut only in a document laid out as `kubectl get -o yaml` prints one: from the document's start (a line
`---`, or the start of the text) every line up to the block's end is *simple* (`_SIMPLE`: an indentation, `- `s, a
plain key that starts with a letter, `:`, and nothing or one value on the line: `{}`, `[]`, a quoted scalar without
escapes or a plain one that starts with a letter), the block is the line `  managedFields:` and the lines after it
indented deeper or starting `  - `, and the line after it starts a key at column 0 or 2, a document (`---`), or is
the end of the text. Simple lines are complete: no scalar, flow collection or comment goes on past the line's end,
and none of their scalars can fail to construct (a scalar that starts with a letter is a string, a boolean or null).
How such a head parses then depends only on where its lines' spaces, `-`, `:`, quotes and brackets are and on their
lengths (a simple key is at most 1024 characters): on its *shape* (`_SHAPE`: every other character made `x`). The
first head of each shape is read by PyYAML twice, whole and cut; the shape is cut everywhere only when both read as
one map whose `metadata` is a non-empty map, equal but for `managedFields`, which the whole one has. The line after
the block continues that `metadata` map or the document, the same in both texts; every line of the document after it
is the same text in the same state. Duplicate `managedFields` keys are not cut (the later wins in PyYAML).

Anything else (a block in a `List`'s items, a comment, a multi-line scalar or an annotation with escapes before the
block, a shape PyYAML reads otherwise) is left to the full parse. Errors keep their marks: a cut text that fails
anywhere is read whole (see yaml_fastpath).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# A simple line (module doc), without its line break. A plain scalar starts with a letter and has no `: `, ` #`,
# trailing space or `:` at its end; a key has no space; a single-quoted scalar no `'`; a double-quoted one no `"`, `\`.
# A plain value may also be digits and lowercase letters, with a letter, first digit not 0 (a hash, `7c5ddbdf54`):
# no int (its letters need a `0b` or `0x`), float (a `.`), or timestamp (a `-`), so a string.
_PLAIN_KEY = r"(?:[A-Za-z](?:[!-9;-~]|:[!-9;-~])*|\.)"
_PLAIN_VALUE = r"(?:[A-Za-z](?:[!-9;-~]|:[!-9;-~]| [!\"$-9;-~])*|[1-9][0-9a-z]*[a-z][0-9a-z]*)"
_VALUE = rf"(?:\{{\}}|\[\]|'[ -&(-~]*'|\"[ !#-\[\]-~]*\"|{_PLAIN_VALUE})"
_SIMPLE = re.compile(rf"[ ]*(?:- )*{_PLAIN_KEY}:(?: {_VALUE})?")

_BLOCK = "  managedFields:\n"
# The block's lines after its first: deeper than column 2, or an item of its list at column 2.
_BLOCK_LINES = re.compile(r"(?:  (?: |- )[^\n]*\n)*")
# What may follow the block (module doc).
_AFTER = re.compile(r"(?:  )?[A-Za-z]|---(?:[ \n]|\Z)|\Z")
_DOCUMENT = "---\n"
# The block's owner, the last line at column 0 before it; a line break before a line that starts at column 0.
_OWNER = "metadata:\n"
_COLUMN_0 = re.compile(r"\n[^ ]")
# The shape of a head: structural characters kept, every other printable character `x`.
_SHAPE = str.maketrans({chr(c): "x" for c in range(0x21, 0x7F) if chr(c) not in "-:'\"{}[]"})
# How far back from a block its document may start: a bound on the search, not on what may be cut.
_HEAD_WINDOW = 65536
# Shapes read by PyYAML in one text at most: beyond, blocks of new shapes are left in (each costs two parses).
_MAX_SHAPES = 256


class Pruner:
    """Cuts the certain `metadata.managedFields` blocks of texts (module doc); remembers the simple lines and the
    shapes it has checked. `pyyaml_load_all` is PyYAML's reading, the one the cut is checked against."""

    def __init__(self, pyyaml_load_all: Callable[[str], list[Any]]) -> None:
        self._pyyaml_load_all = pyyaml_load_all
        self._simple: set[str] = {""}
        self._shapes: dict[tuple[int, str], bool] = {}

    def prune(self, text: str) -> str:
        """`text` without the blocks certain to be cut (module doc); `text` itself when there are none."""
        pieces: list[str] = []
        kept = 0  # text[:kept] is in `pieces`
        position = 0
        while (start := text.find(_BLOCK, position)) >= 0:
            position = start + len(_BLOCK)
            if start and text[start - 1] != "\n":
                continue
            end = _BLOCK_LINES.match(text, position).end()  # type: ignore[union-attr]  # matches the empty text
            position = end
            head = self._head(text, start, kept)
            if head < 0 or not _AFTER.match(text, end) or not self._certain(text, head, start, end):
                continue
            pieces.append(text[kept:start])
            kept = end
        if not pieces:
            return text
        pieces.append(text[kept:])
        return "".join(pieces)

    def _head(self, text: str, start: int, floor: int) -> int:
        """Where the document of the block at `start` begins (after its `---` line, or 0), or -1 beyond the window
        or before `floor` (the end of the last block cut: a head never spans a cut)."""
        low = max(floor, start - _HEAD_WINDOW)
        found = text.rfind("\n" + _DOCUMENT, low, start)
        if found >= 0:
            return found + 1 + len(_DOCUMENT)
        if low == 0:
            return len(_DOCUMENT) if text.startswith(_DOCUMENT) else 0
        return -1

    def _certain(self, text: str, head: int, start: int, end: int) -> bool:
        """Whether the block `text[start:end]` can be cut from its document, which begins at `head` (module doc)."""
        if text.startswith(_BLOCK, head) or text.find("\n" + _BLOCK, head, start) >= 0:
            return False  # a duplicate key: the later one wins, so which one a reader keeps depends on the order
        found = text.rfind("\n" + _OWNER, head, start)
        owner = head if found < 0 else found + 1
        if not text.startswith(_OWNER, owner) or _COLUMN_0.search(text, owner + len(_OWNER) - 1, start - 1):
            return False  # the block is not in the document's top-level `metadata`
        region = text[head:end]
        lines = region.split("\n")
        if not self._simple.issuperset(lines):  # checked once per distinct line: most repeat
            for line in set(lines).difference(self._simple):
                if not _SIMPLE.fullmatch(line):
                    return False
                self._simple.add(line)
        shape = (start - head, region.translate(_SHAPE))  # the length before the block says where it starts
        known = self._shapes.get(shape)
        if known is None:
            if len(self._shapes) >= _MAX_SHAPES:
                return False
            known = self._shapes[shape] = self._reads_alike(text[head:start], text[start:end])
        return known

    def _reads_alike(self, before: str, block: str) -> bool:
        """Whether PyYAML reads `before + block` and `before` as one map each whose `metadata` maps are equal but for
        the first's `managedFields` (module doc)."""
        try:
            whole, cut = self._pyyaml_load_all(before + block), self._pyyaml_load_all(before)
        except Exception:  # any failure: not certain
            return False
        if len(whole) != 1 or len(cut) != 1 or type(whole[0]) is not dict or type(cut[0]) is not dict:
            return False
        full_meta, cut_meta = whole[0].get("metadata"), cut[0].get("metadata")
        if type(full_meta) is not dict or type(cut_meta) is not dict or not cut_meta:
            return False
        if "managedFields" not in full_meta or "managedFields" in cut_meta:
            return False
        rest = {key: value for key, value in full_meta.items() if key != "managedFields"}
        return rest == cut_meta and {**whole[0], "metadata": rest} == cut[0]
