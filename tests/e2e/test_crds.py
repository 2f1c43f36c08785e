"""The nodewright.io/v1 CRDs on the real API server: they install, take Karpenter v1 manifests with the
apiVersion changed, refuse obviously wrong objects, and `kubectl get` shows the printer columns.

Columns are read through the Table API (what kubectl itself asks for), so names, order, wide-only columns
and rendered values are the API server's, not a re-implementation of JSONPath.
"""

from __future__ import annotations

import copy
import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from worldkit import World, wait_for

from nodewright.model.loader import load_documents

ROOT = Path(__file__).resolve().parents[2]
CRDS = sorted((ROOT / "charts" / "nodewright" / "crds").glob("*.yaml"))
GROUP, VERSION = "nodewright.io", "v1"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def install_crds(world: World) -> None:
    """Create or update the three CRDs and wait until they are Established."""
    extensions = client.ApiextensionsV1Api(world.api_client)
    for path in CRDS:
        doc = yaml.safe_load(path.read_text())
        try:
            extensions.create_custom_resource_definition(doc)
        except client.ApiException as exc:
            if exc.status != 409:
                raise
            current = extensions.read_custom_resource_definition(doc["metadata"]["name"])
            doc["metadata"]["resourceVersion"] = current.metadata.resource_version
            extensions.replace_custom_resource_definition(doc["metadata"]["name"], doc)
        name = doc["metadata"]["name"]
        wait_for(
            lambda n=name: any(
                c.type == "Established" and c.status == "True"
                for c in extensions.read_custom_resource_definition(n).status.conditions or []
            ),
            30,
            f"CRD {name} Established",
        )


def get_json(world: World, path: str, accept: str = "application/json") -> Any:
    method, url, headers, body, post = world.api_client.param_serialize(
        "GET", path, header_params={"Accept": accept}, auth_settings=["BearerToken"]
    )
    response = world.api_client.call_api(method, url, headers, body, post)
    response.read()
    assert response.status == 200, response.data
    return json.loads(response.data)


def table(world: World, plural: str, name: str) -> tuple[list[tuple[str, int]], list[Any]]:
    """(column name, priority) pairs and the one row's cells of `kubectl get <plural> <name>`."""
    doc = get_json(world, f"/apis/{GROUP}/{VERSION}/{plural}?fieldSelector=metadata.name%3D{name}", TABLE)
    assert doc["kind"] == "Table"
    columns = [(c["name"], c.get("priority", 0)) for c in doc["columnDefinitions"]]
    assert len(doc["rows"]) == 1
    return columns, doc["rows"][0]["cells"]


def converted(path: str, name: str, node_class: str) -> dict[str, Any]:
    """A Karpenter v1 example with apiVersion (and nodeClassRef group) moved to nodewright.io/v1."""
    doc: dict[str, Any] = yaml.safe_load((ROOT / path).read_text())
    doc["apiVersion"] = f"{GROUP}/{VERSION}"
    doc["metadata"]["name"] = name
    template = doc.get("spec", {}).get("template")
    if template:
        template["spec"]["nodeClassRef"].update(group=GROUP, name=node_class)
    return doc


@pytest.fixture
def crds(local_world: World) -> client.CustomObjectsApi:
    install_crds(local_world)
    return client.CustomObjectsApi(local_world.api_client)


def test_printer_columns_and_round_trip_of_karpenter_examples(
    local_world: World, crds: client.CustomObjectsApi
) -> None:
    suffix = uuid.uuid4().hex[:6]
    pool_name, class_name, claim_name = f"pool-{suffix}", f"class-{suffix}", f"claim-{suffix}"
    nodeclass = converted("examples/karpenter-v1/ec2nodeclass.yaml", class_name, class_name)
    nodepool = converted("examples/karpenter-v1/nodepool.yaml", pool_name, class_name)
    strict = {"field_validation": "Strict"}
    crds.create_cluster_custom_object(GROUP, VERSION, "ec2nodeclasses", nodeclass, **strict)
    crds.create_cluster_custom_object(GROUP, VERSION, "nodepools", nodepool, **strict)
    claim = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "NodeClaim",
        "metadata": {
            "name": claim_name,
            "labels": {
                "karpenter.sh/nodepool": pool_name,
                "node.kubernetes.io/instance-type": "m5.large",
                "karpenter.sh/capacity-type": "spot",
                "topology.kubernetes.io/zone": "us-east-1a",
            },
        },
        "spec": {
            "nodeClassRef": {"group": GROUP, "kind": "EC2NodeClass", "name": class_name},
            "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}],
            "resources": {"requests": {"cpu": "1500m", "memory": "3Gi", "pods": 4}},
        },
    }
    crds.create_cluster_custom_object(GROUP, VERSION, "nodeclaims", claim, **strict)
    try:
        ready = {"type": "Ready", "status": "True", "reason": "Ready", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        # Status goes through the status subresource, as the provisioner writes it.
        current = crds.get_cluster_custom_object(GROUP, VERSION, "nodeclaims", claim_name)
        current["status"] = {
            "providerID": "aws:///us-east-1a/i-0123456789abcdef0",
            "nodeName": "ip-10-0-1-23.ec2.internal",
            "conditions": [ready],
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"},
        }
        crds.replace_cluster_custom_object_status(GROUP, VERSION, "nodeclaims", claim_name, current)
        current = crds.get_cluster_custom_object(GROUP, VERSION, "nodepools", pool_name)
        current["status"] = {
            "conditions": [ready],
            "resources": {"nodes": "1", "cpu": "2", "memory": "8Gi"},
            "nodes": 1,
        }
        crds.replace_cluster_custom_object_status(GROUP, VERSION, "nodepools", pool_name, current)
        current = crds.get_cluster_custom_object(GROUP, VERSION, "ec2nodeclasses", class_name)
        current["status"] = {"conditions": [ready]}
        crds.replace_cluster_custom_object_status(GROUP, VERSION, "ec2nodeclasses", class_name, current)

        columns, cells = table(local_world, "nodepools", pool_name)
        assert columns == [
            ("Name", 0),
            ("NodeClass", 0),
            ("Nodes", 0),
            ("Ready", 0),
            ("Age", 0),
            ("Weight", 1),
            ("CPU", 1),
            ("Memory", 1),
        ]
        assert [str(c) for c in cells[:4]] == [pool_name, class_name, "1", "True"] and cells[5:] == [10, "2", "8Gi"]
        assert isinstance(cells[4], str) and cells[4]  # the age, e.g. "3s"

        columns, cells = table(local_world, "nodeclaims", claim_name)
        assert columns == [
            ("Name", 0),
            ("Type", 0),
            ("Capacity", 0),
            ("Zone", 0),
            ("Node", 0),
            ("Ready", 0),
            ("Age", 0),
            ("ImageID", 1),
            ("ID", 1),
            ("NodePool", 1),
            ("NodeClass", 1),
            ("Drifted", 1),
        ]
        assert cells[:6] == [claim_name, "m5.large", "spot", "us-east-1a", "ip-10-0-1-23.ec2.internal", "True"]
        assert cells[8:11] == ["aws:///us-east-1a/i-0123456789abcdef0", pool_name, class_name]

        columns, cells = table(local_world, "ec2nodeclasses", class_name)
        assert columns == [("Name", 0), ("Ready", 0), ("Age", 0), ("Role", 1)]
        assert cells[:2] == [class_name, "True"] and cells[3] == "KarpenterNodeRole-${CLUSTER_NAME}"

        # What the API server stores (defaults filled in) is what the provisioner will read: it must load.
        stored = [
            crds.get_cluster_custom_object(GROUP, VERSION, plural, name)
            for plural, name in (("ec2nodeclasses", class_name), ("nodepools", pool_name), ("nodeclaims", claim_name))
        ]
        inputs, errors = load_documents(stored, "api")
        assert [str(e) for e in errors] == []
        assert [p.name for p in inputs.nodepools] == [pool_name]
        assert inputs.nodepools[0].weight == 10 and inputs.nodepools[0].node_class_ref.group == GROUP
        assert [c.name for c in inputs.nodeclasses] == [class_name]
        assert [(c.name, c.instance_type, c.zone, c.capacity_type) for c in inputs.nodeclaims] == [
            (claim_name, "m5.large", "us-east-1a", "spot")
        ]
        assert inputs.nodeclaims[0].provider_id == "aws:///us-east-1a/i-0123456789abcdef0"
    finally:
        for plural, name in (("nodeclaims", claim_name), ("nodepools", pool_name), ("ec2nodeclasses", class_name)):
            crds.delete_cluster_custom_object(GROUP, VERSION, plural, name)


def test_short_names_and_category(local_world: World, crds: client.CustomObjectsApi) -> None:
    resources = {r["name"]: r for r in get_json(local_world, f"/apis/{GROUP}/{VERSION}")["resources"]}
    assert resources["nodepools"]["shortNames"] == ["np"]
    assert resources["nodeclaims"]["shortNames"] == ["nc"]
    assert resources["ec2nodeclasses"]["shortNames"] == ["nwec2nc"]  # Karpenter's has ec2nc
    for plural in ("nodepools", "nodeclaims", "ec2nodeclasses"):
        assert resources[plural]["categories"] == ["nodewright"]
        assert resources[plural]["namespaced"] is False
        assert f"{plural}/status" in resources


def _nodepool(name: str) -> dict[str, Any]:
    return converted("examples/karpenter-v1/nodepool.yaml", name, "default")


def _broken(change: str) -> tuple[str, dict[str, Any]]:
    name = f"bad-{uuid.uuid4().hex[:6]}"
    if change == "ec2nodeclass-role-and-profile":
        doc = converted("examples/karpenter-v1/ec2nodeclass.yaml", name, name)
        doc["spec"]["instanceProfile"] = "profile"
        return "ec2nodeclasses", doc
    doc = _nodepool(name)
    spec = doc["spec"]
    if change == "weight-not-a-number":
        spec["weight"] = "heavy"
    elif change == "weight-out-of-range":
        spec["weight"] = 1000
    elif change == "unknown-operator":
        spec["template"]["spec"]["requirements"][0]["operator"] = "Is"
    elif change == "in-without-values":
        spec["template"]["spec"]["requirements"][0]["values"] = []
    elif change == "bad-duration":
        spec["template"]["spec"]["expireAfter"] = "30 days"
    elif change == "bad-limit":
        spec["limits"]["cpu"] = "lots"
    elif change == "unknown-field":
        spec["replicas"] = 3
    elif change == "missing-node-class-ref":
        del spec["template"]["spec"]["nodeClassRef"]
    return "nodepools", copy.deepcopy(doc)


@pytest.mark.parametrize(
    "change",
    [
        "weight-not-a-number",
        "weight-out-of-range",
        "unknown-operator",
        "in-without-values",
        "bad-duration",
        "bad-limit",
        "unknown-field",
        "missing-node-class-ref",
        "ec2nodeclass-role-and-profile",
    ],
)
def test_obviously_wrong_objects_are_refused(crds: client.CustomObjectsApi, change: str) -> None:
    plural, doc = _broken(change)
    with pytest.raises(client.ApiException) as caught:
        crds.create_cluster_custom_object(GROUP, VERSION, plural, doc, field_validation="Strict")
    assert caught.value.status in (400, 422), caught.value.body


def test_every_chart_manifest_is_accepted_and_the_forwarder_pod_meets_restricted_security(
    local_world: World,
) -> None:
    from kubernetes import utils

    from nodewright.localworld import deploy

    values = [
        "clusterName=c",
        "region=us-east-1",
        "provisionerFunction=arn:aws:lambda:us-east-1:123456789012:function:p",
    ]
    argv = [str(deploy.helm_binary()), "template", "nodewright", str(deploy.chart_dir()), "-n", "nodewright"]
    sets = [a for v in values for a in ("--set", v)]
    rendered = subprocess.run([*argv, *sets], capture_output=True, text=True, check=False)
    assert rendered.returncode == 0, rendered.stderr
    docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    # A namespace enforcing Pod Security "restricted", as the README advises labelling `nodewright`.
    namespace = f"restricted-{uuid.uuid4().hex[:6]}"
    local_world.core.create_namespace(
        {"metadata": {"name": namespace, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}
    )
    try:
        for doc in docs:
            if doc["metadata"].get("namespace"):
                doc["metadata"]["namespace"] = namespace
            for subject in doc.get("subjects", []):
                if subject.get("namespace"):
                    subject["namespace"] = namespace
            try:
                utils.create_from_dict(local_world.api_client, doc, dry_run="All")
            except utils.FailToCreateError as exc:
                # Cluster-wide objects the chart installed earlier in the session already exist.
                assert all(e.status == 409 for e in exc.api_exceptions), [e.body for e in exc.api_exceptions]
        assert {d["kind"] for d in docs} >= {"Deployment", "PodDisruptionBudget", "ServiceAccount", "ClusterRole"}
        # A pod from the Deployment's template must pass "restricted".
        deployment = next(d for d in docs if d["kind"] == "Deployment")
        template = deployment["spec"]["template"]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "forwarder-check", **template["metadata"]}}
        pod["spec"] = {**template["spec"], "serviceAccountName": "default"}  # the chart's lives in its namespace
        local_world.core.create_namespaced_pod(namespace, pod, dry_run="All")
        # And a pod that breaks it is refused, so the check above means something.
        broken = copy.deepcopy(pod)
        broken["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True
        with pytest.raises(client.ApiException) as caught:
            local_world.core.create_namespaced_pod(namespace, broken, dry_run="All")
        assert caught.value.status == 403 and "restricted" in caught.value.body
    finally:
        local_world.core.delete_namespace(namespace)
