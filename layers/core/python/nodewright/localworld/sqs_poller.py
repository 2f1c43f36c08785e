"""The Lambda service's SQS poller, for the local world (inside the moto server process).

moto delivers a message to a mapped function once, synchronously, when it is sent: a failure is not retried,
a partial batch response is ignored, and a poison message never reaches the dead-letter queue. AWS instead
polls: it receives a batch (which counts a receive and hides the messages for the visibility timeout),
invokes the function, deletes what succeeded and leaves the rest to reappear. After `maxReceiveCount`
receives SQS itself moves a message to the queue's dead-letter queue (moto's receive does that part).

`install()` takes event source mappings away from moto's send-time trigger and runs that poll loop in a thread:
- a function error fails the whole batch; with `ReportBatchItemFailures` only the listed `itemIdentifier`s fail;
- failed messages are made visible again at once instead of after the visibility timeout, the one liberty
  taken (as with the world's short waits): five receives then take seconds, not five timeouts.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

POLL_INTERVAL_SECONDS = 0.2
_INSTALLED = False


class _HeldMappings(dict[str, Any]):
    """A queue's event source mappings, hidden from moto's send-time trigger (which iterates `items()`)."""

    def items(self) -> Any:
        return iter(())


def _record(message: Any, queue: Any, region: str) -> dict[str, Any]:
    return {
        "messageId": message.id,
        "receiptHandle": message.receipt_handle,
        "body": message.body,
        "attributes": {
            "ApproximateReceiveCount": str(message.approximate_receive_count),
            "SentTimestamp": str(message.sent_timestamp),
            "SenderId": str(message.sender_id),
            "ApproximateFirstReceiveTimestamp": str(message.approximate_first_receive_timestamp),
        },
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": queue.queue_arn,
        "awsRegion": region,
    }


def failed_ids(payload: Any, function_error: bool, message_ids: list[str], partial: bool) -> set[str]:
    """Which messages of a batch failed: all on a function error; with partial batch responses the
    `batchItemFailures` the function returned (an unreadable response fails the whole batch, as in AWS)."""
    if function_error:
        return set(message_ids)
    if not partial:
        return set()
    try:
        document = json.loads(payload) if payload else {}
        failures = document.get("batchItemFailures") or []
        return {str(f["itemIdentifier"]) for f in failures}
    except (ValueError, TypeError, KeyError, AttributeError):
        return set(message_ids)


def poll_once() -> int:
    """One pass over every queue with a mapping; returns the number of messages delivered."""
    from moto.awslambda.utils import get_backend
    from moto.sqs.models import sqs_backends

    delivered = 0
    backends: dict[str, Any] = dict(sqs_backends.items())  # moto's own types are looser than its stubs say
    for account_id, regions in backends.items():
        for region, backend in list(regions.items()):
            for queue in list(backend.queues.values()):
                for function_arn, mapping in list(dict.items(queue.lambda_event_source_mappings)):
                    if not mapping.enabled:
                        continue
                    messages = backend.receive_message(
                        queue.name, int(mapping.batch_size or 10), 0, int(queue.visibility_timeout)
                    )
                    if not messages:
                        continue
                    delivered += len(messages)
                    event = {"Records": [_record(m, queue, region) for m in messages]}
                    headers: dict[str, Any] = {}
                    payload = get_backend(account_id, region).invoke(
                        function_name=function_arn,
                        qualifier=None,
                        body=json.dumps(event),
                        headers={},
                        response_headers=headers,
                    )
                    partial = "ReportBatchItemFailures" in (mapping.function_response_types or [])
                    failed = failed_ids(payload, "x-amz-function-error" in headers, [m.id for m in messages], partial)
                    for message in messages:
                        if message.id in failed:
                            backend.change_message_visibility(queue.name, message.receipt_handle, visibility_timeout=0)
                        else:
                            backend.delete_message(queue.name, message.receipt_handle)
    return delivered


def _loop() -> None:
    while True:
        try:
            poll_once()
        except Exception as error:  # the poller must outlive one bad pass, as the Lambda service does
            print(f"sqs poller: {type(error).__name__}: {error}", flush=True)
        time.sleep(POLL_INTERVAL_SECONDS)


def install() -> None:
    """Hide mappings from moto's send-time trigger and start the poll loop (once per process)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from moto.sqs.models import Queue

    original_init = Queue.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.lambda_event_source_mappings = _HeldMappings()

    Queue.__init__ = init  # type: ignore[method-assign]
    threading.Thread(target=_loop, name="sqs-poller", daemon=True).start()
    _INSTALLED = True
