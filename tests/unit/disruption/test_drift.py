"""Drift: each of Karpenter's reasons, in its order, and hash versions that re-stamp instead of rolling."""

from __future__ import annotations

from dataclasses import replace

from cluster_builder import Cluster
from hypothesis import given
from hypothesis import strategies as st

from nodewright.disruption.drift import (
    AMI_DRIFT,
    INSTANCE_TYPE_NOT_FOUND,
    NODECLASS_DRIFT,
    NODECLASS_HASH_VERSION,
    NODEPOOL_DRIFTED,
    NODEPOOL_HASH,
    NODEPOOL_HASH_VERSION,
    POOL_HASH_VERSION,
    REQUIREMENTS_DRIFTED,
    SECURITY_GROUP_DRIFT,
    SUBNET_DRIFT,
    ClassFacts,
    InstanceFacts,
    drift_reason,
    nodepool_hash,
    restamps,
)
from nodewright.model.nodepool import NodeClassRef, NodePool
from nodewright.model.taints import Taint

FACTS = ClassFacts({("amd64", "standard"): "ami-current"}, frozenset({"subnet-a", "subnet-b"}), frozenset({"sg-1"}))
LAUNCHED = InstanceFacts("ami-current", "subnet-a", frozenset({"sg-1"}))


def reason(cluster: Cluster, facts: ClassFacts | None = FACTS, instance: InstanceFacts | None = LAUNCHED) -> str:
    state = cluster.state()
    [member] = state.fleet
    pool = state.pools[member.nodepool]
    return drift_reason(member, pool, state.inputs.nodeclass("default"), state.instance_type(member), facts, instance)


def test_a_node_launched_as_its_pool_and_class_say_has_not_drifted() -> None:
    cluster = Cluster()
    cluster.node("a")
    assert reason(cluster) == ""


def test_a_changed_template_label_is_nodepool_drift_but_a_changed_requirement_is_not() -> None:
    cluster = Cluster()
    cluster.node("a")
    cluster.find("NodePool", "general")["spec"]["template"]["metadata"]["labels"]["team"] = "payments"
    assert reason(cluster) == NODEPOOL_DRIFTED
    relabelled = Cluster()
    relabelled.node("a")
    requirements = relabelled.find("NodePool", "general")["spec"]["template"]["spec"]["requirements"]
    requirements.append({"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5", "c5"]})
    assert reason(relabelled) == ""  # requirements are not hashed, and an m5 still satisfies them


def test_labels_that_no_longer_satisfy_the_requirements_are_requirements_drift() -> None:
    cluster = Cluster()
    cluster.node("a", "m5.xlarge")
    requirements = cluster.find("NodePool", "general")["spec"]["template"]["spec"]["requirements"]
    requirements.append({"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn", "values": ["m5"]})
    assert reason(cluster) == REQUIREMENTS_DRIFTED
    custom = Cluster()
    custom.node("a")
    custom.find("NodePool", "general")["spec"]["template"]["spec"]["requirements"].append(
        {"key": "example.com/rack", "operator": "Exists"}
    )
    assert reason(custom) == REQUIREMENTS_DRIFTED  # a required label the node lacks


def test_a_changed_class_spec_is_nodeclass_drift_but_selector_terms_are_checked_through_the_cloud() -> None:
    cluster = Cluster()
    cluster.node("a")
    cluster.find("EC2NodeClass", "default")["spec"]["tags"] = {"cost-center": "42"}
    assert reason(cluster) == NODECLASS_DRIFT
    reselected = Cluster()
    reselected.node("a")
    reselected.find("EC2NodeClass", "default")["spec"]["subnetSelectorTerms"] = [{"id": "subnet-b"}]
    assert reason(reselected) == ""  # the instance's subnet is still one the class selects


def test_the_cloud_facts_tell_ami_security_group_and_subnet_drift() -> None:
    cluster = Cluster()
    cluster.node("a")
    moved = replace(FACTS, images={("amd64", "standard"): "ami-newer"})
    assert reason(cluster, moved) == AMI_DRIFT
    assert reason(cluster, replace(FACTS, security_group_ids=frozenset({"sg-1", "sg-2"}))) == SECURITY_GROUP_DRIFT
    assert reason(cluster, replace(FACTS, subnet_ids=frozenset({"subnet-b"}))) == SUBNET_DRIFT


def test_without_cloud_facts_the_condition_the_planner_wrote_stands() -> None:
    cluster = Cluster()
    cluster.node("a", conditions=[{"type": "Drifted", "status": "True", "reason": AMI_DRIFT}])
    assert reason(cluster, None, None) == AMI_DRIFT
    plain = Cluster()
    plain.node("b")
    assert reason(plain, None, None) == ""


def test_an_older_hash_version_is_re_stamped_not_drift() -> None:
    cluster = Cluster()
    cluster.node("a", claim_annotations={NODEPOOL_HASH: "0123", NODEPOOL_HASH_VERSION: "v0"})
    cluster.find("NodePool", "general")["spec"]["template"]["metadata"]["labels"]["team"] = "payments"
    assert reason(cluster) == ""
    state = cluster.state()
    [member] = state.fleet
    stamps = restamps(member, state.pools["general"], state.inputs.nodeclass("default"))
    assert stamps == {NODEPOOL_HASH: nodepool_hash(state.pools["general"]), NODEPOOL_HASH_VERSION: POOL_HASH_VERSION}
    assert NODECLASS_HASH_VERSION not in stamps  # the class stamp is current
    unstamped = Cluster()
    unstamped.node("b", stamped=False)
    unstamped.find("NodePool", "general")["spec"]["template"]["metadata"]["labels"]["team"] = "payments"
    assert reason(unstamped) == ""  # launched before stamping: nothing to compare


POOL = NodePool(name="p", node_class_ref=NodeClassRef("nodewright.io", "EC2NodeClass", "default"))
TAINTS = st.lists(
    st.builds(Taint, st.sampled_from(["a", "b", "c"]), st.sampled_from(["", "x"]), st.sampled_from(["NoSchedule"])),
    max_size=4,
    unique=True,
)


@given(TAINTS, st.randoms())
def test_the_pool_hash_ignores_order_and_moves_with_content(taints: list[Taint], rng: object) -> None:
    shuffled = list(taints)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    assert nodepool_hash(replace(POOL, taints=tuple(taints))) == nodepool_hash(replace(POOL, taints=tuple(shuffled)))
    extra = Taint("z", "", "NoExecute")
    assert nodepool_hash(replace(POOL, taints=(*taints, extra))) != nodepool_hash(replace(POOL, taints=tuple(taints)))
    # A requirement change is not a template change (Karpenter's hash:"ignore").
    assert nodepool_hash(replace(POOL, requirements=())) == nodepool_hash(POOL)


def test_an_instance_type_gone_from_the_catalog_is_drift_from_an_hour_after_creation() -> None:
    # Karpenter's InstanceTypeNotFound: the label missing, the type gone, or no offering in the node's zone and
    # capacity type; checked from an hour after creation, never against an empty catalog.
    def found(cluster: Cluster, age_now: float, names: frozenset[str] | None = None, **types: object) -> str:
        state = cluster.state()
        [member] = state.fleet
        catalog = frozenset(it.name for it in state.catalog) if names is None else names
        return drift_reason(
            member,
            state.pools[member.nodepool],
            state.inputs.nodeclass("default"),
            state.instance_type(member),
            FACTS,
            LAUNCHED,
            catalog=catalog,
            now=member.created_at + age_now,
        )

    cluster = Cluster()
    cluster.node("a", "m5.xlarge")
    assert found(cluster, 7200) == ""
    assert found(cluster, 7200, frozenset({"c5.large"})) == INSTANCE_TYPE_NOT_FOUND
    assert found(cluster, 1800, frozenset({"c5.large"})) == ""  # younger than an hour
    assert found(cluster, 7200, frozenset()) == ""  # no catalog: nothing known, nothing drifted
    unlabelled = Cluster()
    claim, node = unlabelled.node("a", "m5.xlarge")
    for doc in (claim, node):
        del doc["metadata"]["labels"]["node.kubernetes.io/instance-type"]
    assert found(unlabelled, 7200, frozenset({"m5.xlarge"})) == INSTANCE_TYPE_NOT_FOUND
    elsewhere = Cluster()
    elsewhere.node("a", "m5.xlarge", zone="us-east-1d")  # no offering in that zone in the test catalog
    assert found(elsewhere, 7200) == INSTANCE_TYPE_NOT_FOUND
