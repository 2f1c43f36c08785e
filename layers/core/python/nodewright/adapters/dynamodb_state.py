"""The StateStore port on DynamoDB: offerings recently refused for capacity, shared by every invocation, the
leases of the disruption workflow and the lock of the one planner of new capacity (partition `lock`, sort key
the lock name, attributes `owner`, `interruption`, `acquired_at`; see `disruption.lease`), and the answers to
deliveries that launched (partition `delivery`, sort key the batch id, attribute `answer`, JSON).

Items live in the stack's one table (partition `pk`, sort `sk`, TTL attribute `expires_at`). All marks
share the partition `unavailable` with the offering as sort key (`<type>#<zone>#<capacity type>`), so one
strongly consistent Query returns every mark: a Scan would read the idempotency records too. DynamoDB's
TTL deletes expired items lazily (up to days later), so reads also drop marks whose `expires_at` has
passed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from nodewright.disruption.lease import Lease
from nodewright.ports import OfferingKey
from nodewright.settings import TABLE_PARTITION_KEY, TABLE_SORT_KEY, TABLE_TTL_ATTRIBUTE

UNAVAILABLE_PARTITION = "unavailable"
LOCK_PARTITION = "lock"
DELIVERY_PARTITION = "delivery"


class DynamoDBState:
    """StateStore over a boto3 DynamoDB client (low-level, so values are typed attribute maps)."""

    def __init__(self, table: str, dynamodb: Any) -> None:
        self.table = table
        self.dynamodb = dynamodb

    def unavailable_offerings(self, now: float) -> frozenset[OfferingKey]:
        out: set[OfferingKey] = set()
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": TABLE_PARTITION_KEY},
            "ExpressionAttributeValues": {":pk": {"S": UNAVAILABLE_PARTITION}},
            "ConsistentRead": True,
        }
        while True:
            page = self.dynamodb.query(**kwargs)
            for item in page.get("Items", ()):
                expires = float(item.get(TABLE_TTL_ATTRIBUTE, {}).get("N", "0"))
                if expires <= now:
                    continue
                parts = str(item[TABLE_SORT_KEY]["S"]).split("#")
                if len(parts) == 3:
                    out.add((parts[0], parts[1], parts[2]))
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return frozenset(out)

    def mark_unavailable(self, offerings: Mapping[OfferingKey, str], now: float, ttl_seconds: int) -> None:
        expires = int(now + ttl_seconds)
        items = [
            {
                "PutRequest": {
                    "Item": {
                        TABLE_PARTITION_KEY: {"S": UNAVAILABLE_PARTITION},
                        TABLE_SORT_KEY: {"S": f"{instance_type}#{zone}#{capacity_type}"},
                        TABLE_TTL_ATTRIBUTE: {"N": str(expires)},
                        "reason": {"S": reason},
                    }
                }
            }
            for (instance_type, zone, capacity_type), reason in sorted(offerings.items())
        ]
        for start in range(0, len(items), 25):  # BatchWriteItem takes at most 25 requests
            request = {self.table: items[start : start + 25]}
            for attempt in range(8):
                response = self.dynamodb.batch_write_item(RequestItems=request)
                request = response.get("UnprocessedItems") or {}
                if not request:
                    break
                # Unprocessed items mean the table is throttling this partition: back off and resend them.
                time.sleep(0.05 * 2**attempt)

    def _lock_key(self, name: str) -> dict[str, Any]:
        return {TABLE_PARTITION_KEY: {"S": LOCK_PARTITION}, TABLE_SORT_KEY: {"S": name}}

    def _lock_item(self, name: str, owner: str, now: float, ttl_seconds: int, interruption: bool) -> dict[str, Any]:
        return {
            **self._lock_key(name),
            "owner": {"S": owner},
            "interruption": {"BOOL": interruption},
            "acquired_at": {"N": str(int(now))},
            TABLE_TTL_ATTRIBUTE: {"N": str(int(now + ttl_seconds))},
        }

    def acquire_lock(self, name: str, owner: str, now: float, ttl_seconds: int, interruption: bool = False) -> str:
        try:
            # One conditional write decides the race: free, expired, or already ours (a renewal).
            self.dynamodb.put_item(
                TableName=self.table,
                Item=self._lock_item(name, owner, now, ttl_seconds, interruption),
                ConditionExpression="attribute_not_exists(#pk) OR #owner = :owner OR #expires <= :now",
                ExpressionAttributeNames={
                    "#pk": TABLE_PARTITION_KEY,
                    "#owner": "owner",
                    "#expires": TABLE_TTL_ATTRIBUTE,
                },
                ExpressionAttributeValues={":owner": {"S": owner}, ":now": {"N": str(int(now))}},
            )
        except self.dynamodb.exceptions.ConditionalCheckFailedException:
            held = self.lease(name, now)
            return held.owner if held is not None else self.acquire_lock(name, owner, now, ttl_seconds, interruption)
        return owner

    def take_over_lock(
        self, name: str, owner: str, previous: str, now: float, ttl_seconds: int, interruption: bool = False
    ) -> bool:
        try:
            self.dynamodb.put_item(
                TableName=self.table,
                Item=self._lock_item(name, owner, now, ttl_seconds, interruption),
                ConditionExpression="attribute_not_exists(#pk) OR #owner = :previous",
                ExpressionAttributeNames={"#pk": TABLE_PARTITION_KEY, "#owner": "owner"},
                ExpressionAttributeValues={":previous": {"S": previous}},
            )
        except self.dynamodb.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def lease(self, name: str, now: float) -> Lease | None:
        item = self.dynamodb.get_item(TableName=self.table, Key=self._lock_key(name), ConsistentRead=True).get("Item")
        found = _lease(item) if item else None
        return found if found is not None and found.expires_at > now else None

    def leases(self, now: float) -> Mapping[str, Lease]:
        out: dict[str, Lease] = {}
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": TABLE_PARTITION_KEY},
            "ExpressionAttributeValues": {":pk": {"S": LOCK_PARTITION}},
            "ConsistentRead": True,
        }
        while True:
            page = self.dynamodb.query(**kwargs)
            for item in page.get("Items", ()):
                found = _lease(item)
                if found.expires_at > now:
                    out[found.name] = found
            if "LastEvaluatedKey" not in page:
                return out
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def release_lock(self, name: str, owner: str) -> None:
        try:
            self.dynamodb.delete_item(
                TableName=self.table,
                Key=self._lock_key(name),
                ConditionExpression="#owner = :owner",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":owner": {"S": owner}},
            )
        except self.dynamodb.exceptions.ConditionalCheckFailedException:
            return

    def recall_delivery(self, batch_id: str, now: float) -> Mapping[str, Any] | None:
        key = {TABLE_PARTITION_KEY: {"S": DELIVERY_PARTITION}, TABLE_SORT_KEY: {"S": batch_id}}
        item = self.dynamodb.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
        if not item or float(item.get(TABLE_TTL_ATTRIBUTE, {}).get("N", "0")) <= now:
            return None
        answer: Mapping[str, Any] = json.loads(item["answer"]["S"])
        return answer

    def remember_delivery(self, batch_id: str, answer: Mapping[str, Any], now: float, ttl_seconds: int) -> None:
        self.dynamodb.put_item(
            TableName=self.table,
            Item={
                TABLE_PARTITION_KEY: {"S": DELIVERY_PARTITION},
                TABLE_SORT_KEY: {"S": batch_id},
                TABLE_TTL_ATTRIBUTE: {"N": str(int(now + ttl_seconds))},
                "answer": {"S": json.dumps(answer, separators=(",", ":"))},
            },
        )


def _lease(item: Mapping[str, Any]) -> Lease:
    """A lock item as a Lease (items written before leases recorded `interruption` and `acquired_at` read as a
    voluntary lease taken at epoch 0)."""
    return Lease(
        name=str(item[TABLE_SORT_KEY]["S"]),
        owner=str(item.get("owner", {}).get("S", "")),
        interruption=bool(item.get("interruption", {}).get("BOOL", False)),
        acquired_at=float(item.get("acquired_at", {}).get("N", "0")),
        expires_at=float(item.get(TABLE_TTL_ATTRIBUTE, {}).get("N", "0")),
    )
