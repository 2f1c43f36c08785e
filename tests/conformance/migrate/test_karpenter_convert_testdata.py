"""karpenter-convert's testdata pairs as golden tests: `nodewright migrate` on each input, compared field by field
with Karpenter's expected output mapped from v1beta1 to v1.

Mirrors aws/karpenter-provider-aws `tools/karpenter-convert/pkg/convert/suite_test.go` (v0.32.10), Describe
"Convert", DescribeTable "Conversion" (every Entry), It "should error when converting an AWSNodeTemplate with
launchTemplateName" and It "should ignore errors when converting an unknown kind alongside a valid kind".

How an expected v1beta1 object is mapped to v1 (`to_v1`), as Karpenter's v1 migration guide and its conversion
webhooks (`nodepool_conversion.go` v1.0.9, `ec2nodeclass_conversion.go` v1.0.8) do:
- apiVersion -> nodewright.io/v1; `nodeClassRef{name}` -> `{group: nodewright.io, kind: EC2NodeClass, name}`;
- `disruption.expireAfter` -> `template.spec.expireAfter`; `consolidationPolicy: WhenUnderutilized` (or unset:
  the v1beta1 default) -> `WhenEmptyOrUnderutilized` with `consolidateAfter: 0s`;
- `template.spec.kubelet` -> the EC2NodeClass's `spec.kubelet`;
- an `amiFamily` with no amiSelectorTerms -> `amiSelectorTerms: [{alias: <family>@latest}]`; a family with terms
  is kept; `metadataOptions` gets the pre-v1 defaults written out (hop limit 2; v1's default is 1).
Durations and quantities are compared by value (Go writes `720h0m0s` and `1k`, nodewright `720h` and
`1000`), userData without its final newline.

Where nodewright deliberately differs from karpenter-convert (each asserted below):
- A Provisioner with neither `consolidation` nor `ttlSecondsAfterEmpty` removed no node for being empty or
  underused; karpenter-convert writes no policy, so v1beta1's default (WhenUnderutilized) turns consolidation on.
  nodewright writes `WhenEmpty` with `consolidateAfter: Never`, keeping the old behaviour.
- `instanceProfile` is kept (karpenter-convert drops it for a `$KARPENTER_NODE_ROLE` placeholder); the placeholder
  is written only when there is no instance profile.
- `aws::ids` together with other amiSelector keys is refused: Karpenter v1alpha1's webhook refused it
  (`awsnodetemplate_validation.go`), and v1beta1/v1 refuse an `id` term with other fields, so the expected outputs
  of those inputs are not valid objects. Those inputs are checked for the refusal, then migrated without
  `aws::ids` and compared with the expected terms minus `id` (deduplicated).
- A document migrate cannot convert (`unknown_kind.yaml`) is an error, where karpenter-convert skips it.
- Provisioners with `kubeletConfiguration` are migrated with their AWSNodeTemplate, since v1 keeps the kubelet on
  the EC2NodeClass (karpenter-convert kept it on the v1beta1 NodePool).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.commands.migrate import migrate_text
from nodewright.migrate.common import MigrationError, Options
from nodewright.model.durations import parse_duration
from nodewright.model.loader import load_text
from nodewright.model.quantity import parse_quantity

TESTDATA = Path(__file__).parent / "testdata"
# A companion AWSNodeTemplate named `default` for Provisioners whose kubelet needs a class to land on.
TEMPLATE = """\
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: default}
spec:
  amiFamily: Bottlerocket
  subnetSelector: {karpenter.sh/discovery: karpenter-demo}
  securityGroupSelector: {karpenter.sh/discovery: karpenter-demo}
"""


def read(name: str) -> str:
    return (TESTDATA / name).read_text()


def migrate(text: str, options: Options | None = None) -> list[dict[str, Any]]:
    out, _ = migrate_text(text, "input.yaml", options)
    return [d for d in yaml.safe_load_all(out) if d]


def validate(docs: list[dict[str, Any]]) -> None:
    """The output loads with nodewright's own loader, with no error."""
    _, errors = load_text("---\n".join(yaml.safe_dump(d) for d in docs), "migrated.yaml")
    assert [str(e) for e in errors] == []


def _normal(path: str, value: Any) -> Any:
    """Durations and quantities by value, so Go's and nodewright's spellings compare equal."""
    if isinstance(value, dict):
        return {k: _normal(f"{path}.{k}", v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(path, v) for v in value]
    last = path.rsplit(".", 1)[-1]
    if last == "userData":
        # The inputs end the block without a newline at the end of the file; the expected outputs end it with one.
        return str(value).rstrip("\n")
    if last in ("expireAfter", "consolidateAfter") or ".evictionSoftGracePeriod." in path:
        return parse_duration(str(value), allow_never=True)
    if ".limits." in path or ".systemReserved." in path or ".kubeReserved." in path or last == "volumeSize":
        return parse_quantity(str(value))
    return value


def normal(doc: dict[str, Any]) -> Any:
    return _normal("", doc)


def to_v1(expected: dict[str, Any], role: str = "$KARPENTER_NODE_ROLE") -> tuple[dict[str, Any], Any]:
    """An expected v1beta1 object as v1 (see the module docstring); for a NodePool, also its kubelet."""
    doc = copy.deepcopy(expected)
    doc["apiVersion"] = "nodewright.io/v1"
    spec = doc["spec"]
    if doc["kind"] == "NodePool":
        node = spec["template"]["spec"]
        node["nodeClassRef"] = {"group": "nodewright.io", "kind": "EC2NodeClass", "name": node["nodeClassRef"]["name"]}
        disruption = spec["disruption"]
        node["expireAfter"] = disruption.pop("expireAfter")
        if disruption.get("consolidationPolicy", "WhenUnderutilized") == "WhenUnderutilized":
            disruption.update(consolidationPolicy="WhenEmptyOrUnderutilized", consolidateAfter="0s")
        if node.get("requirements") is None:
            node["requirements"] = []  # required in v1; empty allows every instance type, as null did
        return doc, node.pop("kubelet", None)
    family = spec.pop("amiFamily")
    if "amiSelectorTerms" in spec:
        spec["amiFamily"] = family
    else:
        spec["amiSelectorTerms"] = [{"alias": f"{family.lower()}@latest"}]
    spec["role"] = role
    spec["metadataOptions"] = {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 2,
        "httpTokens": "required",
        **(spec.get("metadataOptions") or {}),
    }
    return doc, None


def by_kind(docs: list[dict[str, Any]], kind: str, name: str = "default") -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


PROVISIONERS = [
    # (input, expected, ignore_defaults), DescribeTable "Conversion" entries "provisioner ... to nodepool".
    ("provisioner.yaml", "nodepool.yaml", False),
    ("provisioner_defaults.yaml", "nodepool_defaults.yaml", False),
    ("provisioner_no_defaults.yaml", "nodepool_no_defaults.yaml", True),
]


@pytest.mark.parametrize(("source", "target", "ignore_defaults"), PROVISIONERS)
def test_provisioner_to_nodepool(source: str, target: str, ignore_defaults: bool) -> None:
    """Entries "provisioner to nodepool", "provisioner (set defaults) to nodepool", "provisioner (no set
    defaults) to nodepool": every field of the expected NodePool, mapped to v1; the kubelet on the class."""
    docs = migrate(read(source) + "\n---\n" + TEMPLATE, Options(ignore_defaults=ignore_defaults))
    expected, kubelet = to_v1(yaml.safe_load(read(target)))
    pool, node_class = by_kind(docs, "NodePool"), by_kind(docs, "EC2NodeClass")
    assert normal(pool) == normal(expected)
    assert normal(node_class["spec"].get("kubelet")) == normal(kubelet)
    validate(docs)


def test_provisioner_from_kubectl_output_to_nodepool() -> None:
    """Entry "provisioner (kubectl output) to nodepool" (--ignore-defaults): server fields and status dropped.

    Difference: no consolidation and no ttlSecondsAfterEmpty keep empty nodes (WhenEmpty, Never), where
    karpenter-convert's output falls back to v1beta1's default policy and consolidates."""
    docs = migrate(read("provisioner_kubectl_output.yaml"), Options(ignore_defaults=True))
    expected, kubelet = to_v1(yaml.safe_load(read("nodepool_kubectl_output.yaml")))
    assert expected["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
    }
    expected["spec"]["disruption"] = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}
    (pool,) = docs
    assert normal(pool) == normal(expected) and kubelet is None
    assert pool["metadata"] == {"name": "provisioner1"} and "status" not in pool
    validate(docs + migrate(TEMPLATE))


@pytest.mark.parametrize(
    "validated",
    [pytest.param(False, id="fields"), pytest.param(True, id="validates")],
)
def test_provisioner_with_inline_provider_to_nodepool_and_nodeclass(validated: bool) -> None:
    """testdata provisioner_provider.yaml -> nodepool_nodeclass_provider_combined.yaml (in testdata, not an Entry
    of v0.32.10's table): the inline provider becomes an EC2NodeClass named after the Provisioner; its
    instanceProfile is kept instead of the role placeholder."""
    docs = migrate(read("provisioner_provider.yaml"))
    pool_expected, node_class_expected = yaml.safe_load_all(read("nodepool_nodeclass_provider_combined.yaml"))
    pool, _ = to_v1(pool_expected)
    node_class, _ = to_v1(node_class_expected)
    del node_class["spec"]["role"]
    node_class["spec"]["instanceProfile"] = "KarpenterInstanceProfile-karpenter-demo"
    assert [d["kind"] for d in docs] == ["NodePool", "EC2NodeClass"]
    assert normal(docs[0]) == normal(pool)
    assert normal(docs[1]) == normal(node_class)
    if validated:
        validate(docs)


TEMPLATES = [
    # Entries "nodetemplate (empty amifamily) to nodeclass" and "nodetemplate (kubectl output) to nodeclass":
    # both are AL2 (unset family meant AL2) and become al2@latest.
    ("nodetemplate_no_amifamily.yaml", "nodeclass_no_amifamily.yaml"),
    ("nodetemplate_kubectl_output.yaml", "nodeclass_kubectl_output.yaml"),
]


@pytest.mark.parametrize(("source", "target"), TEMPLATES)
def test_nodetemplate_to_nodeclass(source: str, target: str) -> None:
    """Entries "nodetemplate (empty amifamily) to nodeclass", "nodetemplate (kubectl output) to nodeclass"."""
    docs = migrate(read(source))
    expected, _ = to_v1(yaml.safe_load(read(target)))
    assert [normal(d) for d in docs] == [normal(expected)]
    assert docs[0]["spec"]["amiSelectorTerms"] == [{"alias": "al2@latest"}]


@pytest.mark.parametrize(("source", "target"), TEMPLATES)
def test_nodetemplate_to_nodeclass_validates(source: str, target: str) -> None:
    validate(migrate(read(source)))


IDS_MIXED = [
    # Entries "nodetemplate to nodeclass" and "nodetemplate (kubectl output) to nodeclass <x>Selectors with CDL
    # on tags": each input's amiSelector mixes aws::ids with other keys.
    ("nodetemplate.yaml", "nodeclass.yaml"),
    ("nodetemplate_cdl_amiSelectors_tags.yaml", "nodeclass_cdl_amiSelectors_tags_output.yaml"),
    ("nodetemplate_cdl_securityGroupSelectors_tags.yaml", "nodeclass_cdl_securityGroupSelectors_tags_output.yaml"),
    ("nodetemplate_cdl_subnetSelectors_tags.yaml", "nodeclass_cdl_subnetSelectors_tags_output.yaml"),
]


@pytest.mark.parametrize(("source", "target"), IDS_MIXED)
def test_nodetemplate_with_ids_and_other_keys(source: str, target: str) -> None:
    """Entries "nodetemplate to nodeclass" and "... with CDL on tags" (comma-separated values expanded)."""
    with pytest.raises(MigrationError, match=r"spec\.amiSelector\[aws::ids\]: cannot be combined with other keys"):
        migrate(read(source))
    template = yaml.safe_load(read(source))
    del template["spec"]["amiSelector"]["aws::ids"]
    docs = migrate(yaml.safe_dump(template))
    expected, _ = to_v1(yaml.safe_load(read(target)))
    terms: list[dict[str, Any]] = []
    for term in expected["spec"]["amiSelectorTerms"]:
        term.pop("id")
        if term not in terms:
            terms.append(term)
    expected["spec"]["amiSelectorTerms"] = terms
    assert [normal(d) for d in docs] == [normal(expected)]
    validate(docs)


def test_nodetemplate_with_launch_template_is_refused() -> None:
    """It "should error when converting an AWSNodeTemplate with launchTemplateName"."""
    with pytest.raises(MigrationError, match=r"AWSNodeTemplate/default: spec\.launchTemplate: custom launch"):
        migrate(read("nodetemplate_launch_template_name.yaml"))


def test_unknown_kind_alongside_a_valid_kind_is_an_error() -> None:
    """It "should ignore errors when converting an unknown kind alongside a valid kind": nodewright refuses the
    unknown document instead (issue 23: no silent pass-through), naming it, and converts nothing."""
    with pytest.raises(MigrationError, match=r"Test/default: apiVersion test.sh/v1 kind Test is not something"):
        migrate(read("unknown_kind.yaml") + "\n---\n" + read("provisioner.yaml"))
