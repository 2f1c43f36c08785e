"""Launch templates that no NodeClaim needs any more, and their garbage collection.

Launch templates are named by their content hash; each launched NodeClaim names its template
(`nodewright.io/launch-template`). Templates of this cluster that no NodeClaim names and that are over an hour
old are deleted, off the launch path (with registrations, which follow launches), so new AMIs and changed
settings do not leave templates behind.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from nodewright.ports import LaunchTemplateRecord, LaunchTemplateStore
from nodewright.service.provision.nodeclaim import TEMPLATE_ANNOTATION
from nodewright.service.provision.result import ProvisionResult

# A launch template no NodeClaim names is deleted once it is this old: younger ones may be serving a launch
# in flight, or sit in a warm container's template cache (which keeps names for less than this).
TEMPLATE_MIN_AGE_SECONDS = 3600


def stale_launch_templates(
    templates: Sequence[LaunchTemplateRecord],
    nodeclaim_documents: Sequence[Mapping[str, Any]],
    node_classes: Collection[str],
    now: float,
    min_age: float = TEMPLATE_MIN_AGE_SECONDS,
) -> list[tuple[str, str]]:
    """The templates to delete, each with the reason: older than `min_age` and named by no NodeClaim.

    A template's name is its content hash, so a template that the current EC2NodeClasses and NodePools still
    produce is simply created again (one API call) the next time a claim needs it; one that no claim names
    and nobody has needed for `min_age` is most likely outdated (a new AMI, changed user data or settings,
    a deleted EC2NodeClass). Karpenter drops its cached templates on a similar idle timer.
    """
    in_use = {
        str(((doc.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_ANNOTATION, ""))
        for doc in nodeclaim_documents
    }
    out = []
    for template in sorted(templates, key=lambda t: t.name):
        age = now - template.created_at
        if template.name in in_use or age < min_age:
            continue
        why = f"named by no NodeClaim and created {int(age // 60)} minutes ago"
        if template.node_class and template.node_class not in node_classes:
            why += f"; its EC2NodeClass {template.node_class} no longer exists"
        out.append((template.name, why))
    return out


def collect_launch_templates(
    documents: Sequence[Mapping[str, Any]],
    store: LaunchTemplateStore,
    now: float,
    result: ProvisionResult,
    min_age: float = TEMPLATE_MIN_AGE_SECONDS,
) -> None:
    """Delete the stale launch templates (see `stale_launch_templates`), each with a `deleted` decision."""
    claims = [d for d in documents if d.get("kind") == "NodeClaim"]
    node_classes = {
        str((d.get("metadata") or {}).get("name", "")) for d in documents if d.get("kind") == "EC2NodeClass"
    }
    for name, why in stale_launch_templates(store.launch_templates(), claims, node_classes, now, min_age):
        store.delete_launch_template(name)
        result.decide("deleted", f"launchtemplate/{name}", why)
