"""Multi-document YAML text to Python objects: PyYAML's safe loading, with a quicker way from nodes to objects.

`yaml.load_all(text, Loader=CSafeLoader)` parses in C (libyaml) but builds the objects in Python, and most of its
time goes there: for every scalar, the resolver tries its implicit-type patterns (`resolve`), and every node goes
through `construct_object` with its per-node bookkeeping and generator-based maps. On a file of 10,000 pods that was
about 1.4 s of the 2-3 s `nodewright simulate` took.

The native parser (see yaml_fastpath) reads the documents where its reading is provably the same; the rest come
here. `load_all(text)` returns what `yaml.load_all(text, Loader=yaml.CSafeLoader)` returns (the same objects, equal, of
the same types; the same exceptions on bad input), faster:
- the resolver's answer for a plain scalar is kept by its value (see `_Loader`): the same keys and values come back
  in every document;
- a document made only of plain maps with string keys, lists and scalars is built by one small recursive walk that
  hands each non-string scalar to the safe constructor's own function for its tag (int, float, bool, null,
  timestamp, binary). Anything else (merge keys `<<`, non-string keys, `!!set`, `!!omap`, explicit unknown tags,
  and aliases, which PyYAML turns into one shared object) sends the whole document through PyYAML's constructor.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
# Scalar tags whose safe constructor returns the value itself (not a generator, as `!!set` and `!!omap` do).
_SCALARS = frozenset(f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "timestamp", "binary"))

# libyaml's parser when PyYAML was built with it (its wheels are); the same YAML 1.1 safe types either way.
_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _NotPlain(Exception):
    """The document needs PyYAML's own constructor (see the module doc)."""


class _Loader(_BASE):  # type: ignore[misc]  # PyYAML's loaders are untyped
    """The safe loader with the tag of each plain scalar kept by its value.

    Without path resolvers (the safe loader has none), PyYAML's `resolve` gives a plain scalar the tag of the first
    implicit pattern its value matches (else str): a function of the value alone. Any other node (a quoted scalar, a
    map, a list) gets its kind's default tag, which PyYAML's own `resolve` returns without trying the patterns."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._plain_tags: dict[str, str] = {}

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is not ScalarNode or not implicit[0] or self.yaml_path_resolvers:
            tag: str = super().resolve(kind, value, implicit)
            return tag
        found = self._plain_tags.get(value)
        if found is None:
            found = self._plain_tags[value] = super().resolve(kind, value, implicit)
        return found


def load_all(text: str, prune: bool = False) -> list[Any]:
    """Every document of `text`, as `yaml.load_all(text, Loader=yaml.CSafeLoader)` would return them.

    Raises yaml.YAMLError as PyYAML does (syntax errors with their marks, unknown tags). The documents that no
    difference between YAML 1.1 and 1.2 can touch are read by a native parser (see yaml_fastpath), the others here.
    `prune`: a served object's `metadata.managedFields` may be missing where leaving it out is certain to change
    nothing else (yaml_prune); for readers that never look at it."""
    from nodewright.model import yaml_fastpath

    return yaml_fastpath.load_all(text, pyyaml_load_all, prune)


def pyyaml_load_all(text: str) -> list[Any]:
    """`load_all` through PyYAML alone (libyaml's parser and the constructor of this module)."""
    loader = _Loader(text)
    try:
        documents = []
        while loader.check_node():
            node = loader.get_node()
            try:
                documents.append(_plain(loader, node, set()))
            except _NotPlain:
                documents.append(loader.construct_document(node))
        return documents
    finally:
        loader.dispose()


def _plain(loader: Any, node: Any, containers: set[int]) -> Any:
    """The object for `node` when its document is plain (see the module doc); raises _NotPlain otherwise.
    `containers`: ids of the maps and lists already built, to find aliases (PyYAML shares their object)."""
    kind = node.__class__
    if kind is ScalarNode:
        if node.tag == _STR:
            return node.value
        if node.tag not in _SCALARS:
            raise _NotPlain
        return loader.yaml_constructors[node.tag](loader, node)
    if id(node) in containers:
        raise _NotPlain
    containers.add(id(node))
    if kind is MappingNode and node.tag == _MAP:
        out = {}
        for key, value in node.value:
            if key.__class__ is not ScalarNode or key.tag != _STR:
                raise _NotPlain
            # A string value inline: most nodes are, and a call for each costs more than the rest of the walk.
            if value.__class__ is ScalarNode and value.tag == _STR:
                out[key.value] = value.value
            else:
                out[key.value] = _plain(loader, value, containers)
        return out
    if kind is SequenceNode and node.tag == _SEQ:
        return [_plain(loader, item, containers) for item in node.value]
    raise _NotPlain
