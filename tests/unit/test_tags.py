"""nodewright's own tag keys: what it puts on a launch, and what it recognises as its own."""

from __future__ import annotations

from nodewright import tags
from nodewright.launch.template import BlockDeviceMapping, LaunchTemplateSpec, MetadataOptions
from nodewright.model.nodeclass import BlockDevice


def test_a_launch_is_tagged_with_nodewright_keys_and_none_of_karpenters() -> None:
    launched = tags.launch_tags("prod", "general", "default", "general-abc12", {"team": "web"})
    assert launched == {
        "team": "web",
        "kubernetes.io/cluster/prod": "owned",
        "nodewright.io/cluster": "prod",
        "nodewright.io/nodepool": "general",
        "nodewright.io/ec2nodeclass": "default",
        "nodewright.io/nodeclaim": "general-abc12",
        "Name": "general-abc12",
    }
    assert not set(launched) & set(tags.KARPENTER_TAGS)
    # A launch template is not one NodeClaim's: no claim tag, no Name.
    assert tags.NODECLAIM not in tags.launch_tags("prod", "general", "default")


def test_the_ec2nodeclass_tags_cannot_override_nodewrights() -> None:
    launched = tags.launch_tags("prod", "general", "default", extra={"nodewright.io/nodepool": "other"})
    assert launched[tags.NODEPOOL] == "general"


def test_ownership_needs_the_cluster_and_a_nodepool_tag() -> None:
    assert tags.is_owned(tags.launch_tags("prod", "general", "default"), "prod")
    assert not tags.is_owned(tags.launch_tags("prod", "general", "default"), "staging")
    # What a managed node group or Karpenter puts on its instances is not nodewright's.
    assert not tags.is_owned({"kubernetes.io/cluster/prod": "owned"}, "prod")
    karpenters = {
        "kubernetes.io/cluster/prod": "owned",
        "karpenter.sh/nodepool": "general",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "eks:eks-cluster-name": "prod",
    }
    assert not tags.is_owned(karpenters, "prod")
    assert not tags.is_owned({tags.CLUSTER: "prod"}, "prod")


def _template(spot: bool) -> LaunchTemplateSpec:
    return LaunchTemplateSpec(
        node_class="default",
        image_id="ami-1",
        instance_profile="nodes",
        security_group_ids=("sg-1",),
        user_data="MIME",
        block_devices=(BlockDeviceMapping("/dev/xvda", BlockDevice(volume_size_bytes=20 << 30), root_volume=True),),
        metadata_options=MetadataOptions(),
        tags=tags.launch_tags("prod", "general", "default"),
        spot=spot,
    )


def test_a_spot_template_tags_the_spot_request_too() -> None:
    kinds = {spec["ResourceType"] for spec in _template(spot=True).data()["TagSpecifications"]}
    assert kinds == {"network-interface", "spot-instances-request"}
    kinds = {spec["ResourceType"] for spec in _template(spot=False).data()["TagSpecifications"]}
    assert kinds == {"network-interface"}
