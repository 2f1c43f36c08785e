"""Access entries from a deployed template become the token webhook's mappings, in front of the defaults."""

from __future__ import annotations

import json
from pathlib import Path

from nodewright.localworld.access import AccessEntry, access_entries, add_mappings
from nodewright.localworld.tokenwebhook import Identity, map_identity
from nodewright.localworld.world import webhook_config

TEMPLATE = {
    "Resources": {
        "ProvisionerRole": {"Type": "AWS::IAM::Role"},
        "ProvisionerAccessEntry": {
            "Type": "AWS::EKS::AccessEntry",
            "Properties": {
                "ClusterName": "demo",
                "PrincipalArn": {"Fn::GetAtt": ["ProvisionerRole", "Arn"]},
                "Type": "STANDARD",
                "KubernetesGroups": ["nodewright:provisioner"],
            },
        },
        "NodesAccessEntry": {
            "Type": "AWS::EKS::AccessEntry",
            "Properties": {"PrincipalArn": {"Fn::GetAtt": ["NodesRole", "Arn"]}, "Type": "EC2_LINUX"},
        },
    }
}


def test_standard_entries_become_mappings_with_eks_user_names(tmp_path: Path) -> None:
    entries = access_entries(TEMPLATE, {"ProvisionerRole": "Nodewright-ProvisionerRole-ABC"}, "123456789012")
    assert entries == [
        AccessEntry("arn:aws:iam::123456789012:role/Nodewright-ProvisionerRole-ABC", ("nodewright:provisioner",))
    ]
    config = tmp_path / "webhook.json"
    config.write_text(json.dumps(webhook_config("demo", "http://127.0.0.1:1")))
    add_mappings(config, entries)
    add_mappings(config, entries)  # a redeploy replaces, never duplicates
    mappings = json.loads(config.read_text())["mappings"]
    assert len(mappings) == 2
    session = "arn:aws:sts::123456789012:assumed-role/Nodewright-ProvisionerRole-ABC/Nodewright-Provisioner"
    user = map_identity(Identity(session, "123456789012", "AROA"), mappings)
    assert user.groups == ("nodewright:provisioner",)
    assert user.username == session
    # A test's own function role is still an admin; nothing else is mapped.
    tester = map_identity(Identity("arn:aws:sts::123456789012:assumed-role/fn-whoami/whoami", "1", "A"), mappings)
    assert tester.groups == ("system:masters",)
