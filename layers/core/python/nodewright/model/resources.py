"""Resource lists: mappings from resource name to a canonical integer (see `quantity`).

Plain dicts are used on purpose: the scheduler adds and compares them in its innermost loop, and the
functions here are the only arithmetic on them, so the invariants live in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from nodewright.model.quantity import to_canonical

Resources = Mapping[str, int]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
NVIDIA_GPU = "nvidia.com/gpu"


def parse_resources(raw: Mapping[str, str | int | float]) -> dict[str, int]:
    """Parse a Kubernetes resource list (`{"cpu": "500m", "memory": "1Gi"}`) into canonical integers."""
    return {name: to_canonical(name, value) for name, value in raw.items()}


def add(a: Resources, b: Resources) -> dict[str, int]:
    """The sum of two resource lists."""
    out = dict(a)
    for name, value in b.items():
        out[name] = out.get(name, 0) + value
    return out


def subtract(a: Resources, b: Resources) -> dict[str, int]:
    """a - b per resource (may go negative; callers check `fits` first)."""
    out = dict(a)
    for name, value in b.items():
        out[name] = out.get(name, 0) - value
    return out


def scale(a: Resources, factor: int) -> dict[str, int]:
    """a * factor per resource."""
    return {name: value * factor for name, value in a.items()}


def total(items: Iterable[Resources]) -> dict[str, int]:
    """The sum of many resource lists."""
    out: dict[str, int] = {}
    for item in items:
        for name, value in item.items():
            out[name] = out.get(name, 0) + value
    return out


def fits(request: Resources, available: Resources) -> bool:
    """True when every requested resource is available (a resource absent from `available` is 0)."""
    # A plain loop rather than all(<generator>): the scheduler calls this in its innermost loops.
    for name, value in request.items():  # noqa: SIM110
        if value > 0 and value > available.get(name, 0):
            return False
    return True


def first_shortfall(request: Resources, available: Resources) -> str | None:
    """The first resource (by name) that `available` cannot cover, or None when the request fits."""
    for name in sorted(request):
        if request[name] > 0 and request[name] > available.get(name, 0):
            return name
    return None


def max_copies(request: Resources, available: Resources) -> int:
    """How many copies of `request` fit into `available` (a large number when nothing is requested)."""
    best = 1 << 30
    for name, value in request.items():
        if value > 0:
            have = available.get(name, 0)
            if have < value:
                return 0
            copies = have // value
            if copies < best:
                best = copies
    return best


def elementwise_max(a: Resources, b: Resources) -> dict[str, int]:
    """Per resource, the larger of a and b."""
    out = dict(a)
    for name, value in b.items():
        out[name] = max(out.get(name, 0), value)
    return out
