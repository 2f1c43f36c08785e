"""Test handler: reaches the cluster's API server the way nodewright's Lambdas do in AWS.

Endpoint and CA come from EKS DescribeCluster, the credential is an EKS token from the product's
own adapter; nothing here knows it runs in the local world.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
import urllib.request
from typing import Any

import boto3

from nodewright.adapters.eks_token import EksTokenSource


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    cluster_name = os.environ["NODEWRIGHT_CLUSTER"]
    cluster = boto3.client("eks").describe_cluster(name=cluster_name)["cluster"]
    with tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False) as ca:
        ca.write(base64.b64decode(cluster["certificateAuthority"]["data"]))
    tls = ssl.create_default_context(cafile=ca.name)
    token = EksTokenSource(cluster_name).token()
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    request = urllib.request.Request(
        f"{cluster['endpoint']}/apis/authentication.k8s.io/v1/selfsubjectreviews",
        data=json.dumps(review).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, context=tls, timeout=10) as response:
        user = json.loads(response.read())["status"]["userInfo"]
    os.unlink(ca.name)
    return {"username": user["username"], "groups": user.get("groups", [])}
