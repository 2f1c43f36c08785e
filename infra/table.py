"""The one DynamoDB table: idempotency records, the unavailable-offering cache, locks, launch templates.

Its key schema is the contract in `nodewright.settings` (partition `pk`, sort `sk`, TTL `expires_at`).

Choices:
- On demand: traffic is a few requests per batch with bursts when capacity runs short; there is
  nothing to plan capacity for.
- Encryption with the AWS managed key (`aws/dynamodb`): every use shows in CloudTrail and there is no key
  policy to maintain. The items (batch ids, instance types, lock owners) are not sensitive enough to
  justify a customer managed key and its monthly cost and key-policy upkeep; switch `encryption` to
  CUSTOMER_MANAGED if your organisation requires it.
- Point-in-time recovery: costs next to nothing for a table this small and undoes a bad write to
  lock items during an incident.
- Retained when the stack is deleted (`retainTable`, true by default), like the state of any controller one
  uninstalls by mistake: it holds the locks of disruptions in flight and the launch idempotency records, and
  an empty on-demand table costs nothing. Every item expires by TTL, so a retained table empties itself;
  `retainTable=false` deletes it with the stack (docs/uninstall.md).
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from nodewright import settings


class StateTable(Construct):
    """The table and nothing else; callers grant access to it."""

    def __init__(self, scope: Construct, construct_id: str, *, retain: bool = True) -> None:
        super().__init__(scope, construct_id)
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name=settings.TABLE_PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=settings.TABLE_SORT_KEY, type=dynamodb.AttributeType.STRING),
            time_to_live_attribute=settings.TABLE_TTL_ATTRIBUTE,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        )
