"""The forwarder's AWS identity follows the chart's namespace and ServiceAccount (`namespace` / `serviceAccount`
context values): the Pod Identity association, its trust conditions and the IRSA trust all name them, so the
chart can be installed into any namespace (kube-system, as Karpenter's usually is)."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_cdk.assertions import Template
from conftest import CLUSTER, Synth, synth
from test_template import logical_id

from infra.config import ContextError, Settings

ISSUER = "oidc.eks.us-east-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF"


@pytest.fixture(scope="module")
def in_kube_system(synth_root: Path) -> Synth:
    return synth(
        synth_root,
        clusterName=CLUSTER,
        namespace="kube-system",
        serviceAccount="nodewright",
        oidcIssuer=f"https://{ISSUER}",
    )


def test_defaults_are_the_names_release_nodewright_creates() -> None:
    settings = Settings.from_context({"clusterName": "c"}.get)
    assert (settings.namespace, settings.service_account) == ("nodewright", "nodewright-forwarder")


def test_pod_identity_and_irsa_name_the_namespace_and_service_account_from_context(in_kube_system: Synth) -> None:
    role = logical_id(in_kube_system, "AWS::IAM::Role", "ForwarderRole")
    Template.from_json(in_kube_system.template).has_resource_properties(
        "AWS::EKS::PodIdentityAssociation",
        {
            "ClusterName": CLUSTER,
            "Namespace": "kube-system",
            "ServiceAccount": "nodewright",
            "RoleArn": {"Fn::GetAtt": [role, "Arn"]},
        },
    )
    trust = in_kube_system.template["Resources"][role]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    [pod_identity] = [st for st in trust if st.get("Principal") == {"Service": "pods.eks.amazonaws.com"}]
    assert pod_identity["Condition"]["StringEquals"] == {
        "aws:RequestTag/eks-cluster-name": CLUSTER,
        "aws:RequestTag/kubernetes-namespace": "kube-system",
        "aws:RequestTag/kubernetes-service-account": "nodewright",
    }
    [irsa] = [st for st in trust if "Federated" in st.get("Principal", {})]
    assert irsa["Condition"]["StringEquals"][f"{ISSUER}:sub"] == "system:serviceaccount:kube-system:nodewright"


@pytest.mark.parametrize(
    ("context", "named"),
    [
        ({"namespace": "Kube_System"}, "namespace"),
        ({"namespace": "-bad"}, "namespace"),
        ({"serviceAccount": "Forwarder"}, "serviceAccount"),
        ({"serviceAccount": "a" * 254}, "serviceAccount"),
    ],
)
def test_a_name_kubernetes_would_refuse_is_refused_by_its_key(context: dict[str, str], named: str) -> None:
    with pytest.raises(ContextError) as caught:
        Settings.from_context({"clusterName": "c", **context}.get)
    assert f"context value {named}=" in str(caught.value) and f"-c {named}=" in str(caught.value)
