"""NodeOverlay (`nodewright.io/v1alpha1`, the fields of Karpenter's `karpenter.sh/v1alpha1`): parse and validate.

A NodeOverlay changes what the scheduling simulation believes about the instance types and offerings its
`requirements` select: their price (`price`, an absolute price per hour, or `priceAdjustment`, a signed amount
"+1" / "-0.5" or a signed percentage "-50%" / "+10%") and their `capacity` (extended resources only, added to the
node's resources). `weight` (1-10000, 0 when unset) orders overlays; `catalog.overlay` applies them.

The checks are Karpenter v1.14's: the CRD's patterns and CEL rules (`price` and `priceAdjustment` exclusive, the
two patterns, `In` and `NotIn` need values, the bound operators one non-negative integer, at most 100
requirements, no cpu / memory / ephemeral-storage / pods in `capacity`, weight 1-10000) and its runtime validation
(`nodeoverlay_validation.go`: requirement keys as a NodePool's, restricted label domains). Unlike a NodePool's, an
overlay's requirement may name `karpenter.sh/nodepool` (Karpenter allows it; `catalog.overlay` says why it cannot
be honoured here).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.model.errors import Collector, ValidationError
from nodewright.model.fields import parse_requirement
from nodewright.model.nodepool import NODEPOOL_LABEL
from nodewright.model.parse import check_header, object_name
from nodewright.model.quantity import QuantityError, to_canonical
from nodewright.model.requirements import Requirement
from nodewright.model.schema import check_fields, get_int, get_list, get_map, get_str, join, map_key

NODEOVERLAY_API_VERSIONS = ("nodewright.io/v1alpha1", "karpenter.sh/v1alpha1")
KIND = "NodeOverlay"
# The resources a node always reports; an overlay may only add extended ones (Karpenter's WellKnownResources).
WELL_KNOWN_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")
MAX_REQUIREMENTS = 100
MAX_WEIGHT = 10000

# Karpenter's CRD patterns, verbatim in meaning: a price is an unsigned decimal; an adjustment is a signed decimal,
# a "+" percentage, or a "-" percentage of at most two integer digits (or exactly -100%).
PRICE_PATTERN = re.compile(r"^\d+(\.\d+)?$")
PRICE_ADJUSTMENT_PATTERN = re.compile(r"^(([+-](\d*\.?\d+))|(\+\d*\.?\d+%)|(-\d{1,2}(\.\d+)?%)|(-100%))$")


@dataclass(frozen=True, slots=True)
class NodeOverlay:
    """One validated NodeOverlay.

    `price` and `price_adjustment` are the text as written (at most one is set); `capacity` maps extended resource
    names to canonical integers; `weight` is 0 when unset. `generation` is metadata.generation (status conditions
    carry it as observedGeneration)."""

    name: str
    requirements: tuple[Requirement, ...] = ()
    price: str | None = None
    price_adjustment: str | None = None
    capacity: Mapping[str, int] = field(default_factory=dict)
    weight: int = 0
    api_version: str = NODEOVERLAY_API_VERSIONS[0]
    source: str = ""
    generation: int = 0

    @property
    def price_change(self) -> str | None:
        """The price text the overlay applies (`price` or `priceAdjustment`), or None when it sets no price."""
        return self.price if self.price is not None else self.price_adjustment


def adjusted_price(price: float, change: str | None) -> float:
    """The price per hour after an overlay's change (Karpenter's `AdjustedPrice`).

    Input: the offering's price and a validated `price` / `priceAdjustment` text (None or "" leaves it). An
    unsigned number replaces the price; "+x" / "-x" adds; "+x%" / "-x%" scales. The result is never below 0."""
    if not change:
        return price
    if change[0] not in "+-":
        return float(change)
    percent = change.endswith("%")
    adjusted = price * (1 + float(change[:-1]) / 100) if percent else price + float(change)
    return adjusted if adjusted >= 0 else 0.0


def parse_nodeoverlay(doc: Mapping[str, Any], source: str = "") -> tuple[NodeOverlay | None, list[ValidationError]]:
    """Validate a NodeOverlay document and build a `NodeOverlay` (None when any error was found), with every error."""
    ctx = Collector(source, KIND, object_name(doc))
    overlay = nodeoverlay_from(ctx, doc)
    return (overlay if ctx.ok else None), ctx.errors


def nodeoverlay_from(ctx: Collector, doc: Mapping[str, Any]) -> NodeOverlay | None:
    """Like `parse_nodeoverlay`, reporting into an existing collector."""
    api_version = check_header(ctx, doc, NODEOVERLAY_API_VERSIONS)
    spec = get_map(ctx, doc.get("spec"), "spec", required=True)
    if spec is None:
        return None
    check_fields(ctx, spec, "spec", ("requirements", "price", "priceAdjustment", "capacity", "weight"))
    if "requirements" not in spec:
        ctx.error("spec.requirements", "is required (write requirements: [] to select every instance type)")
    requirements = _requirements(ctx, spec.get("requirements"), "spec.requirements")
    price = _priced(ctx, spec.get("price"), "spec.price", PRICE_PATTERN, 'an unsigned decimal such as "0.42" or "3"')
    adjustment = _priced(
        ctx,
        spec.get("priceAdjustment"),
        "spec.priceAdjustment",
        PRICE_ADJUSTMENT_PATTERN,
        'a signed amount such as "-0.5" or "+1", or a signed percentage such as "-50%" or "+10%" (at least -100%)',
    )
    if "price" in spec and "priceAdjustment" in spec:
        ctx.error("spec", "cannot set both 'price' and 'priceAdjustment'; keep one of them")
    capacity = _capacity(ctx, spec.get("capacity"), "spec.capacity")
    weight = get_int(ctx, spec.get("weight"), "spec.weight", minimum=1, maximum=MAX_WEIGHT)
    metadata = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
    generation = metadata.get("generation") if isinstance(metadata, Mapping) else 0
    if not ctx.ok:
        return None
    return NodeOverlay(
        name=object_name(doc),
        requirements=requirements,
        price=price,
        price_adjustment=adjustment,
        capacity=capacity,
        weight=weight or 0,
        api_version=api_version,
        source=ctx.source,
        generation=generation if isinstance(generation, int) else 0,
    )


def _requirements(ctx: Collector, value: Any, path: str) -> tuple[Requirement, ...]:
    """The requirements with a NodePool's key and value rules, `karpenter.sh/nodepool` allowed, `NotIn` needing
    values and no `minValues` (an overlay selects; it does not ask for flexibility)."""
    items = get_list(ctx, value, path)
    if items is None:
        return ()
    if len(items) > MAX_REQUIREMENTS:
        ctx.error(path, f"has {len(items)} entries; at most {MAX_REQUIREMENTS} are allowed")
    out = []
    for i, raw in enumerate(items):
        where = join(path, i)
        if isinstance(raw, Mapping):
            if "minValues" in raw:
                ctx.error(join(where, "minValues"), "a NodeOverlay requirement has no minValues; remove it")
                continue
            if raw.get("operator") == "NotIn" and not raw.get("values"):
                ctx.error(join(where, "values"), "requirements with operator 'NotIn' must have a value defined")
                continue
        # The nodepool label is restricted in a NodePool (nodewright sets it) but an overlay may select on it.
        nodepool_key = isinstance(raw, Mapping) and raw.get("key") == NODEPOOL_LABEL
        requirement = parse_requirement(ctx, raw, where, owner="NodeClaim" if nodepool_key else "NodePool")
        if requirement is not None:
            out.append(requirement)
    return tuple(out)


def _priced(ctx: Collector, value: Any, path: str, pattern: re.Pattern[str], form: str) -> str | None:
    text = get_str(ctx, value, path)
    if text is None:
        return None
    if not pattern.match(text):
        ctx.error(path, f"{text!r} is not a valid value; write {form}")
        return None
    return text


def _capacity(ctx: Collector, value: Any, path: str) -> dict[str, int]:
    resources = get_map(ctx, value, path)
    if resources is None:
        return {}
    out: dict[str, int] = {}
    for name, quantity in resources.items():
        where = map_key(path, str(name))
        if name in WELL_KNOWN_RESOURCES:
            ctx.error(
                where,
                f"invalid resource restricted: an overlay adds extended resources only, not {name} "
                "(nodewright computes cpu, memory, ephemeral-storage and pods from the instance type)",
            )
            continue
        if isinstance(quantity, bool) or not isinstance(quantity, str | int | float):
            ctx.error(where, f'must be a quantity such as "1" or "8", not {type(quantity).__name__}')
            continue
        try:
            amount = to_canonical(str(name), quantity)
        except QuantityError as exc:
            ctx.error(where, str(exc))
            continue
        if amount < 0:
            ctx.error(where, "must not be negative")
            continue
        out[str(name)] = amount
    return out
