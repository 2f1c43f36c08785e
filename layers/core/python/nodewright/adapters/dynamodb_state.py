"""The StateStore port on DynamoDB: offerings recently refused for capacity, shared by every invocation, the
locks of the disruption workflow and of the one planner of new capacity (partition `lock`, sort key the lock
name, attribute `owner`), and the answers to deliveries that launched (partition `delivery`, sort key the
batch id, attribute `answer`, JSON).

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

    def acquire_lock(self, name: str, owner: str, now: float, ttl_seconds: int) -> str:
        key = {TABLE_PARTITION_KEY: {"S": LOCK_PARTITION}, TABLE_SORT_KEY: {"S": name}}
        try:
            # One conditional write decides the race: free, expired, or already ours.
            self.dynamodb.put_item(
                TableName=self.table,
                Item={**key, "owner": {"S": owner}, TABLE_TTL_ATTRIBUTE: {"N": str(int(now + ttl_seconds))}},
                ConditionExpression="attribute_not_exists(#pk) OR #owner = :owner OR #expires <= :now",
                ExpressionAttributeNames={
                    "#pk": TABLE_PARTITION_KEY,
                    "#owner": "owner",
                    "#expires": TABLE_TTL_ATTRIBUTE,
                },
                ExpressionAttributeValues={":owner": {"S": owner}, ":now": {"N": str(int(now))}},
            )
        except self.dynamodb.exceptions.ConditionalCheckFailedException:
            item = self.dynamodb.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item") or {}
            return str(item.get("owner", {}).get("S", "")) or self.acquire_lock(name, owner, now, ttl_seconds)
        return owner

    def held_locks(self, now: float) -> Mapping[str, str]:
        out: dict[str, str] = {}
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
                if float(item.get(TABLE_TTL_ATTRIBUTE, {}).get("N", "0")) > now:
                    out[str(item[TABLE_SORT_KEY]["S"])] = str(item.get("owner", {}).get("S", ""))
            if "LastEvaluatedKey" not in page:
                return out
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def release_lock(self, name: str, owner: str) -> None:
        key = {TABLE_PARTITION_KEY: {"S": LOCK_PARTITION}, TABLE_SORT_KEY: {"S": name}}
        try:
            self.dynamodb.delete_item(
                TableName=self.table,
                Key=key,
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
