"""Lambdas authenticate to the local API server with real EKS tokens, through the token webhook."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

import pytest
from worldkit import World

from nodewright.adapters.eks_token import EksTokenSource


def test_a_handler_reaches_the_api_server_as_its_execution_role(local_world: World) -> None:
    world = local_world
    world.create_function("whoami", "whoami", environment={"NODEWRIGHT_CLUSTER": world.state.cluster})
    response = world.aws("lambda").invoke(FunctionName="whoami", Payload=b"{}")
    payload = json.loads(response["Payload"].read())
    assert "FunctionError" not in response, payload
    # The webhook mapped the role session (role fn-whoami, session = function name) to a user.
    assert payload["username"] == "nodewright:whoami"
    assert "system:masters" in payload["groups"]
    assert "system:authenticated" in payload["groups"]


def test_a_token_of_an_unmapped_identity_is_refused(local_world: World) -> None:
    world = local_world
    # moto's default credentials are an IAM user, not a role: no mapping admits it.
    token = EksTokenSource(world.state.cluster, sts_client=world.aws("sts")).token()
    request = urllib.request.Request(
        f"{world.state.api_server}/api/v1/namespaces", headers={"Authorization": f"Bearer {token}"}
    )
    context = ssl.create_default_context(cafile=world.state.ca_file)
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, context=context, timeout=10)
    assert caught.value.code == 401


def test_a_token_signed_for_another_cluster_is_refused(local_world: World) -> None:
    world = local_world
    role = world.aws("iam").create_role(RoleName="fn-elsewhere", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    # The same role is admitted with a token for this cluster and refused with one for another.
    assert world.api_status(world.role_token(role), "GET", "/api/v1/namespaces") == 200
    assert world.api_status(world.role_token(role, "some-other-cluster"), "GET", "/api/v1/namespaces") == 401


def test_a_role_no_access_entry_or_test_names_is_refused(local_world: World) -> None:
    # In EKS a role without an access entry gets nothing; the world's webhook admits only mapped roles.
    world = local_world
    role = world.aws("iam").create_role(RoleName="unmapped-role", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    assert world.api_status(world.role_token(role), "GET", "/api/v1/namespaces") == 401
