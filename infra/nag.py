"""cdk-nag acknowledgements with their reasons, in the form the CDK's validation API records them.

An acknowledgement names the rule and, for rules that report several findings on one resource (IAM4,
IAM5), each finding, so that a new wildcard or managed policy is reported instead of silently covered.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

PACK = "AwsSolutions"


def acknowledge(scope: IConstruct, rule: str, reason: str, findings: Sequence[str] = ()) -> None:
    """Acknowledge `rule` (e.g. "AwsSolutions-IAM5") on `scope` and its children, once per finding."""
    if len(reason.strip()) < 20:
        raise ValueError(f"an acknowledgement of {rule} needs a real reason, got {reason!r}")
    ids = [f"{PACK}::{rule}[{finding}]" for finding in findings] if findings else [f"{PACK}::{rule}"]
    for ack_id in ids:
        Validations.of(scope).acknowledge(Acknowledgment(id=ack_id, reason=reason))
