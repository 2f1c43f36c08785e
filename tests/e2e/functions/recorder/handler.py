"""Test handler: the provisioner's seat at the end of the forwarder's pipe, recording what arrives.

Each invocation is stored in the DynamoDB table named by RECORD_TABLE (partition key `pk` = batch id,
sort key `sk` = arrival time), together with what the provisioner's own payload check makes of it (how many
pod hints, or the error), so the test sees both the wire format and whether it parses. It answers like a
provisioner: a short summary.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any

import boto3

from nodewright.service.batch import PayloadError, parse_batch


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        loaded, errors = len(parse_batch(event).pods), []
    except PayloadError as error:
        loaded, errors = 0, [str(error)]
    received = time.time()
    item = {
        "pk": {"S": str(event.get("batch_id"))},
        "sk": {"S": f"{received:.6f}-{uuid.uuid4().hex[:6]}"},
        "received_at": {"N": f"{received:.6f}"},
        "body": {"S": json.dumps(event)},
        "loaded": {"N": str(loaded)},
        "errors": {"S": json.dumps([str(e) for e in errors])},
    }
    boto3.client("dynamodb").put_item(TableName=os.environ["RECORD_TABLE"], Item=item)
    return {"batch_id": event.get("batch_id"), "accepted": len(event.get("pods") or []), "decisions": []}
