"""A launch nobody recorded, adopted by its NodeClaim.

A provisioner that dies between CreateFleet and recording the instance on the NodeClaim leaves a healthy instance
tagged with the claim's name and a claim with no providerID. Terminating the instance and deleting the claim (what
the launch time-out used to do) throws the launch away and plans its pods again: a second instance for the same
pods. Instead the claim records the instance as if the launch had been recorded (Karpenter's NodeClaim keeps the
instance its providerID names; garbage collection by providerID then removes any other instance tagged for it).
"""

from __future__ import annotations

from nodewright import tags
from nodewright.ports import Cluster, Instance
from nodewright.service.provision.nodeclaim import record_launch
from nodewright.service.provision.result import LaunchedClaim

ADOPTABLE_STATES = frozenset({"pending", "running"})


def adopt_instance(cluster: Cluster, nodeclaim: str, instance: Instance) -> LaunchedClaim:
    """Record `instance` as `nodeclaim`'s launch (providerID, labels, Launched); returns it as a launch. The price
    is not known here and is written as 0."""
    launched = LaunchedClaim(
        nodeclaim,
        instance.tags.get(tags.NODEPOOL, ""),
        instance.id,
        instance.instance_type,
        instance.zone,
        instance.capacity_type,
        0.0,
        (),
        reused=True,
    )
    record_launch(cluster, launched, instance.image_id)
    return launched
