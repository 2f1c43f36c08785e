"""Parsers for the small structures NodePools and Kubernetes objects share.

Node selector requirements, label selectors, taints and tolerations appear both in NodePools and in pod
specs; they are parsed here once, with the validation rules of whichever API they come from.
"""

from __future__ import annotations

from typing import Any, Literal

from nodewright.model.errors import Collector
from nodewright.model.label_rules import (
    known_values_problem,
    restricted_label_problem,
)
from nodewright.model.objects import LabelSelector, NodeSelectorTerm
from nodewright.model.requirements import Operator, Requirement
from nodewright.model.schema import (
    check_fields,
    get_enum,
    get_int,
    get_list,
    get_map,
    get_str,
    get_str_map,
    join,
    label_key_problem,
    label_value_problem,
    map_key,
    suggest,
    type_name,
)
from nodewright.model.taints import EFFECTS, Taint, Toleration

OPERATORS = tuple(op.value for op in Operator)
# Karpenter v1.9+ adds inclusive integer bounds to NodePool and NodeClaim requirements.
KARPENTER_OPERATORS = (*OPERATORS, "Gte", "Lte")
BOUND_OPERATORS = ("Gt", "Lt", "Gte", "Lte")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
# Whose requirement is read: a pod's ("") or a Karpenter object's (see `parse_requirement`).
Owner = Literal["", "NodePool", "NodeClaim"]


def parse_string_list(ctx: Collector, value: Any, path: str) -> tuple[str, ...]:
    """A list of strings (numbers are refused, as the Kubernetes API refuses them)."""
    items = get_list(ctx, value, path)
    if items is None:
        return ()
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            ctx.error(join(path, i), f'must be a string, not {type_name(item)} (quote it: "{item}")')
            continue
        out.append(item)
    return tuple(out)


# Requirements that parsed without an error, by their owner and content (`_clean_key`): NodeClaims and pods carry a
# few distinct requirements thousands of times (a cold provisioner parsed 12,000 for 3,000 NodeClaims). Cleared when
# full, so odd objects cannot grow it.
_CLEAN: dict[tuple[Any, ...], Requirement] = {}
_CLEAN_LIMIT = 4096
_REQUIREMENT_FIELDS = frozenset(("key", "operator", "values", "minValues"))


def _clean_key(raw: Any, owner: Owner) -> tuple[Any, ...] | None:
    """What a requirement's parse depends on, as a key: only for a plain one (string key and operator, a list of
    strings as values, an int minValues, no other field), so that equal keys parse alike; None otherwise."""
    if type(raw) is not dict or not raw.keys() <= _REQUIREMENT_FIELDS:
        return None
    key, operator, values, min_values = raw.get("key"), raw.get("operator"), raw.get("values"), raw.get("minValues")
    if type(key) is not str or type(operator) is not str or (min_values is not None and type(min_values) is not int):
        return None
    if values is None:
        listed: tuple[str, ...] | None = None
    elif type(values) is list and all(type(v) is str for v in values):
        listed = tuple(values)
    else:
        return None
    return (owner, key, operator, listed, "minValues" in raw, min_values)


def parse_requirement(ctx: Collector, raw: Any, path: str, *, owner: Owner = "") -> Requirement | None:
    """One node selector requirement (see `_parse_requirement`); a plain one that parsed clean before is not
    checked again (`_CLEAN`)."""
    memo = _clean_key(raw, owner)
    if memo is not None and (found := _CLEAN.get(memo)) is not None:
        return found
    errors = len(ctx.errors)
    requirement = _parse_requirement(ctx, raw, path, owner=owner)
    if memo is not None and requirement is not None and len(ctx.errors) == errors:
        if len(_CLEAN) >= _CLEAN_LIMIT:
            _CLEAN.clear()
        _CLEAN[memo] = requirement
    return requirement


def _parse_requirement(ctx: Collector, raw: Any, path: str, *, owner: Owner = "") -> Requirement | None:
    """One node selector requirement (`key`, `operator`, `values`, and `minValues` for Karpenter objects).

    `owner` "" reads a pod's requirement with the Kubernetes API's rules. "NodePool" reads Karpenter v1's:
    restricted label domains, the Gte and Lte operators (stored as the equivalent Gt / Lt bound), minValues
    1-50, In needs values, Gt/Lt/Gte/Lte one non-negative integer, values that are label values, at least
    one valid capacity type, and keys nodes can carry. "NodeClaim" reads the operators and the minValues
    rules only: NodeClaims come from the API server, almost all written by nodewright, whose requirements
    carry what pods asked for (any key, negative bounds), and a claim refused here would look like capacity
    that is not in flight.
    """
    karpenter = bool(owner)
    item = get_map(ctx, raw, path, required=True)
    if item is None:
        return None
    check_fields(
        ctx, item, path, ("key", "operator", "values", "minValues") if karpenter else ("key", "operator", "values")
    )
    key = get_str(ctx, item.get("key"), join(path, "key"), required=True)
    key_ok = key is not None and _check_key(ctx, key, join(path, "key"), owner == "NodePool")
    operators = KARPENTER_OPERATORS if karpenter else OPERATORS
    operator = get_str(ctx, item.get("operator"), join(path, "operator"), required=True)
    if operator is not None and operator not in operators:
        _unknown_operator(ctx, operator, join(path, "operator"), operators)
        operator = None
    values = parse_string_list(ctx, item.get("values"), join(path, "values"))
    min_value = (
        get_int(ctx, item.get("minValues"), join(path, "minValues"), minimum=1, maximum=50) if karpenter else None
    )
    raw_values = item.get("values")
    if operator is None or (isinstance(raw_values, list) and len(raw_values) != len(values)):
        # A bad value was reported already; counting the remaining ones would only add a misleading error.
        return None
    values_ok = _check_values(ctx, operator, values, min_value, path, owner)
    if key is None or not key_ok or not values_ok:
        return None
    if owner == "NodePool" and not _check_nodepool_rules(ctx, key, operator, values, min_value, path):
        return None
    return _requirement(key, operator, values, min_value)


def _check_key(ctx: Collector, key: str, path: str, nodepool: bool) -> bool:
    problem = label_key_problem(key)
    if problem is None and nodepool:
        problem = restricted_label_problem(key)
    if problem:
        ctx.error(path, problem)
    return problem is None


def _check_values(
    ctx: Collector, operator: str, values: tuple[str, ...], min_value: int | None, path: str, owner: Owner
) -> bool:
    """The operator's rules on values and minValues (Kubernetes' for pods, Karpenter's for its objects)."""
    where = join(path, "values")
    nodepool = owner == "NodePool"
    # A bound that is no label value ("-1") gets the bound's own message below.
    checked = values if nodepool and operator not in BOUND_OPERATORS else ()
    problems = [(join(where, i), problem) for i, v in enumerate(checked) if (problem := label_value_problem(v))]
    if not values and (operator == "In" or (operator == "NotIn" and not owner)):
        problems.append((where, f"operator {operator} needs at least one value"))
    if operator in ("Exists", "DoesNotExist") and values:
        problems.append((where, f"operator {operator} takes no values; remove them"))
    if operator in BOUND_OPERATORS and not _valid_bound(values, non_negative=nodepool):
        kind = "non-negative integer" if nodepool else "integer"
        problems.append((where, f'operator {operator} needs exactly one {kind} value, e.g. ["2"]; got {list(values)}'))
    if min_value is not None and operator == "In" and min_value > len(values):
        problems.append(
            (
                join(path, "minValues"),
                f"minValues {min_value} asks for more values than the {len(values)} listed in values",
            )
        )
    for field_path, problem in problems:
        ctx.error(field_path, problem)
    return not problems


def _check_nodepool_rules(
    ctx: Collector, key: str, operator: str, values: tuple[str, ...], min_value: int | None, path: str
) -> bool:
    """What a NodePool requirement could never match: no valid capacity type."""
    if operator == "In" and (problem := known_values_problem(key, values, min_value)):
        ctx.error(join(path, "values"), problem)
        return False
    return True


def _valid_bound(values: tuple[str, ...], non_negative: bool) -> bool:
    return len(values) == 1 and _is_int(values[0]) and (not non_negative or int(values[0]) >= 0)


def _requirement(key: str, operator: str, values: tuple[str, ...], min_values: int | None) -> Requirement:
    """The requirement; Karpenter's inclusive bounds become the equivalent exclusive ones (labels are integers)."""
    if operator == "Gte":
        return Requirement(key, Operator.GT, (str(int(values[0]) - 1),), min_values)
    if operator == "Lte":
        return Requirement(key, Operator.LT, (str(int(values[0]) + 1),), min_values)
    return Requirement(key, Operator(operator), values, min_values)


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _unknown_operator(ctx: Collector, text: str, path: str, choices: tuple[str, ...]) -> None:
    near = suggest(text, choices)
    hint = f" (did you mean {near}?)" if near and near.lower() == text.lower() else ""
    ctx.error(path, f'"{text}" is not an operator; use one of {", ".join(choices)}{hint}')


def _operator(ctx: Collector, value: Any, path: str, choices: tuple[str, ...]) -> Operator | None:
    text = get_str(ctx, value, path, required=True)
    if text is None:
        return None
    if text not in choices:
        _unknown_operator(ctx, text, path, choices)
        return None
    return Operator(text)


def parse_requirements(ctx: Collector, value: Any, path: str, *, owner: Owner = "") -> tuple[Requirement, ...]:
    """A list of node selector requirements (see `parse_requirement`); bad entries are reported and left out."""
    items = get_list(ctx, value, path)
    if items is None:
        return ()
    if owner and len(items) > 100:
        ctx.error(path, f"has {len(items)} entries; at most 100 are allowed")
    out = []
    for i, raw in enumerate(items):
        requirement = parse_requirement(ctx, raw, join(path, i), owner=owner)
        if requirement is not None:
            out.append(requirement)
    return tuple(out)


def parse_node_selector_term(ctx: Collector, raw: Any, path: str) -> NodeSelectorTerm | None:
    """A NodeSelectorTerm: matchExpressions (and matchFields on metadata.name, which nodewright maps to
    the kubernetes.io/hostname label since node names and hostnames coincide on EKS)."""
    term = get_map(ctx, raw, path, required=True)
    if term is None:
        return None
    check_fields(ctx, term, path, ("matchExpressions", "matchFields"))
    requirements = list(parse_requirements(ctx, term.get("matchExpressions"), join(path, "matchExpressions")))
    fields = get_list(ctx, term.get("matchFields"), join(path, "matchFields")) or []
    for i, raw_field in enumerate(fields):
        where = join(join(path, "matchFields"), i)
        requirement = parse_requirement(ctx, raw_field, where)
        if requirement is None:
            continue
        if requirement.key != "metadata.name":
            ctx.error(
                join(where, "key"), f'"{requirement.key}" is not supported; matchFields only supports metadata.name'
            )
            continue
        requirements.append(Requirement("kubernetes.io/hostname", requirement.operator, requirement.values))
    return NodeSelectorTerm(requirements=tuple(requirements))


def parse_label_selector(ctx: Collector, raw: Any, path: str) -> LabelSelector | None:
    """A metav1.LabelSelector (matchLabels and matchExpressions with In/NotIn/Exists/DoesNotExist)."""
    selector = get_map(ctx, raw, path)
    if selector is None:
        return None
    check_fields(ctx, selector, path, ("matchLabels", "matchExpressions"))
    labels = get_str_map(ctx, selector.get("matchLabels"), join(path, "matchLabels"))
    expressions = []
    items = get_list(ctx, selector.get("matchExpressions"), join(path, "matchExpressions")) or []
    for i, raw_expr in enumerate(items):
        where = join(join(path, "matchExpressions"), i)
        expr = get_map(ctx, raw_expr, where, required=True)
        if expr is None:
            continue
        check_fields(ctx, expr, where, ("key", "operator", "values"))
        key = get_str(ctx, expr.get("key"), join(where, "key"), required=True)
        operator = _operator(ctx, expr.get("operator"), join(where, "operator"), SELECTOR_OPERATORS)
        values = parse_string_list(ctx, expr.get("values"), join(where, "values"))
        if key is None or operator is None:
            continue
        if operator in (Operator.IN, Operator.NOT_IN) and not values:
            ctx.error(join(where, "values"), f"operator {operator.value} needs at least one value")
            continue
        if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and values:
            ctx.error(join(where, "values"), f"operator {operator.value} takes no values; remove them")
            continue
        expressions.append(Requirement(key, operator, values))
    return LabelSelector(match_labels=tuple(sorted(labels.items())), match_expressions=tuple(expressions))


def parse_taint(ctx: Collector, raw: Any, path: str) -> Taint | None:
    """A node taint: key, optional value, effect NoSchedule|PreferNoSchedule|NoExecute."""
    item = get_map(ctx, raw, path, required=True)
    if item is None:
        return None
    check_fields(ctx, item, path, ("key", "value", "effect", "timeAdded"))
    key = get_str(ctx, item.get("key"), join(path, "key"), required=True)
    value = get_str(ctx, item.get("value"), join(path, "value")) or ""
    effect = get_enum(ctx, item.get("effect"), join(path, "effect"), EFFECTS, required=True)
    ok = key is not None and effect is not None
    if key is not None and (problem := label_key_problem(key)):
        ctx.error(join(path, "key"), problem.replace("label key", "taint key"))
        ok = False
    if value and (problem := label_value_problem(value)):
        ctx.error(join(path, "value"), problem)
        ok = False
    if not ok or key is None or effect is None:
        return None
    return Taint(key=key, value=value, effect=effect)


def parse_taints(
    ctx: Collector, value: Any, path: str, others: tuple[Taint, ...] = (), others_path: str = ""
) -> tuple[Taint, ...]:
    """A list of taints; duplicates (same key and effect) are refused as Kubernetes refuses them, also against
    `others` (a NodePool's startupTaints against its taints, as Karpenter checks them together)."""
    items = get_list(ctx, value, path)
    if items is None:
        return ()
    out: list[Taint] = []
    for i, raw in enumerate(items):
        taint = parse_taint(ctx, raw, join(path, i))
        if taint is None:
            continue
        if any(t.key == taint.key and t.effect == taint.effect for t in out):
            ctx.error(join(path, i), f"duplicate taint {taint.key}:{taint.effect}")
            continue
        if any(t.key == taint.key and t.effect == taint.effect for t in others):
            ctx.error(join(path, i), f"duplicate taint {taint.key}:{taint.effect}; it is in {others_path} already")
            continue
        out.append(taint)
    return tuple(out)


def parse_toleration(ctx: Collector, raw: Any, path: str) -> Toleration | None:
    """A pod toleration, with the Kubernetes API's rules (Exists takes no value; no key needs Exists)."""
    item = get_map(ctx, raw, path, required=True)
    if item is None:
        return None
    check_fields(ctx, item, path, ("key", "operator", "value", "effect", "tolerationSeconds"))
    key = get_str(ctx, item.get("key"), join(path, "key")) or ""
    operator = get_enum(ctx, item.get("operator"), join(path, "operator"), ("Equal", "Exists")) or "Equal"
    value = get_str(ctx, item.get("value"), join(path, "value")) or ""
    effect = ""
    if item.get("effect") not in (None, ""):
        effect = get_enum(ctx, item.get("effect"), join(path, "effect"), EFFECTS) or ""
    seconds = get_int(ctx, item.get("tolerationSeconds"), join(path, "tolerationSeconds"))
    if operator == "Exists" and value:
        ctx.error(join(path, "value"), "must be empty when operator is Exists")
        return None
    if not key and operator != "Exists":
        ctx.error(join(path, "operator"), "must be Exists when key is empty (an empty key tolerates every taint)")
        return None
    return Toleration(key=key, operator=operator, value=value, effect=effect, toleration_seconds=seconds)


def parse_labels(ctx: Collector, value: Any, path: str, *, nodepool: bool = False) -> dict[str, str]:
    """Labels with valid keys and values; NodePool template labels also obey Karpenter's restricted domains,
    and its limit of 100 (labels in the kubernetes.io and k8s.io domains are allowed: registration copies
    them onto the node)."""
    labels = get_str_map(ctx, value, path)
    if nodepool and len(labels) > 100:
        ctx.error(path, f"has {len(labels)} labels; at most 100 are allowed")
    out = {}
    for key, label in labels.items():
        problem = label_key_problem(key) or label_value_problem(label)
        if problem is None and nodepool:
            problem = restricted_label_problem(key)
        if problem:
            ctx.error(map_key(path, key), problem)
            continue
        out[key] = label
    return out
