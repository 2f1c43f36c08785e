"""`nodewright migrate` on Karpenter's karpenter.sh/v1alpha1 NodeOverlay: apiVersion changes, nothing else."""

from __future__ import annotations

import yaml

from nodewright.commands.migrate import migrate_text
from nodewright.model.loader import load_text

OVERLAY = """\
# negotiated discount
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata:
  name: savings-plan   # kept
spec:
  requirements:
    - key: karpenter.k8s.aws/instance-family
      operator: In
      values: ["c7i"]
  priceAdjustment: "-30%"
  capacity: {smarter-devices/fuse: "1"}
  weight: 10
"""


def test_a_karpenter_nodeoverlay_becomes_nodewrights_with_only_its_apiversion_changed() -> None:
    out, changes = migrate_text(OVERLAY, "in.yaml")
    assert out == OVERLAY.replace("karpenter.sh/v1alpha1", "nodewright.io/v1alpha1")  # comments and quoting kept
    assert [str(c) for c in changes] == [
        "in.yaml: NodeOverlay/savings-plan: apiVersion: karpenter.sh/v1alpha1 -> nodewright.io/v1alpha1"
    ]
    inputs, errors = load_text(out, "out.yaml")
    assert errors == [] and inputs.nodeoverlays[0].price_adjustment == "-30%"


def test_an_exported_nodeoverlay_loses_its_server_fields_and_status() -> None:
    exported = yaml.safe_load(OVERLAY)
    exported["metadata"].update(uid="u-1", resourceVersion="7", generation=2)
    exported["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    out, _ = migrate_text(yaml.safe_dump(exported), "in.yaml")
    [doc] = [d for d in yaml.safe_load_all(out) if d]
    assert doc["apiVersion"] == "nodewright.io/v1alpha1" and doc["metadata"] == {"name": "savings-plan"}
    assert "status" not in doc and doc["spec"] == yaml.safe_load(OVERLAY)["spec"]
