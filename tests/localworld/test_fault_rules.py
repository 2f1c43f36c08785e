"""Fault rules and the CreateFleet rewrite the moto server applies at the wire."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nodewright.localworld.faults import (
    Faults,
    InvocationKilled,
    Rejected,
    add_errors_to_response,
    all_rejected_response,
    error_response,
    rewrite_create_fleet,
)

ZONES = {"subnet-a": "us-east-1a", "subnet-b": "us-east-1b"}


def _params(capacity_type: str = "spot") -> dict[str, str]:
    return {
        "Action": "CreateFleet",
        "Type": "instant",
        "TargetCapacitySpecification.DefaultTargetCapacityType": capacity_type,
        "LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId": "lt-1",
        "LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version": "$Latest",
        "LaunchTemplateConfigs.1.Overrides.1.InstanceType": "m5.large",
        "LaunchTemplateConfigs.1.Overrides.1.SubnetId": "subnet-a",
        "LaunchTemplateConfigs.1.Overrides.2.InstanceType": "m5.large",
        "LaunchTemplateConfigs.1.Overrides.2.SubnetId": "subnet-b",
        "LaunchTemplateConfigs.1.Overrides.3.InstanceType": "c5.large",
        "LaunchTemplateConfigs.1.Overrides.3.SubnetId": "subnet-a",
    }


def _rewrite(faults: Faults, params: dict[str, str]) -> tuple[dict[str, str], list[Rejected]]:
    return rewrite_create_fleet(params, faults, ZONES.__getitem__, lambda spec: "t3.micro")


def test_unavailable_override_is_removed_and_survivors_renumbered() -> None:
    faults = Faults()
    faults.replace({"unavailable": [{"instance_type": "m5.large", "zone": "us-east-1a", "capacity_type": "spot"}]})
    out, rejected = _rewrite(faults, _params())
    assert [(r.instance_type, r.zone, r.capacity_type) for r in rejected] == [("m5.large", "us-east-1a", "spot")]
    assert out["LaunchTemplateConfigs.1.Overrides.1.SubnetId"] == "subnet-b"
    assert out["LaunchTemplateConfigs.1.Overrides.2.InstanceType"] == "c5.large"
    assert "LaunchTemplateConfigs.1.Overrides.3.InstanceType" not in out
    assert out["LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId"] == "lt-1"


def test_rules_match_capacity_type_and_wildcards() -> None:
    faults = Faults()
    faults.replace({"unavailable": [{"instance_type": "m5.large", "zone": "us-east-1a", "capacity_type": "spot"}]})
    _, rejected = _rewrite(faults, _params("on-demand"))
    assert rejected == []
    faults.replace({"unavailable": [{"instance_type": "*", "zone": "us-east-1a"}]})
    out, rejected = _rewrite(faults, _params("on-demand"))
    assert len(rejected) == 2
    assert not any(k.endswith("Overrides.2.InstanceType") for k in out)


def test_everything_unavailable_leaves_no_config() -> None:
    faults = Faults()
    faults.replace({"unavailable": [{"instance_type": "*"}]})
    out, rejected = _rewrite(faults, _params())
    assert len(rejected) == 3
    assert not any(k.startswith("LaunchTemplateConfigs.") for k in out)
    doc = ET.fromstring(all_rejected_response(rejected))
    codes = [e.text for e in doc.iter() if e.tag.endswith("errorCode")]
    assert codes == ["InsufficientInstanceCapacity"] * 3


def test_errors_are_inserted_into_a_moto_response() -> None:
    faults = Faults()
    faults.replace({"unavailable": [{"instance_type": "c5.large"}]})
    _, rejected = _rewrite(faults, _params())
    body = '<CreateFleetResponse xmlns="x"><fleetId>fleet-1</fleetId><errorSet/></CreateFleetResponse>'
    merged = add_errors_to_response(body, rejected)
    assert merged.count("<errorSet>") == 1 and "<errorSet/>" not in merged
    assert "<instanceType>c5.large</instanceType>" in merged
    assert "<availabilityZone>us-east-1a</availabilityZone>" in merged


def test_throttle_counts_down_per_action_then_wildcard() -> None:
    faults = Faults()
    faults.replace({"throttle": {"CreateFleet": 1, "*": 1}})
    assert faults.take_throttle("CreateFleet")
    assert faults.take_throttle("DescribeSubnets")  # the wildcard's one call
    assert not faults.take_throttle("CreateFleet")
    assert faults.to_json()["throttle"] == {"CreateFleet": 0, "*": 0}


def test_refusals_match_service_action_and_function_and_count_down() -> None:
    faults = Faults()
    faults.replace(
        {
            "refuse": [
                {"action": "dynamodb:PutItem", "code": "ProvisionedThroughputExceededException", "count": 2},
                {"action": "states:*", "code": "ServiceUnavailable", "status": 503, "function": "Interruption"},
            ]
        }
    )
    asked: list[str] = []

    def caller(name: str) -> Callable[[], str]:
        def ask() -> str:
            asked.append(name)
            return name

        return ask

    assert faults.take_refusal("ec2", "PutItem", caller("x")) is None  # another service's action of that name
    assert faults.take_refusal("dynamodb", "GetItem", caller("x")) is None
    assert asked == []  # no function-scoped rule matched, so the caller was never looked up
    first = faults.take_refusal("dynamodb", "PutItem", caller("x"))
    assert first is not None and first.code == "ProvisionedThroughputExceededException" and first.status == 400
    assert faults.take_refusal("dynamodb", "PutItem", caller("x")) is not None
    assert faults.take_refusal("dynamodb", "PutItem", caller("x")) is None  # two taken, the third goes through
    # Scoped to a function: another caller's StartExecution goes through, the named one's is refused for ever.
    assert faults.take_refusal("states", "StartExecution", caller("stack-Provisioner-abc")) is None
    for _ in range(3):
        refused = faults.take_refusal("states", "StartExecution", caller("stack-InterruptionFunction-abc"))
        assert refused is not None and refused.status == 503
    report = faults.to_json()["refuse"]
    assert [(r["remaining"], r["fired"]) for r in report] == [(0, 2), (-1, 3)]
    faults.replace({})
    assert faults.to_json()["refuse"] == [] and faults.to_json()["kill"] == []


def test_kill_rules_name_one_step_before_or_after_and_a_function() -> None:
    faults = Faults()
    faults.replace(
        {
            "kill": [
                {"function": "Provisioner", "after": "ec2:CreateFleet"},
                {"before": "k8s:POST /apis/nodewright.io/v1/nodeclaims$", "count": -1, "error": "gone"},
            ]
        }
    )
    assert faults.take_kill("stack-Provisioner-1", "before", "ec2:CreateFleet") is None
    assert faults.take_kill("stack-Planner-1", "after", "ec2:CreateFleet") is None
    rule = faults.take_kill("stack-Provisioner-1", "after", "EC2:CreateFleet")
    assert rule is not None and rule.remaining == 0
    assert faults.take_kill("stack-Provisioner-1", "after", "ec2:CreateFleet") is None  # count 1 by default
    post = "k8s:POST /apis/nodewright.io/v1/nodeclaims"
    assert faults.take_kill("any", "before", post + "/x/status") is None
    assert faults.take_kill("any", "before", "k8s:GET /apis/nodewright.io/v1/nodeclaims") is None
    for _ in range(2):
        killed = faults.take_kill("any", "before", post)
        assert killed is not None and killed.error == "gone"
    assert faults.to_json()["kill"][0] == {
        "function": "Provisioner",
        "after": "ec2:CreateFleet",
        "error": "",
        "remaining": 0,
        "fired": 1,
    }
    for bad in (
        {"kill": [{"function": "x"}]},
        {"kill": [{"before": "ec2:RunInstances", "after": "ec2:CreateFleet"}]},
        {"kill": [{"before": "CreateFleet"}]},
        {"kill": [{"before": "k8s:POST ("}]},
        {"refuse": [{"action": "dynamodb:PutItem"}]},
        {"refuse": [{"action": "dynamodb:PutItem", "code": "X", "count": -2}]},
    ):
        with pytest.raises((ValueError, re.error)):
            faults.replace(bad)


@pytest.mark.parametrize(
    ("service", "operation", "protocol"),
    [
        ("dynamodb", "put_item", "json"),
        ("ec2", "describe_instances", "query"),
        ("sts", "get_caller_identity", "query"),
        ("lambda", "list_functions", "rest"),
    ],
)
def test_refusal_bodies_parse_as_the_error_botocore_raises(service: str, operation: str, protocol: str) -> None:
    import botocore.session
    from botocore.awsrequest import HeadersDict
    from botocore.parsers import create_parser

    model = botocore.session.get_session().get_service_model(service)
    headers, body = error_response(protocol, service, "ProvisionedThroughputExceededException", "slow down")
    parsed = create_parser(model.metadata["protocol"]).parse(
        # As on the wire, header names are case-insensitive.
        {"status_code": 400, "headers": HeadersDict(headers), "body": body},
        model.operation_model(_operation(model, operation)).output_shape,  # type: ignore[arg-type]
    )
    assert parsed["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert parsed["Error"]["Message"] == "slow down"


def _operation(model: Any, snake: str) -> str:
    from botocore import xform_name

    return str(next(name for name in model.operation_names if xform_name(name) == snake))


def test_a_killed_invocation_stops_before_the_call_and_every_later_one_in_any_thread() -> None:
    from concurrent.futures import ThreadPoolExecutor

    import boto3
    from botocore.stub import Stubber

    from nodewright.adapters.apiserver import ApiServer
    from nodewright.localworld.lambda_seam import install_step_hooks, running

    install_step_hooks()
    dynamodb = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
    faults = Faults()
    faults.replace({"kill": [{"function": "Provisioner", "before": "dynamodb:PutItem"}]})
    with Stubber(dynamodb) as stub:
        stub.add_response("get_item", {})
        with running("stack-Planner", faults):  # another function's calls go through
            dynamodb.get_item(TableName="t", Key={"pk": {"S": "a"}})
        with running("stack-Provisioner-1", faults), pytest.raises(InvocationKilled) as killed:
            dynamodb.put_item(TableName="t", Item={"pk": {"S": "a"}})
        assert killed.value.step == "dynamodb:PutItem" and killed.value.phase == "before"
        stub.assert_no_pending_responses()  # PutItem was never sent

    faults.replace({"kill": [{"function": "Provisioner", "after": "k8s:GET /api/v1/nodes"}]})
    api = ApiServer("https://127.0.0.1:1", None, lambda: "token", 1)
    with running("stack-Provisioner-1", faults) as invocation:
        with ThreadPoolExecutor(max_workers=1) as pool:
            # A handler's worker thread belongs to its invocation; the kill is raised there and surfaces in the handler.
            future = pool.submit(invocation.step, "after", "k8s:GET /api/v1/nodes")
            with pytest.raises(InvocationKilled):
                future.result()
        # The container is dead: the next request never leaves, whatever it is.
        with pytest.raises(InvocationKilled):
            api.request("GET", "/api/v1/namespaces")
    assert faults.to_json()["kill"][0]["fired"] == 1


def test_work_chained_through_done_callbacks_still_belongs_to_the_invocation() -> None:
    from concurrent.futures import Future, ThreadPoolExecutor

    from nodewright.localworld.lambda_seam import current, install_step_hooks, running

    install_step_hooks()
    seen: list[str] = []
    chained: Future[None] = Future()
    with running("stack-Provisioner-1", Faults()), ThreadPoolExecutor(2) as first, ThreadPoolExecutor(2) as second:

        def launch() -> None:
            invocation = current()
            seen.append(invocation.function if invocation else "")

        def created(_: Future[None]) -> None:
            # As the provisioner's pipeline does: a claim created in one pool launches in another.
            second.submit(launch).add_done_callback(lambda _: chained.set_result(None))

        first.submit(lambda: None).add_done_callback(created)
        chained.result(timeout=5)
    assert seen == ["stack-Provisioner-1"]


def test_a_watch_is_its_own_step_and_a_kill_after_a_line_stops_the_container_mid_stream() -> None:
    from nodewright.adapters.apiserver import ApiServer
    from nodewright.localworld.lambda_seam import install_step_hooks, running

    sent: list[str] = []

    class Body:
        """A watch's response as urllib3 hands it over: three event lines, each read counted."""

        status = 200

        def __init__(self, path: str) -> None:
            self.path = path

        def stream(self, size: int, decode_content: bool) -> Iterator[bytes]:
            for n in range(3):
                sent.append(f"{self.path}#{n}")
                yield f'{{"type":"ADDED","n":{n}}}\n'.encode()

        def close(self) -> None: ...

        def release_conn(self) -> None: ...

    class Pool:
        def request(self, method: str, url: str, **kwargs: Any) -> Body:
            return Body(url.removeprefix("https://127.0.0.1:1").partition("?")[0])

    install_step_hooks()
    api = ApiServer("https://127.0.0.1:1", None, lambda: "token", 1)
    api._pool = Pool()  # type: ignore[assignment]  # the socket only; the stream and its hook are real
    faults = Faults()
    # A rule on the list's GET does not fire on a watch of the same path.
    faults.replace({"kill": [{"function": "Planner", "after": "k8s:GET /api/v1/nodes"}]})
    with running("stack-Planner", faults):
        assert len(list(api.stream("/api/v1/nodes", [("watch", "1")], {}))) == 3
    assert faults.to_json()["kill"][0]["fired"] == 0

    sent.clear()
    faults.replace({"kill": [{"function": "Planner", "after": "k8s:WATCH /api/v1/nodes$"}]})
    lines: list[bytes] = []
    with running("stack-Planner", faults), pytest.raises(InvocationKilled) as killed:
        for line in api.stream("/api/v1/nodes", [("watch", "1")], {}):
            lines.append(line)
    # The first line arrived and killed the container before the handler saw it; nothing more was read.
    assert killed.value.step == "k8s:WATCH /api/v1/nodes" and lines == []
    assert sent == ["/api/v1/nodes#0"]

    faults.replace({"kill": [{"function": "Planner", "before": "k8s:WATCH /apis/"}]})
    sent.clear()
    with running("stack-Planner", faults), pytest.raises(InvocationKilled):
        next(api.stream("/apis/karpenter.sh/v1/nodeclaims", [("watch", "1")], {}))
    assert sent == []
