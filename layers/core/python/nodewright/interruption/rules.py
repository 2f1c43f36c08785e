"""The EventBridge event patterns that route interruption events to the queue, one rule per event type.

Plain data, so the CDK construct (`infra/interruption.py`) and the functional tests (rules created in moto)
use the same patterns. They filter as far as EventBridge can, so the Lambda is not invoked for events it
would only ignore: state changes only to the states nodewright acts on, Health events only for EC2 scheduled
changes. `decide` still checks both, because `explain-event` and a mis-routed message reach it unfiltered.
"""

from __future__ import annotations

from typing import Any

from nodewright.interruption.decide import ACTING_STATES, HEALTH_CATEGORY, HEALTH_SERVICE
from nodewright.interruption.messages import (
    EC2_SOURCE,
    HEALTH_DETAIL_TYPE,
    HEALTH_SOURCE,
    REBALANCE_DETAIL_TYPE,
    RESERVATION_DETAIL_TYPE,
    SPOT_DETAIL_TYPE,
    STATE_CHANGE_DETAIL_TYPE,
)

# Rule name suffix -> event pattern (EventBridge JSON, as put_rule's EventPattern takes it).
EVENT_PATTERNS: dict[str, dict[str, Any]] = {
    "SpotInterruption": {"source": [EC2_SOURCE], "detail-type": [SPOT_DETAIL_TYPE]},
    "RebalanceRecommendation": {"source": [EC2_SOURCE], "detail-type": [REBALANCE_DETAIL_TYPE]},
    "InstanceStateChange": {
        "source": [EC2_SOURCE],
        "detail-type": [STATE_CHANGE_DETAIL_TYPE],
        "detail": {"state": list(ACTING_STATES)},
    },
    "ScheduledChange": {
        "source": [HEALTH_SOURCE],
        "detail-type": [HEALTH_DETAIL_TYPE],
        "detail": {"service": [HEALTH_SERVICE], "eventTypeCategory": [HEALTH_CATEGORY]},
    },
    "CapacityReservationInterruption": {"source": [EC2_SOURCE], "detail-type": [RESERVATION_DETAIL_TYPE]},
}
