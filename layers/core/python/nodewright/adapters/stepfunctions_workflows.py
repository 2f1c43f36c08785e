"""The Workflows port over a boto3 Step Functions client: start the disruption state machine, and ask how an
execution is doing (the leases on nodes are valid while their execution runs, see `disruption.lease`).

Executions are named by the caller (`DisruptionCommand.execution_name()`), so a duplicate request asks for a
name Step Functions has already seen and gets ExecutionAlreadyExists, which this adapter reports as False:
the workflow for that event and node exists, and that is what the caller wanted. (Step Functions also answers
an identical request for a still-running execution, same name and same input, with the original response;
that case reports True, and equally starts nothing new.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

ALREADY_EXISTS = "ExecutionAlreadyExists"
DOES_NOT_EXIST = "ExecutionDoesNotExist"


class StepFunctionsWorkflows:
    """Workflows port for one state machine."""

    def __init__(self, state_machine_arn: str, client: Any) -> None:
        self.state_machine_arn = state_machine_arn
        self.client = client

    def start(self, name: str, document: Mapping[str, Any]) -> bool:
        """Start execution `name` with `document` as input; False when that execution exists already. Any
        other error (throttling after retries, access denied, a missing state machine) is raised."""
        from botocore.exceptions import ClientError

        try:
            self.client.start_execution(
                stateMachineArn=self.state_machine_arn, name=name, input=json.dumps(document, sort_keys=True)
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == ALREADY_EXISTS:
                return False
            raise
        return True

    def status(self, name: str) -> str:
        """DescribeExecution's status of execution `name`; "" when Step Functions has no such execution."""
        from botocore.exceptions import ClientError

        try:
            described = self.client.describe_execution(executionArn=execution_arn(self.state_machine_arn, name))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == DOES_NOT_EXIST:
                return ""
            raise
        return str(described.get("status") or "")


def execution_arn(state_machine_arn: str, name: str) -> str:
    """`arn:aws:states:<region>:<account>:execution:<state machine>:<name>` from the state machine's ARN."""
    prefix, _, machine = state_machine_arn.rpartition(":stateMachine:")
    return f"{prefix}:execution:{machine}:{name}"
