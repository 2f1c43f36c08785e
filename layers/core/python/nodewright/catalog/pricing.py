"""Price rules that need no AWS call: the offline spot estimate and the price of reserved capacity.

Offline spot estimate (used to build the shipped snapshot, never when a live spot price exists):

    spot(type, zone) = on_demand(type) x (1 - discount(category)) x (1 + variation(type, zone))

- discount by instance category: 0.70 for burstable `t`; 0.45 for accelerated computing (p, g, gr,
  inf, trn, dl, f, vt), where spot capacity is scarcer and discounts shallower; 0.63 for every other
  category. These are round figures in the range AWS advertises for spot ("up to 90 %") and that the
  Spot Instance Advisor shows for common families; they are estimates, not quotes.
- variation: a deterministic value in [-0.08, +0.08) from the first 8 bytes of
  SHA-256("<type>/<zone>"), so zones differ (as real spot markets do) and the scheduler's choice of
  zone is exercised, yet every run and every machine computes the same number.
- the result is rounded to 6 decimals and never exceeds the on-demand price.

Reserved capacity (an On-Demand Capacity Reservation) is already paid for. Karpenter prices a reserved
offering at the on-demand price divided by 10,000,000: effectively free, so it is always tried first,
but still ordered by size for consolidation. nodewright uses the same rule (`reserved_price`).
"""

from __future__ import annotations

import hashlib

BURSTABLE_DISCOUNT = 0.70
ACCELERATED_DISCOUNT = 0.45
DEFAULT_DISCOUNT = 0.63
ZONE_VARIATION = 0.08
ACCELERATED_CATEGORIES = frozenset({"p", "g", "gr", "inf", "trn", "dl", "f", "vt"})
RESERVED_PRICE_DIVISOR = 10_000_000.0


def spot_discount(category: str) -> float:
    """The fraction of the on-demand price the offline estimate takes off for this category."""
    if category == "t":
        return BURSTABLE_DISCOUNT
    if category in ACCELERATED_CATEGORIES:
        return ACCELERATED_DISCOUNT
    return DEFAULT_DISCOUNT


def zone_variation(instance_type: str, zone: str) -> float:
    """A deterministic per (type, zone) variation in [-ZONE_VARIATION, +ZONE_VARIATION)."""
    digest = hashlib.sha256(f"{instance_type}/{zone}".encode()).digest()
    unit = int.from_bytes(digest[:8], "big") / 2**64  # uniform in [0, 1)
    return (unit * 2 - 1) * ZONE_VARIATION


def estimated_spot_price(instance_type: str, category: str, zone: str, on_demand: float) -> float:
    """The offline spot price estimate in USD/hour (see the module docstring for the rule)."""
    price = on_demand * (1 - spot_discount(category)) * (1 + zone_variation(instance_type, zone))
    return min(round(price, 6), on_demand)


def reserved_price(on_demand: float) -> float:
    """Karpenter's price for a reserved (ODCR) offering: on-demand / 10,000,000 (0 when unknown)."""
    return on_demand / RESERVED_PRICE_DIVISOR if on_demand > 0 else 0.0
