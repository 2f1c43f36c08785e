"""One delivery launches once: the answer to a delivery that launched is kept for a short window.

The forwarder numbers each delivery of a pod into its batch id, so a retried Invoke (the function timed out
or its answer was lost) carries the id of the delivery it repeats, while the next evaluation of a pod that is
still pending carries a new one. A delivery that launched capacity is answered from its record for
`DELIVERY_WINDOW_SECONDS` instead of being planned again; a delivery that launched nothing (no NodePool yet, a
limit, every offering out of capacity, throttling) keeps no record, so a retry is evaluated afresh, as
Karpenter's loop evaluates a pending pod again until it runs. Even without the record a repeat could not
launch twice: its pods are nominated to the NodeClaims it created, those are named after the batch, and
CreateFleet's ClientToken is the NodeClaim's name.

The window covers every retry of one Invoke: the forwarder tries 5 times, each up to the function's timeout,
with back-off between (about 11 minutes at worst).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nodewright.ports import StateStore
from nodewright.service.provision.result import ProvisionResult

DELIVERY_WINDOW_SECONDS = 15 * 60
# A DynamoDB item holds 400 KB; pod lists are dropped from an answer that would not fit.
MAX_ANSWER_BYTES = 300_000


def recall(state: StateStore, batch_id: str, now: float) -> dict[str, Any] | None:
    """The answer this delivery got before, marked `replayed`, or None."""
    answer = state.recall_delivery(batch_id, now)
    return {**answer, "replayed": True} if answer is not None else None


def remember(state: StateStore, result: ProvisionResult, answer: Mapping[str, Any], now: float) -> bool:
    """Keep the answer when this delivery launched something; returns whether it was kept."""
    if not any(not c.reused for c in result.launched):
        return False
    kept = {k: answer[k] for k in ("cluster", "batch_id", "summary", "nodeclaims", "fleet_requests") if k in answer}
    if len(json.dumps(kept)) > MAX_ANSWER_BYTES:
        kept["nodeclaims"] = [{k: v for k, v in c.items() if k != "pods"} for c in kept.get("nodeclaims", ())]
    state.remember_delivery(result.batch_id, kept, now, DELIVERY_WINDOW_SECONDS)
    return True
