"""Parsers for the small structures NodePools and Kubernetes objects share.

Node selector requirements, label selectors, taints and tolerations appear both in NodePools and in pod
specs; they are parsed here once, with the validation rules of whichever API they come from.
"""

from __future__ import annotations

from typing import Any

from nodewright.model.errors import Collector
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
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")

# Label keys in the kubernetes.io domain a NodePool may constrain or set (Karpenter v1's allow-list).
WELL_KNOWN_KUBERNETES_LABELS = frozenset(
    {
        "beta.kubernetes.io/instance-type",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/windows-build",
    }
)
WELL_KNOWN_KARPENTER_LABELS = frozenset({"karpenter.sh/capacity-type"})
WELL_KNOWN_AWS_LABELS = frozenset(
    "karpenter.k8s.aws/" + name
    for name in (
        "instance-category",
        "instance-family",
        "instance-generation",
        "instance-size",
        "instance-cpu",
        "instance-cpu-manufacturer",
        "instance-cpu-sustained-clock-speed-mhz",
        "instance-memory",
        "instance-ebs-bandwidth",
        "instance-network-bandwidth",
        "instance-gpu-name",
        "instance-gpu-manufacturer",
        "instance-gpu-count",
        "instance-gpu-memory",
        "instance-accelerator-name",
        "instance-accelerator-manufacturer",
        "instance-accelerator-count",
        "instance-hypervisor",
        "instance-encryption-in-transit-supported",
        "instance-local-nvme",
        "instance-capability-flex",
        "capacity-reservation-id",
        "capacity-reservation-type",
    )
)
WELL_KNOWN_LABELS = WELL_KNOWN_KUBERNETES_LABELS | WELL_KNOWN_KARPENTER_LABELS | WELL_KNOWN_AWS_LABELS
# Values nodewright can ever offer for these keys; a typo here would silently make a pool useless.
KNOWN_VALUES: dict[str, tuple[str, ...]] = {
    "karpenter.sh/capacity-type": ("on-demand", "spot", "reserved"),
    "kubernetes.io/arch": ("amd64", "arm64"),
    "kubernetes.io/os": ("linux", "windows"),
}


def restricted_label_problem(key: str) -> str | None:
    """Why a NodePool may not use `key` in requirements or template labels (Karpenter's rules), or None."""
    if key == "karpenter.sh/nodepool":
        return 'the label "karpenter.sh/nodepool" is restricted: nodewright sets it to the NodePool\'s name'
    if key == "kubernetes.io/hostname":
        return 'the label "kubernetes.io/hostname" is restricted: each node gets its own'
    domain = key.split("/", 1)[0] if "/" in key else ""
    rules: tuple[tuple[str, frozenset[str], tuple[str, ...]], ...] = (
        ("kubernetes.io", WELL_KNOWN_KUBERNETES_LABELS, ("node.kubernetes.io", "node-restriction.kubernetes.io")),
        ("k8s.io", frozenset(), ("kops.k8s.io",)),
        ("karpenter.sh", WELL_KNOWN_KARPENTER_LABELS, ()),
        ("karpenter.k8s.aws", WELL_KNOWN_AWS_LABELS, ()),
    )
    for restricted, allowed, open_subdomains in rules:
        if not domain.endswith(restricted) or key in allowed or domain.endswith(open_subdomains):
            continue
        near = suggest(key, allowed)
        hint = f"; did you mean {near}?" if near else ""
        return f'label domain "{restricted}" is restricted; "{key}" is not one of its well-known labels{hint}'
    return None


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


def parse_requirement(
    ctx: Collector, raw: Any, path: str, *, nodepool: bool = False, min_values: bool | None = None
) -> Requirement | None:
    """One node selector requirement (`key`, `operator`, `values`, and `minValues` in a NodePool).

    NodePools follow Karpenter v1's rules (restricted label domains, minValues 1-50, In needs values,
    Gt/Lt one non-negative integer); pods follow the Kubernetes API's rules. `min_values` (default: same
    as `nodepool`) allows the minValues field, which NodeClaims carry too.
    """
    allow_min = nodepool if min_values is None else min_values
    item = get_map(ctx, raw, path, required=True)
    if item is None:
        return None
    fields = ("key", "operator", "values", "minValues") if allow_min else ("key", "operator", "values")
    check_fields(ctx, item, path, fields)
    ok = True
    key = get_str(ctx, item.get("key"), join(path, "key"), required=True)
    if key is None:
        ok = False
    else:
        problem = label_key_problem(key)
        if problem is None and nodepool:
            problem = restricted_label_problem(key)
        if problem:
            ctx.error(join(path, "key"), problem)
            ok = False
    operator = _operator(ctx, item.get("operator"), join(path, "operator"), OPERATORS)
    values = parse_string_list(ctx, item.get("values"), join(path, "values"))
    min_value = None
    if allow_min:
        min_value = get_int(ctx, item.get("minValues"), join(path, "minValues"), minimum=1, maximum=50)
    raw_values = item.get("values")
    if operator is None or (isinstance(raw_values, list) and len(raw_values) != len(values)):
        # A bad value was reported already; counting the remaining ones would only add a misleading error.
        return None
    where = join(path, "values")
    if operator in (Operator.IN, Operator.NOT_IN) and not values and (operator is Operator.IN or not nodepool):
        ctx.error(where, f"operator {operator.value} needs at least one value")
        ok = False
    if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and values:
        ctx.error(where, f"operator {operator.value} takes no values; remove them")
        ok = False
    bad_bound = len(values) != 1 or not _is_int(values[0]) or (nodepool and int(values[0]) < 0)
    if operator in (Operator.GT, Operator.LT) and bad_bound:
        kind = "non-negative integer" if nodepool else "integer"
        ctx.error(where, f'operator {operator.value} needs exactly one {kind} value, e.g. ["2"]; got {list(values)}')
        ok = False
    if min_value is not None and operator is Operator.IN and min_value > len(values):
        ctx.error(
            join(path, "minValues"),
            f"minValues {min_value} asks for more values than the {len(values)} listed in values",
        )
        ok = False
    if key is not None and key in KNOWN_VALUES and operator in (Operator.IN, Operator.NOT_IN):
        for i, value in enumerate(values):
            if value not in KNOWN_VALUES[key]:
                near = suggest(value, KNOWN_VALUES[key])
                hint = f"; did you mean {near}?" if near else ""
                choices = ", ".join(KNOWN_VALUES[key])
                ctx.error(join(where, i), f'"{value}" is not a value of {key}; use one of {choices}{hint}')
                ok = False
    if not ok or key is None:
        return None
    return Requirement(key=key, operator=operator, values=values, min_values=min_value)


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _operator(ctx: Collector, value: Any, path: str, choices: tuple[str, ...]) -> Operator | None:
    text = get_str(ctx, value, path, required=True)
    if text is None:
        return None
    if text not in choices:
        near = suggest(text, choices)
        hint = f" (did you mean {near}?)" if near and near.lower() == text.lower() else ""
        ctx.error(path, f'"{text}" is not an operator; use one of {", ".join(choices)}{hint}')
        return None
    return Operator(text)


def parse_requirements(
    ctx: Collector, value: Any, path: str, *, nodepool: bool = False, min_values: bool | None = None
) -> tuple[Requirement, ...]:
    """A list of node selector requirements; bad entries are reported and left out."""
    items = get_list(ctx, value, path)
    if items is None:
        return ()
    out = []
    for i, raw in enumerate(items):
        requirement = parse_requirement(ctx, raw, join(path, i), nodepool=nodepool, min_values=min_values)
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


def parse_taints(ctx: Collector, value: Any, path: str) -> tuple[Taint, ...]:
    """A list of taints; duplicates (same key and effect) are refused as Kubernetes refuses them."""
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
    """Labels with valid keys and values; NodePool template labels also obey Karpenter's restricted domains."""
    labels = get_str_map(ctx, value, path)
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
