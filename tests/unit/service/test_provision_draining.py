"""A drain held back by a PodDisruptionBudget: its pods keep the room launched for them, batch after batch."""

from __future__ import annotations

from service_fakes import FakeCloud, FixedClock, SmallCatalog, node_for, pod
from test_provision_reads import bound, node
from test_provision_service import actions, batch_of, world

from nodewright.adapters.memory import InMemoryCluster, InMemoryState
from nodewright.service.batch import Batch
from nodewright.service.provision import provision

CATALOG = SmallCatalog()
DISRUPTED = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}


def draining_world() -> tuple[InMemoryCluster, FakeCloud, InMemoryState, FixedClock, str]:
    """A node being drained (tainted by its workflow) with three pods, and the replacement its workflow launched,
    registered and initialized."""
    old = node("old", "us-east-1a", cpu="8")
    old["spec"] = {"taints": [DISRUPTED]}
    cluster, cloud, state, clock = world(old, *(bound(f"db-{i}", "old", {"app": "db"}, cpu="2") for i in range(3)))
    replacement = provision(
        Batch("replace-exec-1", "demo", []), cluster, cloud, state, clock, CATALOG, displaced_nodes=["old"]
    )
    [claim] = replacement.launched
    assert sorted(claim.pods) == ["web/db-0", "web/db-1", "web/db-2"]
    cluster.put(node_for(cloud.instances[claim.instance_id], "replacement"))
    # The forwarder's registration payload: the replacement registers (and is initialized) now.
    registration = provision(Batch("nodes", "demo", []), cluster, cloud, state, clock, CATALOG)
    assert [d.subject for d in actions(registration, "registered")] == [f"nodeclaim/{claim.name}"]
    return cluster, cloud, state, clock, claim.name


def pending_batch(cluster: InMemoryCluster, clock: FixedClock, name: str) -> Batch:
    cluster.put(pod(name, cpu="1"))
    return batch_of(cluster, f"batch-{name}")


def test_a_pdb_blocked_drain_never_launches_again_for_its_pods_however_many_batches_come() -> None:
    """Issue 21 item 9: 3 extra NodeClaims in 25 minutes for the same 3 pods."""
    cluster, cloud, state, clock, replacement = draining_world()
    launched_for: list[str] = []
    for minute in range(0, 25, 5):
        clock.t += 300  # the replacement registered long ago: past the nomination grace period
        result = provision(pending_batch(cluster, clock, f"web-{minute}"), cluster, cloud, state, clock, CATALOG)
        launched_for += [p for c in result.launched for p in c.pods]
        assert result.waiting == {f"web/db-{i}": replacement for i in range(3)}
        # The batch's own pod is planned as ever (here: on the replacement's spare room).
        placed = {d.subject for d in actions(result, "existing")} | {
            f"pod/{p}" for c in result.launched for p in c.pods
        }
        assert f"pod/web/web-{minute}" in placed
    # The draining node's pods never got capacity again.
    assert not [p for p in launched_for if p.startswith("web/db-")]


def test_the_room_on_the_replacement_is_theirs_only_while_it_is_still_free() -> None:
    cluster, cloud, state, clock, _ = draining_world()
    clock.t += 600
    # The kube-scheduler filled the replacement with other pods meanwhile: the draining pods need room elsewhere.
    filler = bound("filler", "replacement", {"app": "filler"}, cpu="15")
    cluster.put(filler)
    result = provision(pending_batch(cluster, clock, "web-0"), cluster, cloud, state, clock, CATALOG)
    assert sorted(p for c in result.launched for p in c.pods if p.startswith("web/db-")) == [
        "web/db-0",
        "web/db-1",
        "web/db-2",
    ]
    assert not result.waiting


def test_a_waiting_pod_says_which_nodeclaim_keeps_its_room() -> None:
    cluster, cloud, state, clock, replacement = draining_world()
    clock.t += 600
    result = provision(pending_batch(cluster, clock, "web-0"), cluster, cloud, state, clock, CATALOG)
    reasons = {d.subject: d.reason for d in actions(result, "waiting")}
    assert "keeps room for it while its node drains" in reasons["pod/web/db-0"]
    assert result.to_json()["waiting"]["web/db-0"] == replacement
