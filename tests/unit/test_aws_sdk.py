"""The Lambdas' small botocore data directory: what it keeps, and that our code calls nothing it dropped."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from botocore.exceptions import UnknownServiceError
from botocore.loaders import Loader

from nodewright.adapters import aws_sdk

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "layers" / "core" / "python" / "nodewright" / "adapters"


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return aws_sdk.write_models(tmp_path_factory.mktemp("aws-models"))


@pytest.fixture
def session(models: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.setenv(aws_sdk.MODELS_ENV, str(models))
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    return aws_sdk.session("us-east-1")


def test_trim_keeps_the_operations_and_every_shape_they_reach() -> None:
    full = Loader().load_service_model("ec2", "service-2")
    trimmed = aws_sdk.trim(full, frozenset({"CreateFleet", "TerminateInstances"}))

    assert set(trimmed["operations"]) == {"CreateFleet", "TerminateInstances"}
    referenced = set(aws_sdk._shape_references([trimmed["operations"], trimmed["shapes"]]))
    assert referenced <= set(trimmed["shapes"])  # closed: nothing points outside the copy
    overrides = "FleetLaunchTemplateOverridesRequest"  # reached through CreateFleet's request, four levels down
    assert trimmed["shapes"][overrides] == aws_sdk._undocumented(full["shapes"][overrides])
    assert len(trimmed["shapes"]) < len(full["shapes"]) / 5
    assert "documentation" not in json.dumps(trimmed["operations"])


def test_trim_names_an_operation_the_model_does_not_have() -> None:
    full = Loader().load_service_model("ssm", "service-2")
    with pytest.raises(KeyError, match="GetParamter"):
        aws_sdk.trim(full, frozenset({"GetParamter"}))


def test_a_session_on_the_directory_knows_only_our_services_and_operations(session: object) -> None:
    ec2 = session.client("ec2")  # type: ignore[attr-defined]
    assert set(ec2.meta.service_model.operation_names) == aws_sdk.SERVICES["ec2"]
    assert ec2.meta.endpoint_url == "https://ec2.us-east-1.amazonaws.com"
    assert ec2.can_paginate("describe_instances")
    for service in aws_sdk.SERVICES:
        session.client(service)  # type: ignore[attr-defined]
    with pytest.raises(UnknownServiceError):
        session.client("cloudwatch")  # type: ignore[attr-defined]


def test_endpoints_keep_every_partition_with_only_our_services(models: Path) -> None:
    endpoints = json.loads((models / "endpoints.json").read_text())
    partitions = {p["partition"]: set(p["services"]) for p in endpoints["partitions"]}
    assert {"aws", "aws-cn", "aws-us-gov"} <= set(partitions)
    assert partitions["aws"] == {"ec2", "ssm", "eks", "sts", "dynamodb", "api.pricing", "states", "iam", "lambda"}


def test_without_the_variable_a_session_reads_botocore_as_usual(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(aws_sdk.MODELS_ENV, raising=False)
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    assert len(aws_sdk.session("us-east-1").client("ec2").meta.service_model.operation_names) > 500


def _called_methods() -> dict[str, set[str]]:
    """Client method names our adapters and handlers call, per service, found by the attribute names the
    clients are kept under (`self.ec2`, `self._pricing`, ...); operation names passed to `get_paginator`
    through a variable appear as string literals ("describe_subnets") in the EC2 adapters."""
    receivers = {"ec2": "ec2", "ssm": "ssm", "eks": "eks", "dynamodb": "dynamodb", "pricing": "pricing", "iam": "iam"}
    called: dict[str, set[str]] = {}
    sources = [*ADAPTERS.glob("*.py"), *(ROOT / "functions").glob("*/handler.py")]
    for source in sources:
        text = source.read_text()
        for receiver, method in re.findall(r"\b_?(ec2|ssm|eks|dynamodb|pricing|iam)(?:\(\))?\.([a-z_]+)\(", text):
            called.setdefault(receivers[receiver], set()).add(method)
        for receiver, method in re.findall(r"\b_?(ec2|pricing)\.get_paginator\(\s*\"([a-z_]+)\"", text):
            called.setdefault(receivers[receiver], set()).add(method)
        if source.name.startswith("ec2_"):
            called.setdefault("ec2", set()).update(re.findall(r"\"(describe_[a-z_]+)\"", text))
    return called


def test_every_operation_our_code_calls_is_kept(session: object) -> None:
    called = _called_methods()
    assert {"create_fleet", "describe_instances", "describe_cluster", "put_item"} <= set().union(*called.values())
    assert {"get_instance_profile", "create_instance_profile", "add_role_to_instance_profile"} <= called["iam"]
    for service, methods in called.items():
        client = session.client(service)  # type: ignore[attr-defined]
        missing = {m for m in methods if m != "get_paginator" and not hasattr(client, m)}
        assert not missing, f"add the operations behind {sorted(missing)} to aws_sdk.SERVICES[{service!r}]"


def test_every_service_our_code_creates_a_client_for_is_kept() -> None:
    sources = [*ADAPTERS.glob("*.py"), *(ROOT / "functions").glob("*/handler.py")]
    services = {s for f in sources for s in re.findall(r"client\(\s*\"([a-z0-9-]+)\"", f.read_text())}
    assert services and services <= set(aws_sdk.SERVICES), services - set(aws_sdk.SERVICES)


def test_doc_strings_go_but_a_member_called_documentation_stays() -> None:
    shape = {"type": "structure", "documentation": "<p>text</p>", "members": {"documentation": {"shape": "S"}}}
    assert aws_sdk._undocumented(shape) == {"type": "structure", "members": {"documentation": {"shape": "S"}}}
