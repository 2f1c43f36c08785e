"""YAML documents read by a native parser (`yaml_rs`) where its reading is provably PyYAML's safe load.

PyYAML builds a Python node, with its marks, for every event libyaml reports before any object exists: on 10,000
served Pod documents (37 MB) that alone is about 3 s. `yaml_rs` (Rust, wheels on PyPI) builds the objects directly,
about twice as fast. But it reads YAML 1.2, PyYAML YAML 1.1: the same text gives other objects for some plain
scalars (`yes`, `on`, `0777`, `1e3`, `12:30`, `2001-12-14`, `._5`, ...), for tags, anchors, merge keys, and in
other places (a surrogate pair escaped, NEL / LS / PS as line breaks). So the text is cut into its documents (at
each `---` at the start of a line, which begins a document in every context in both readings) and a document goes
to `yaml_rs` only when nothing in it can read differently (`_suspect_lines`); any other document goes to PyYAML
alone, as does the whole text when it has a directive, a document end marker or a character outside the safe set.
When any document fails in either parser, the whole text is read by PyYAML: its objects, or its error with the
marks of the whole text.

`_suspect_lines` is conservative. At every place a node can start (line start, after whitespace, `[`, `{`, `,` or `:`)
it flags: a tag, anchor, alias, block scalar, explicit key, directive, reserved indicator or `:`; the words only
YAML 1.1 reads as booleans, `<<`, `=`, `.inf` and `.nan`; and a scalar that starts like a number (`[-+]?.?[0-9_]`)
and is made of the characters numbers and timestamps use, unless it is a plain decimal integer or `digits.digits`
or both PyYAML's resolver and `yaml_rs` read it as the same string. It also flags a flow collection as a key and an
escaped `\\u` / `\\U`. A scalar that reads differently has one of these forms, without spaces but a timestamp's
(whose first line alone, a date, is flagged): a false alarm costs only time. The differential tests
(tests/unit/model/test_yaml_fastpath.py) compare with PyYAML on generated and damaged documents, the bench's
served pods and the repository's YAML files.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

from nodewright.model.yaml_prune import Pruner

yaml_rs: Any
try:  # a declared dependency (pyproject.toml); without it every text goes to PyYAML, as before
    import yaml_rs
except ImportError:  # pragma: no cover - an environment installed without it reads every text with PyYAML
    yaml_rs = None

# Outside this set: characters PyYAML refuses (non-printable, lone surrogates), those YAML 1.1 reads as line breaks
# (NEL, LS, PS), tab and carriage return (whose whitespace rules differ in places), and the byte-order mark.
_UNSAFE_CHAR = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
# The same for an ASCII text (`str.isascii` is a C loop): a set of rare characters is scanned for quicker than the
# complement of a large one.
_UNSAFE_ASCII = re.compile("[\x00-\x09\x0b-\x1f\x7f]")
# A directive, or a document end marker, at a line's start (searched in the distinct lines, each after a line
# break; the text's start is checked apart): documents would no longer be what lies between two `---`.
_DIRECTIVE_OR_END = re.compile(r"\n(?:%|\.\.\.(?=[ \n]|\Z))")
# A document start after a line break: `---` then a space, a line break or the end. A pattern that starts with a
# literal is searched for in C; `^---` under re.M is tried at every position (5x slower on the bench's pods).
_DOCUMENT_START = re.compile(r"\n---(?=[ \n]|\Z)")
# A first "document" of blank lines and comments only, before the first `---`: no document at all.
_NOTHING = re.compile(r"(?:[ ]*(?:#[^\n]*)?\n)*[ ]*(?:#[^\n]*)?")

# Where a scalar may end: spaces, then the end of the line, a comment, a flow indicator, or a key's `: `.
_END = r"(?=[ ]*(?:$|#|,|\]|\}|:(?: |$)))"
_SUSPECT = re.compile(
    # A character after which a node may start (space or line break: tab and CR are not let in, see above; `[{,`;
    # `:` after a quoted or flow key, and so after any `:`, a superset), then what follows it. The character is
    # matched, not looked behind: a pattern that starts with a character set is scanned for in C, one that starts
    # with a lookbehind is tried at every position (4x slower); and `[ \n]` is tested quicker than `\s`.
    r"[ \n\[{,:](?=[!&*|>?%@`:yYnNoO<=.+\-0-9_\[{])(?:"
    # an indicator: tag, anchor, alias, block scalar, explicit key, directive, reserved; `:` (YAML 1.2 lets a plain
    # scalar start with it in a flow collection, `[:x]`, which PyYAML refuses)
    r"[!&*|>?%@`:]"
    rf"|(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|<<|=|[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN)){_END}"
    rf"|(?![-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?{_END})(?P<number>[-+]?\.?[0-9_][-0-9a-fA-F_.+:xXoObBtTzZ ]*?){_END}"
    # A flow collection as a key (PyYAML refuses it, yaml_rs makes a tuple of it; an implicit key is one line in
    # both readings). Not after `:`: `k:{"name":"main"}:` is a plain key as kubectl prints managedFields.
    r"|(?<!:)[\[{][^\n]*[\]}][ ]*:(?: |$))",
    re.M,
)
# An escaped `\u` / `\U` (surrogate pairs). Its own pattern: in the one above, a second alternative at the top
# would end the scan in C.
_ESCAPE = re.compile(r"\\[uU]")


def load_all(text: str, pyyaml_load_all: Callable[[str], list[Any]], prune: bool = False) -> list[Any]:
    """Every document of `text`, as `pyyaml_load_all` (PyYAML's safe load) returns them; the documents nothing can
    read differently are read by `yaml_rs` (module doc). Raises what `pyyaml_load_all(text)` raises. `prune`: a
    served object's `metadata.managedFields` may be left out where that is certain to change nothing else
    (yaml_prune), for readers that never look at it."""
    if yaml_rs is None:
        return pyyaml_load_all(text)
    whole, text = text, Pruner(pyyaml_load_all).prune(text) if prune else text
    # Every check before the parse is within one line, so it runs once over the distinct lines (see
    # `distinct_lines`): served objects repeat most of their lines. They are the pruned text's: the pruner cuts
    # only whole simple lines (yaml_prune: printable ASCII, indented, no `%`, `---` or `...` at their start), which
    # none of the checks can flag, so the pruned text is safe exactly when the whole one is.
    distinct = distinct_lines(text)
    if not _safe_text(text, distinct):
        return pyyaml_load_all(whole)
    flagged = _suspect_lines(distinct)
    starts = [*_document_starts(text), len(text)]
    documents: list[Any] = []
    try:
        for begin, end in itertools.pairwise(starts):
            chunk = text[begin:end]
            if begin == 0 and not chunk.startswith("---") and _NOTHING.fullmatch(chunk):
                continue
            if flagged and not flagged.isdisjoint(chunk.split("\n")):
                documents.extend(pyyaml_load_all(chunk))
            else:
                documents.append(yaml_rs.loads(chunk, parse_datetime=False, duplicate_key_policy=_LAST_WINS))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # any failure (a Rust panic is a BaseException): PyYAML reads the whole text, and raises
        return pyyaml_load_all(whole)
    return documents


def distinct_lines(text: str) -> str:
    """The distinct lines of `text` (split at `\\n` only), each after a line break, in no particular order: a text
    in which a pattern that looks at one line at a time (and at a line's start as after a line break) finds what it
    finds in `text`, but for the position. On 10,000 served pods, 80,000 distinct lines of 1.4 million."""
    return "\n" + "\n".join(set(text.split("\n")))


def _document_starts(text: str) -> list[int]:
    """0 and where each line that starts a document (`---`, then a space or the line's end) begins."""
    return [0, *(match.start() + 1 for match in _DOCUMENT_START.finditer(text))]


def _safe_text(text: str, distinct: str) -> bool:
    """No character outside the safe set, no directive, no document end marker (see above); `distinct`: the
    distinct lines of `text` (`distinct_lines`), where the patterns are searched. Every character of `text` is a
    line break or in one of them."""
    unsafe = _UNSAFE_ASCII if text.isascii() else _UNSAFE_CHAR  # `isascii` reads a flag the string keeps
    if unsafe.search(distinct) or text.startswith(("%", "...")):
        return False
    return _DIRECTIVE_OR_END.search(distinct) is None


def _suspect_lines(distinct: str) -> set[str]:
    """The lines in which something may read differently in PyYAML and yaml_rs (module doc), of a text whose
    distinct lines are `distinct` (`distinct_lines`).

    Every check is within one line (no pattern crosses a line break; a line's start is a place a node may start),
    so each distinct line is checked once, and the patterns scan a twelfth of the bench's served pods."""
    flagged: set[str] = set()
    for match in itertools.chain(_ESCAPE.finditer(distinct), _SUSPECT.finditer(distinct)):
        number = match.groupdict().get("number")
        if number is None or not _same_string(number):
            inside = match.start() + 1  # past the line break or character before the node
            flagged.add(distinct[distinct.rfind("\n", 0, inside) + 1 : _line_end(distinct, inside)])
    return flagged


def _line_end(text: str, position: int) -> int:
    end = text.find("\n", position)
    return len(text) if end < 0 else end


_STR = "tag:yaml.org,2002:str"


# A `-` inside a scalar (not its sign, not an exponent's): no number has one in either reading, only a timestamp,
# which starts with a 4-digit year and `-`. Such scalars (uids, names) are strings in both, known without asking.
_INNER_DASH = re.compile(r"[^-+eE]-")
_DATE = re.compile(r"[-+]?[0-9]{4}-")


def _same_string(scalar: str) -> bool:
    """Whether both PyYAML's resolver and yaml_rs read the plain scalar `scalar` as that string."""
    if _INNER_DASH.search(scalar) and not _DATE.match(scalar):
        return True
    import yaml
    from yaml.nodes import ScalarNode

    resolver: Any = yaml.resolver.Resolver()
    if resolver.resolve(ScalarNode, scalar, (True, False)) != _STR:
        return False
    try:
        read = yaml_rs.loads(scalar, parse_datetime=False)
    except Exception:  # not a scalar on its own: treat as different
        return False
    return isinstance(read, str) and read == scalar


_LAST_WINS = yaml_rs.DuplicateKeyPolicy.LastWins if yaml_rs is not None else None  # PyYAML's: the last value wins
