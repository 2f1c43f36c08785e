"""Cutting `metadata.managedFields` from YAML text (yaml_prune): the read with the cut equals PyYAML's full read but
for `metadata.managedFields`, and fails where and as it does, on generated, hand-laid and damaged texts; the bench's
served pods are cut (the parsers never see their managedFields)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.model import yaml_documents, yaml_fastpath
from nodewright.model.yaml_prune import Pruner
from tests.unit.model.test_yaml_fastpath import SAFE, TRICKY, _shape


def _without_managed_fields(documents: list[Any]) -> list[Any]:
    out = []
    for doc in documents:
        if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
            doc = {**doc, "metadata": {k: v for k, v in doc["metadata"].items() if k != "managedFields"}}
        out.append(doc)
    return out


def _outcome(load: Any, text: str) -> Any:
    try:
        return ("ok", _shape(_without_managed_fields(load(text))))
    except yaml.YAMLError as exc:
        return ("error", type(exc).__name__, str(exc))
    except ValueError as exc:  # a scalar PyYAML cannot construct (`2001-13-01`)
        return ("error", type(exc).__name__, str(exc))


def _assert_same(text: str) -> None:
    """The pruned read and PyYAML's full read: equal but for metadata.managedFields, or the same error."""
    pruned = _outcome(lambda t: yaml_documents.load_all(t, prune=True), text)
    assert pruned == _outcome(lambda t: list(yaml.load_all(t, Loader=SAFE)), text)


def _served(index: int, managed: Any, labels: dict[str, str]) -> dict[str, Any]:
    metadata = {"labels": labels, "managedFields": managed, "name": f"pod-{index}", "namespace": "default"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {"containers": [{"name": "main"}]}}


# Mostly what kubectl prints (simple lines, so most blocks are cut), sometimes anything.
SIMPLE_KEY = st.sampled_from(["f:a", ".", 'k:{"uid":"x-1"}', "f:b", "manager", "time", 'k:{"n":"m"}'])
ASCII = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=6)
KEY = st.one_of(*[SIMPLE_KEY] * 8, st.sampled_from(["on", "1", "a b", "-x", "#c"]), ASCII)
SIMPLE_LEAF = st.sampled_from([{}, [], "Update", "v1", "2026-11-30T00:53:20Z", "7c5ddbdf54", "a: b", "x#y"])
MANAGED = st.recursive(
    st.one_of(*[SIMPLE_LEAF] * 8, st.sampled_from(TRICKY), ASCII, st.text(max_size=3)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEY, inner, max_size=4)),
    max_leaves=12,
)
# A list of maps, as managedFields is, or anything.
ENTRIES = st.one_of(
    *[st.lists(st.dictionaries(KEY, MANAGED, min_size=1, max_size=4), min_size=1, max_size=3)] * 3, MANAGED
)
LABEL = st.one_of(
    st.sampled_from(["app", "7c5ddbdf54", "6jr6dpqszp", "0x1f", "1e3", "yes", "2001-12-14", "0123abc"]),
    ASCII,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(ENTRIES, st.dictionaries(st.sampled_from(["app", "hash"]), LABEL)), min_size=1, max_size=4),
    st.booleans(),
    st.sampled_from([None, False, False]),
)
def test_served_documents(docs: list[tuple[Any, dict[str, str]]], sort_keys: bool, flow: bool | None) -> None:
    """Served objects as PyYAML writes them (kubectl's layout when sorted and in block style): random managedFields
    and labels, typed-looking scalars, several documents of one shape a text."""
    objects = [_served(i, managed, labels) for i, (managed, labels) in enumerate(docs)]
    _assert_same(yaml.safe_dump_all(objects, sort_keys=sort_keys, default_flow_style=flow))


LINE_KEY = st.sampled_from(["a", "f:b", ".", 'k:{"x":"y"}', "managedFields", "metadata", "1", "x y", "yes"])
LINE_VALUE = st.sampled_from(["", " {}", " []", " 'q: r'", ' "s"', " v", " 7c5d", " 2001-13-01", " ._", " |", " x #c"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.integers(0, 6), st.booleans(), LINE_KEY, LINE_VALUE), max_size=8),
    st.lists(st.tuples(st.integers(0, 3), st.booleans(), LINE_KEY, LINE_VALUE), max_size=4),
    st.sampled_from(["  name: x\n", "spec: {}\n", "---\n", "", " odd: 1\n", "- 1\n", "  - 1\n", "\n", "# c\n"]),
    st.integers(1, 3),
)
def test_hand_laid_blocks(
    block: list[tuple[int, bool, str, str]], head: list[tuple[int, bool, str, str]], after: str, copies: int
) -> None:
    """A `managedFields:` block and the metadata before it laid out line by line with any indentation, `- `, keys
    and values (valid or not, scalars that fail to construct), any line after it; the same layout repeated with
    other letters, which shares the first one's shape."""

    def line(indent: int, dash: bool, key: str, value: str) -> str:
        return " " * indent + ("- " if dash else "") + key + ":" + value + "\n"

    texts = []
    for copy in range(copies):
        letters = "abc"[copy]
        body = "".join(line(2 + 2 * i, d, k, v) for i, d, k, v in head)
        managed = "".join(line(2 + i, d, k.replace("a", letters), v) for i, d, k, v in block)
        texts.append(
            f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p{letters}\n{body}  managedFields:\n{managed}{after}"
        )
    _assert_same("---\n".join(texts))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ENTRIES, st.integers(0, 400), st.sampled_from([*"[]{}:,-?!&*|>'\"#\t\n %@`\\", "---", "...", ": ", "\n  "]))
def test_damaged_text(managed: Any, where: int, insert: str) -> None:
    """A character or marker put anywhere in two served documents (the second keeps its shape): the same objects
    but for managedFields, or the same error with the same marks."""
    text = yaml.safe_dump_all([_served(0, managed, {"app": "a"}), _served(1, managed, {"app": "b"})], sort_keys=True)
    where = where % (len(text) + 1)
    _assert_same(text[:where] + insert + text[where:])


KEPT = [
    # not in a document's top-level metadata, or not certain: kept, and read as PyYAML reads it
    "kind: List\nitems:\n- metadata:\n    name: a\n    managedFields:\n    - manager: x\n",
    "spec:\n  name: a\n  managedFields:\n  - manager: x\n",
    "metadata:\n  note: |\n    text\n  managedFields:\n  - manager: x\n",
    "metadata:\n  # a comment\n  name: a\n  managedFields:\n  - manager: x\n",
    'a: "x\nmetadata:\n  name: a\n  managedFields:\n  - manager: x\n  "\n',
    "metadata:\n  managedFields:\n  - manager: x\n",  # the only key: the cut metadata would be null
    "metadata:\n  name: a\n  managedFields:\n  - manager: x\n odd: 1\n",
    "metadata:\n  name: a\n  managedFields:\n  - manager: x\n- 1\n",
    "metadata:\n  name: a\n  managedFields:\n  - manager: x\n     bad: indent\n",
    "metadata:\n  name: a\n  managedFields:\n  - time: 2001-13-01\n",
]


@pytest.mark.parametrize("text", KEPT)
def test_uncertain_blocks_are_kept(text: str) -> None:
    _assert_same(text)
    assert Pruner(yaml_documents.pyyaml_load_all).prune(text) == text


def test_a_duplicate_key_keeps_the_last() -> None:
    """The first of two blocks may be cut, never the second: PyYAML keeps the last value, and so does the cut read."""
    text = "metadata:\n  name: a\n  managedFields:\n  - manager: x\n  managedFields:\n  - manager: y\n"
    assert yaml_documents.load_all(text, prune=True) == list(yaml.load_all(text, Loader=SAFE))


def test_errors_keep_the_whole_texts_marks() -> None:
    """An error after a cut block is reported at its line in the whole text."""
    text = "metadata:\n  name: a\n  managedFields:\n  - manager: x\n  - manager: y\nspec: [\n"
    _assert_same(text)
    with pytest.raises(yaml.YAMLError) as error:
        yaml_documents.load_all(text, prune=True)
    assert getattr(error.value, "problem_mark").line == 6  # noqa: B009  # untyped


def test_served_pods_are_cut_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bench's served pods: no parser is given their managedFields, and the documents are the full ones but
    for them. Fails if the cut is removed."""
    from tests.bench.simulate_cli import documents

    text = yaml.safe_dump_all(documents("pods", 3), sort_keys=True)
    given_texts: list[str] = []
    native = yaml_fastpath.yaml_rs

    class Recording:
        DuplicateKeyPolicy = native.DuplicateKeyPolicy

        @staticmethod
        def loads(chunk: str, **options: Any) -> Any:
            given_texts.append(chunk)
            return native.loads(chunk, **options)

    monkeypatch.setattr(yaml_fastpath, "yaml_rs", Recording)
    read = yaml_documents.load_all(text, prune=True)
    assert len(given_texts) == len(read) > 100
    assert not any("managedFields" in chunk for chunk in given_texts)
    assert read == _without_managed_fields(list(yaml.load_all(text, Loader=SAFE)))
    given_texts.clear()
    assert any("managedFields" in d["metadata"] for d in yaml_documents.load_all(text) if d["kind"] == "Pod")


def test_files_are_loaded_with_the_cut() -> None:
    """`validate`, `simulate` and `disrupt` read files through the loader, which asks for the cut."""
    from nodewright.model import loader
    from tests.bench.simulate_cli import documents

    text = yaml.safe_dump_all(documents("pods", 1), sort_keys=True)
    docs, errors = loader._parse_yaml(text, "pods.yaml")
    assert not errors and not any("managedFields" in d["metadata"] for d in docs)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ENTRIES,
    st.integers(0, 400),
    st.sampled_from(["\t", "\r", "\r\n", "\x85", "\u2028", "\ufeff", "\x00", "\x7f", "é", "\n%", "\n...", "\n---"]),
)
def test_a_text_is_safe_for_the_native_parser_exactly_when_its_cut_is(managed: Any, where: int, insert: str) -> None:
    """yaml_fastpath checks the characters, directives and end markers of the pruned text only: the pruner cuts no
    line such a check could find (a cut line is simple: printable ASCII, indented), wherever one is put."""
    from nodewright.model import yaml_fastpath

    text = yaml.safe_dump_all([_served(0, managed, {"app": "a"}), _served(1, managed, {"app": "b"})], sort_keys=True)
    where = where % (len(text) + 1)
    text = text[:where] + insert + text[where:]
    cut = Pruner(yaml_documents.pyyaml_load_all).prune(text)
    assert yaml_fastpath._safe_text(cut, yaml_fastpath.distinct_lines(cut)) == yaml_fastpath._safe_text(
        text, yaml_fastpath.distinct_lines(text)
    )
