"""Which IAM roles an EC2NodeClass may name: the stack's node role and those its `nodeRoles` context lists.

The provisioner may pass only those roles to EC2 (its iam:PassRole covers nothing else), so an EC2NodeClass
naming another role can never launch. `validate` says so before the class is applied, and the provisioner
refuses the class with the same words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nodewright.model.errors import ValidationError
from nodewright.model.nodeclass import EC2NodeClass


def role_name(role: str) -> str:
    """A role's name: `spec.role` may be a name or an ARN (`arn:aws:iam::<account>:role/<path>/<name>`)."""
    return role.rsplit("/", 1)[-1]


def role_refusal(role: str, allowed: Sequence[str]) -> str:
    """Why `role` cannot be used, and how to fix it."""
    return (
        f"role {role} is not a node role nodewright may pass to EC2 ({', '.join(allowed)}): name one of them, or "
        f"add {role_name(role)} to the stack's nodeRoles context (npx cdk deploy -c nodeRoles=...) and deploy"
    )


def allowed(role: str, roles: Iterable[str]) -> bool:
    """True when `role` (name or ARN) is one of `roles` (names or ARNs)."""
    return role_name(role) in {role_name(r) for r in roles}


def role_errors(
    nodeclasses: Iterable[EC2NodeClass], roles: Sequence[str], source_of: dict[str, str]
) -> list[ValidationError]:
    """A `spec.role` error for each class whose role is not one of `roles` (`source_of`: class name -> file)."""
    return [
        ValidationError(source_of.get(c.name, ""), "EC2NodeClass", c.name, "spec.role", role_refusal(c.role, roles))
        for c in nodeclasses
        if c.role and not allowed(c.role, roles)
    ]
