"""Comparing Kubernetes resourceVersions, where the API server makes that meaningful.

resourceVersions are opaque to clients in general; the API server's are etcd revisions, decimal integers that
grow with every write in the cluster, so one object's or list's version at or past another's says it was read
no earlier. Anything that is not such an integer proves nothing.
"""

from __future__ import annotations


def reached(resource_version: str, target: str) -> bool:
    """Whether `resource_version` is at or past `target`; False when either is not a decimal integer."""
    if not (resource_version.isdigit() and target.isdigit()):
        return False
    return int(resource_version) >= int(target)
