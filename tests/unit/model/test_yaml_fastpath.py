"""The native YAML path (yaml_fastpath) against PyYAML's C safe loader: the same objects of the same types, or an
error of the same type and message, on generated documents, served pods and every YAML file of the repository."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.model import yaml_documents, yaml_fastpath


def test_the_native_parser_is_installed() -> None:
    # A declared dependency: without it every text silently takes the PyYAML path and the tests below prove nothing.
    assert yaml_fastpath.yaml_rs is not None, "yaml-rs is missing: `make setup` installs pyproject.toml's dependencies"


SAFE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
ROOT = Path(__file__).resolve().parents[3]

# Plain scalars YAML 1.1 and 1.2 read differently (or that look as if they might), and some they agree on.
TRICKY = [
    "yes",
    "Yes",
    "YES",
    "no",
    "No",
    "NO",
    "on",
    "On",
    "ON",
    "off",
    "Off",
    "OFF",
    "y",
    "n",
    "true",
    "False",
    "TRUE",
    "null",
    "Null",
    "NULL",
    "~",
    "0777",
    "0o17",
    "0x1F",
    "0X1F",
    "0b101",
    "1_000",
    "1e3",
    "1E3",
    "1.5e3",
    "1.5e+3",
    "._5",
    ".5",
    "-.5",
    "+.5",
    "1.",
    "+1.",
    "01.5",
    "12:30",
    "-1:30.5",
    "1:60",
    ".inf",
    "-.Inf",
    "+.INF",
    ".nan",
    ".NaN",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5",
    "2002-12-14T01:02:03Z",
    "<<",
    "=",
    "10.0.0.1",
    "1.0.3",
    "100m",
    "128Mi",
    "1Gi",
    "0",
    "-0",
    "+12",
    "42",
    "3.25",
    "007",
    "9999999999999999999999999",
    "8ea44336-ef04-dac5-fe59-520c9607abdc",
    "a b",
    "x:y",
    "inf",
    "nan",
    "0x_1F",
    "1__2",
    "+0o7",
]
KEYS = st.sampled_from(["a", "name", "on", "yes", "1", "0777", 'k:{"x":"y"}', "1.5", "null", "x y"])
VALUE = st.one_of(st.sampled_from(TRICKY), st.text(alphabet="ab01:-. #'\"yesno", max_size=8))


def _shape(value: Any, path: tuple[int, ...] = ()) -> Any:
    """Value and type at every level (1 == True == 1.0 in Python; the types must match too). A collection that
    contains itself (damaged text can make `&x [*x]`) is shown as how many levels up it points."""
    if isinstance(value, (dict, list)) and id(value) in path:
        return ("cycle", len(path) - path.index(id(value)))
    inner = (*path, id(value))
    if isinstance(value, dict):
        return ("dict", [(_shape(k, inner), _shape(v, inner)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_shape(v, inner) for v in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def _outcome(load: Any, text: str) -> Any:
    try:
        return ("ok", _shape(load(text)))
    except yaml.YAMLError as exc:
        return ("error", type(exc).__name__, str(exc))


def _assert_same(text: str) -> None:
    assert _outcome(yaml_documents.load_all, text) == _outcome(lambda t: list(yaml.load_all(t, Loader=SAFE)), text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.tuples(st.integers(0, 2), KEYS, VALUE), max_size=6), min_size=1, max_size=4))
def test_plain_scalars_written_by_hand(documents: list[list[tuple[int, str, str]]]) -> None:
    """Unquoted scalars, nested by indentation, as a person writes them: every form YAML 1.1 and 1.2 may read
    differently, in keys and values, in block and flow style, several documents a text."""
    texts = []
    for lines in documents:
        body = []
        for depth, key, value in lines:
            indent = "  " * depth
            body.append(f"{indent}{key}: {value}" if depth % 2 == 0 else f"{indent}- [{value}, {{{key}: {value}}}]")
        texts.append("\n".join(body))
    _assert_same("\n---\n".join(texts) + "\n")


JSONISH = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=12),
        st.sampled_from(TRICKY),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.text(max_size=6), st.sampled_from(TRICKY)), inner)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(JSONISH, min_size=1, max_size=3),
    st.sampled_from([False, True, None]),
    st.sampled_from([20, 80]),
    st.booleans(),
)
def test_documents_as_pyyaml_writes_them(docs: list[Any], flow: bool | None, width: int, unicode: bool) -> None:
    """Objects written by PyYAML's dumper in block, flow and mixed style, narrow and wide, with and without
    unicode escapes: quoted strings that look typed, folded long lines, escapes, empty maps and lists."""
    _assert_same(yaml.safe_dump_all(docs, default_flow_style=flow, width=width, allow_unicode=unicode))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSONISH, st.integers(0, 200), st.sampled_from([*"[]{}:,-?!&*|>'\"#\t\n %@`\\", "---", "...", ": "]))
def test_damaged_text(doc: Any, where: int, insert: str) -> None:
    """A character or marker put anywhere in valid YAML: the same objects, or the same error with the same marks."""
    text = yaml.safe_dump({"a": doc, "b": [doc]}, default_flow_style=None)
    where = where % (len(text) + 1)
    _assert_same(text[:where] + insert + text[where:])


@pytest.mark.parametrize(
    "text",
    [
        'a: "\\ud83d\\ude00"\n',  # a surrogate pair: PyYAML refuses it
        "a: b\x85c\n",  # NEL: a line break in YAML 1.1 only
        "a: b\u2028c\n",
        "\ufeffa: 1\n",
        "a:\tb\n",
        "a: 1\r\nb: 2\r\n",
        "%YAML 1.1\n---\na: 1\n",
        "a: 1\n...\n---\nb: 2\n",
        "[1]: 2\n",
        "a: {[1]: 2}\n",
        "a: 1\na: 2\nb: 3\na: 4\n",
        "# only a comment\n",
        "",
        "---\n",
        "--- yes\n--- 0777\n--- |\n  x\n",
        "a: |\n  ---\n",
        'a: "x\n---\ny"\n',
        'k:{"name":"main"}: {}\n',
        "a: 1\n---\n- x\n",
        "- a\n- b\n",
        "a: @x\n",
        "a: x: y\n",
        "a: &x 1\nb: *x\n",
        "b: [:false]\n",  # YAML 1.2 reads a plain scalar starting with `:` in a flow collection; PyYAML refuses it
        "b: {:a}\n",
        "[:]\n",
        "a: &x [*x]\n",  # a list that contains itself
        "a: &x {b: *x}\n",
    ],
)
def test_edge_cases(text: str) -> None:
    _assert_same(text)


def test_served_pods_are_read_natively() -> None:
    """The bench's served pods: the same objects, and every Pod document read by yaml_rs (none suspect), so the
    fast path is what the bench measures."""
    from tests.bench.simulate_cli import documents

    text = yaml.safe_dump_all(documents("pods", 3), sort_keys=True)
    _assert_same(text)
    chunks = text.split("\n---\n")
    assert len(chunks) > 100
    assert not any(yaml_fastpath._suspect_lines(yaml_fastpath.distinct_lines(chunk)) for chunk in chunks)


def test_suspect_flags_what_reads_differently() -> None:
    for text in ["a: yes", "on: 1", "a: 0777", "a: [1e3]", '{"a":12:30}', "a: !!str 1", "a: 2001-12-14", "[1]: 2"]:
        assert yaml_fastpath._suspect_lines(yaml_fastpath.distinct_lines(text)), text
    for text in ["a: 12", "a: 1.5", "a: 100m", "a: 'yes'", 'k:{"a":"b"}: {}', "a: 10.0.0.1", "a: true"]:
        assert not yaml_fastpath._suspect_lines(yaml_fastpath.distinct_lines(text)), text


REPOSITORY_YAML = sorted(
    str(path.relative_to(ROOT))
    for pattern in ("*.yaml", "*.yml")
    for path in ROOT.rglob(pattern)
    if not {".venv", "node_modules", "cdk.out", ".git", ".localworld"} & set(path.parts)
)


@pytest.mark.parametrize("name", REPOSITORY_YAML)
def test_repository_yaml_files(name: str) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    _assert_same(text)


# Pieces of lines around the markers the checks before the parse look for (documents, directives, ends, unsafe
# characters), joined by line breaks or not.
MARKED = st.lists(
    st.sampled_from(["---", "--- a", "---a", " ---", "----", "...", "... #", "....", "%YAML 1.1", "a%", "a: 1"])
    | st.sampled_from(["\n", "\t", "\r", "\x85", "\u2028", "\ufeff", "\x00", "é", " "]),
    max_size=12,
)


@settings(max_examples=500, deadline=None)
@given(MARKED)
def test_document_starts_are_the_lines_that_start_a_document(pieces: list[str]) -> None:
    """The literal-led pattern finds what `^---(?= |$)` under re.M finds (the text's start always counts)."""
    text = "".join(pieces)
    expected = sorted({0, *(match.start() for match in re.finditer(r"^---(?= |$)", text, re.M))})
    assert yaml_fastpath._document_starts(text) == expected


@settings(max_examples=500, deadline=None)
@given(MARKED)
def test_the_text_checks_on_distinct_lines_are_the_whole_texts(pieces: list[str]) -> None:
    """Characters, directives and document end markers looked for in the distinct lines: the answer of the same
    patterns over the whole text."""
    text = "".join(pieces)
    unsafe = yaml_fastpath._UNSAFE_ASCII if text.isascii() else yaml_fastpath._UNSAFE_CHAR
    whole = not (
        unsafe.search(text)
        or text.startswith(("%", "..."))
        or re.search(r"\n(?:%|\.\.\.(?=[ \n]|\Z))", text) is not None
    )
    assert yaml_fastpath._safe_text(text, yaml_fastpath.distinct_lines(text)) == whole


def test_lines_flagged_only_in_a_pruned_block_leave_its_document_native(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suspect lines are looked for in the pruned text's lines: a line that reads otherwise in YAML 1.1
    (`f:on: {}`) inside a managedFields block the pruner cuts sends no document to PyYAML, and one left in the
    document (no pruning) does."""
    from tests.bench.simulate_cli import documents

    text = yaml.safe_dump_all(documents("pods", 1), sort_keys=True).replace(
        "        f:dnsPolicy: {}\n", "        f:dnsPolicy: {}\n        f:on: {}\n"
    )
    assert "f:on: {}" in text
    read_by_pyyaml: list[str] = []

    def pyyaml(chunk: str) -> list[Any]:
        read_by_pyyaml.append(chunk)
        return yaml_documents.pyyaml_load_all(chunk)

    pruned = yaml_fastpath.load_all(text, pyyaml, prune=True)
    # The pruner checks each new shape with PyYAML (two reads of a document's head); no whole document went there.
    assert not [chunk for chunk in read_by_pyyaml if "\nspec:\n" in chunk]
    assert pruned == [
        {**doc, "metadata": {k: v for k, v in doc["metadata"].items() if k != "managedFields"}}
        if doc.get("kind") == "Pod"
        else doc
        for doc in yaml.load_all(text, Loader=SAFE)
    ]
    read_by_pyyaml.clear()
    assert yaml_fastpath.load_all(text, pyyaml) == list(yaml.load_all(text, Loader=SAFE))
    assert len([chunk for chunk in read_by_pyyaml if "\nspec:\n" in chunk]) == 40
