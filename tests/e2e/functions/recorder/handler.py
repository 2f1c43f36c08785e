"""Test handler: the provisioner's seat at the end of the forwarder's pipe, recording what arrives.

Each invocation is stored in the DynamoDB table named by RECORD_TABLE (partition key `pk` = batch id,
sort key `sk` = arrival time), together with what the provisioner's own loader makes of the pods, so the
test sees both the wire format and whether it loads. It answers like a provisioner: a short summary.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any

import boto3

from nodewright.model.loader import load_documents


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    inputs, errors = load_documents(event.get("pods") or [], "forwarder")
    received = time.time()
    item = {
        "pk": {"S": str(event.get("batch_id"))},
        "sk": {"S": f"{received:.6f}-{uuid.uuid4().hex[:6]}"},
        "received_at": {"N": f"{received:.6f}"},
        "body": {"S": json.dumps(event)},
        "loaded": {"N": str(len(inputs.pending_pods))},
        "errors": {"S": json.dumps([str(e) for e in errors])},
    }
    boto3.client("dynamodb").put_item(TableName=os.environ["RECORD_TABLE"], Item=item)
    return {"batch_id": event.get("batch_id"), "accepted": len(event.get("pods") or []), "decisions": []}
