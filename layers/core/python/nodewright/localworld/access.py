"""EKS access entries for the local world's token webhook: each function's role gets the Kubernetes groups its
access entry names, so the chart's RBAC is what authorizes it, as in EKS.

moto's CloudFormation does not create `AWS::EKS::AccessEntry` resources (it skips types it does not know), so
after a stack is deployed the world reads the entries from the template it deployed, resolves each
principal (`Fn::GetAtt [<role>, Arn]`) through the stack's resources, and puts a mapping per entry in front
of the webhook's configuration, which the webhook reads on every review. The user name is what EKS gives a
role's STANDARD entry: `arn:aws:sts::<account>:assumed-role/<role>/{{SessionName}}`. EC2_LINUX entries (the
node role) are not mapped: the registrar, which plays the kubelets, writes nodes with the world's own
credentials.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ACCESS_ENTRY = "AWS::EKS::AccessEntry"


@dataclass(frozen=True, slots=True)
class AccessEntry:
    """One STANDARD access entry: the role it admits and the groups it puts that role in."""

    role_arn: str
    groups: tuple[str, ...]

    def mapping(self) -> dict[str, Any]:
        """The webhook mapping for this entry (aws-iam-authenticator's shape)."""
        account, role = self.role_arn.split(":")[4], self.role_arn.rsplit("/", 1)[-1]
        return {
            "arn": self.role_arn,
            "username": f"arn:aws:sts::{account}:assumed-role/{role}/{{{{SessionName}}}}",
            "groups": list(self.groups),
        }


def access_entries(template: Mapping[str, Any], role_names: Mapping[str, str], account: str) -> list[AccessEntry]:
    """The STANDARD access entries of a template; `role_names` maps a role's logical id to its deployed name."""
    entries = []
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") != ACCESS_ENTRY:
            continue
        props = resource.get("Properties", {})
        if props.get("Type", "STANDARD") != "STANDARD":
            continue
        principal = props["PrincipalArn"]
        if isinstance(principal, dict):
            name = role_names[principal["Fn::GetAtt"][0]]
            principal = f"arn:aws:iam::{account}:role/{name}"
        entries.append(AccessEntry(str(principal), tuple(props.get("KubernetesGroups", ()))))
    return entries


def add_mappings(config_path: Path, entries: Sequence[AccessEntry]) -> None:
    """Put the entries' mappings in front of the webhook configuration (first match wins), replacing older
    mappings of the same roles; written atomically, since the webhook reads the file on every review."""
    config = json.loads(config_path.read_text())
    arns = {e.role_arn for e in entries}
    kept = [m for m in config.get("mappings", []) if m.get("arn") not in arns]
    config["mappings"] = [e.mapping() for e in entries] + kept
    staging = config_path.with_name(f".{config_path.name}.{os.getpid()}")
    staging.write_text(json.dumps(config, indent=2))
    staging.replace(config_path)


def record_stack(config_path: Path, template_path: Path, stack: str, cfn: Any, account: str) -> list[AccessEntry]:
    """Map the access entries of the deployed `stack` (template from cdk.out) in the webhook's configuration."""
    template = json.loads(template_path.read_text())
    resources = cfn.describe_stack_resources(StackName=stack)["StackResources"]
    roles = {
        str(r["LogicalResourceId"]): str(r["PhysicalResourceId"])
        for r in resources
        if r.get("ResourceType") == "AWS::IAM::Role"
    }
    entries = access_entries(template, roles, account)
    add_mappings(config_path, entries)
    return entries
