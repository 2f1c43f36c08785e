"""Installed as a user installs it, and operated beside Karpenter.

- The chart installs into the world (helm, the stack's outputs as values); its Deployment schedules onto the
  system nodes; the forwarder runs from the image's package set (built into a fresh virtual environment, as
  cluster/forwarder/Dockerfile installs it) with nothing but the chart's ServiceAccount, RBAC and environment
  and the stack's forwarder role, sends a batch, holds the Lease and publishes its heartbeat.
- Installed like Karpenter's chart: release `nodewright-ks` into kube-system with a ServiceAccount of its own
  name and a proxy in `env`; a replica of that Deployment, run with that account's token and the Deployment's
  environment, holds the release's own Lease (the Role names it) and forwards a batch.
- Each function's role is authorized by the groups of its access entry (the token webhook maps them as EKS
  does), so the chart's ClusterRoles are exactly what the functions can do.
- With Karpenter's CRDs and a Karpenter NodePool in the cluster, pods only that NodePool fits get nothing from
  nodewright: no NodeClaim, no instance.
- The planner writes each EC2NodeClass's status (Ready, or why not: a role nodewright may not pass) through the
  chart's RBAC.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import test_forwarder
import yaml
from kubernetes import client
from test_forwarder import Recorder, _is_unschedulable, _names, _unschedulable_pod
from test_provisioning import Provisioner
from worldkit import World, wait_for

from nodewright import __version__, tags
from nodewright.localworld import deploy, image, procs
from nodewright.localworld.oci_archive import unpack

ROOT = Path(__file__).resolve().parents[2]
recorder = test_forwarder.recorder  # the fixture: a function that records the payloads it receives


@pytest.fixture(scope="module")
def installed(local_world: World) -> dict[str, str]:
    """The stack, the CRDs and the chart, as `nodewright demo` installs them."""
    return deploy.install(local_world.state)


@pytest.fixture(scope="module")
def image_python(local_world: World, packaged: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The forwarder image as a container runtime runs it: `make package`'s archive unpacked, its entrypoint's
    `python` under chroot as the image's user with the image's environment; the kubeconfig and CA a pod would
    get mounted are copied into its filesystem at the paths the environment names. Where the image cannot be built
    (not root), the image's package set in a fresh virtual environment instead."""
    root = tmp_path_factory.mktemp("image")
    archive = packaged / f"nodewright-forwarder-{__version__}.tar"
    if not archive.exists():
        subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
        image.install_package_set(str(root / "venv" / "bin" / "python"), root / "opt-forwarder")
        return str(root / "venv" / "bin" / "python"), root / "opt-forwarder"
    rootfs = root / "rootfs"
    rootfs.mkdir()
    config = unpack(archive, rootfs)["config"]
    environment = " ".join(shlex.quote(e) for e in config["Env"])
    wrapper = root / "python"
    wrapper.write_text(
        "#!/bin/sh\nset -e\n"
        f'for f in "$KUBECONFIG" {shlex.quote(local_world.state.ca_file)}; do\n'
        f'  [ -n "$f" ] || continue; mkdir -p "{rootfs}$(dirname "$f")"; install -m 0644 "$f" "{rootfs}$f"\ndone\n'
        f'exec /usr/sbin/chroot --userspec={config["User"]} {rootfs} /usr/bin/env {environment} python "$@"\n'
    )
    wrapper.chmod(0o755)
    return str(wrapper), Path(image.IMAGE_ROOT)


def _allowed(
    world: World, verb: str, resource: str, group: str = "", namespace: str = "", name: str = "", **who: Any
) -> bool:
    review = client.AuthorizationV1Api(world.api_client).create_subject_access_review(
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "resourceAttributes": {
                    "verb": verb,
                    "resource": resource.split("/")[0],
                    "subresource": resource.split("/")[1] if "/" in resource else "",
                    "group": group,
                    "namespace": namespace,
                    "name": name,
                },
                **who,
            },
        }
    )
    return bool(review.status.allowed)


# Building the image's package set (31 hash-checked wheels into a fresh environment) takes a minute with pip's
# cache warm and several on a busy or cold machine: more than the 300 s each end-to-end test gets.
@pytest.mark.timeout(1500)
def test_the_chart_installs_and_the_image_forwarder_runs_with_its_rbac_only(
    local_world: World, installed: dict[str, str], image_python: tuple[str, Path], recorder: Recorder, namespace: str
) -> None:
    world = local_world
    apps = client.AppsV1Api(world.api_client)
    # The Deployment schedules as in EKS: two replicas on the two system nodes, none on nodewright's nodes.
    deploy.add_system_nodes(world.core)
    try:
        wait_for(
            lambda: (
                (apps.read_namespaced_deployment("nodewright-forwarder", "nodewright").status.available_replicas or 0)
                == 2
            ),
            60,
            "the chart's forwarder Deployment available",
        )
        # Where the pods run: a surge pod of a rollout still in progress may not be scheduled yet (it has no
        # node, so it runs nowhere, nodewright's nodes included); every scheduled one is on a system node.
        pods = world.core.list_namespaced_pod("nodewright").items
        placed = {p.spec.node_name for p in pods if p.spec.node_name}
        assert placed == set(deploy.SYSTEM_NODES)
    finally:
        # The tests after this one send pending pods by hand, which relies on the scheduler requeueing them when
        # a node joins; a node every pod's taints reject stops that (module doc of localworld.deploy).
        for name in deploy.SYSTEM_NODES:
            world.core.delete_node(name)

    python, target = image_python
    identity = f"nodewright-forwarder-{uuid.uuid4().hex[:5]}"
    overrides = {
        "PYTHONPATH": str(target),  # the image's ENV
        "NODEWRIGHT_PROVISIONER_FUNCTION": recorder.function,
        "NODEWRIGHT_FORWARDER_HEARTBEAT_SECONDS": "1",
    }
    forwarder = deploy.start_forwarder(world.state, installed, python=python, identity=identity, overrides=overrides)
    try:
        coordination = client.CoordinationV1Api(world.api_client)
        wait_for(
            lambda: (
                coordination.read_namespaced_lease("nodewright-forwarder", "nodewright").spec.holder_identity
                == identity
            ),
            60,
            f"the image's forwarder holding the Lease ({forwarder.log})",
        )
        _unschedulable_pod(world, namespace, "needs-a-node")
        batch = wait_for(lambda: recorder.batches_with(namespace), 60, f"a batch ({forwarder.log})")[0]
        assert _names(batch) == {"needs-a-node"}

        cloudwatch = world.aws("cloudwatch")
        dimensions = [{"Name": "service", "Value": "forwarder"}, {"Name": "cluster", "Value": world.state.cluster}]

        def published(name: str) -> bool:
            return bool(
                cloudwatch.list_metrics(Namespace="nodewright", MetricName=name, Dimensions=dimensions)["Metrics"]
            )

        wait_for(lambda: published("ForwarderHeartbeat") and published("OldestPendingPodSeconds"), 30, "a heartbeat")
        log = forwarder.log.read_text()
        # It ran from the fresh environment, not the project's.
        assert "Forbidden" not in log and "Traceback" not in log, log[-3000:]
    finally:
        procs.stop(forwarder.pid)
    assert (
        str(target)
        in subprocess.run(
            [python, "-c", "import nodewright.forwarder, sys; print(nodewright.forwarder.__file__)"],
            env={"PYTHONPATH": str(target)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    account = {"user": "system:serviceaccount:nodewright:nodewright-forwarder"}
    assert _allowed(world, "watch", "pods", **account)
    assert not _allowed(world, "delete", "pods", namespace="default", **account)
    assert not _allowed(world, "get", "secrets", namespace="nodewright", **account)
    assert not _allowed(world, "update", "leases", "coordination.k8s.io", "kube-system", **account)


def _helm_uninstall(world: World, release: str, namespace: str) -> None:
    argv = [str(deploy.helm_binary()), "uninstall", release, "-n", namespace, "--kubeconfig", world.state.kubeconfig]
    subprocess.run(argv, capture_output=True, text=True, check=False)


def test_the_chart_installs_into_kube_system_with_a_proxy_and_its_own_service_account(
    local_world: World, installed: dict[str, str], recorder: Recorder, namespace: str, tmp_path: Path
) -> None:
    """Karpenter's chart is usually installed into kube-system; the proof of the issue's `helm install` into
    kube-system with proxy env and a custom ServiceAccount, the forwarder running."""
    world, release, system = local_world, "nodewright-ks", "kube-system"
    proxy = f"http://127.0.0.1:{procs.free_port()}"  # nothing listens: whatever goes through it fails
    values = {
        "serviceAccount": {"name": "scaler", "annotations": {"team": "platform"}},
        "env": [{"name": "HTTPS_PROXY", "value": proxy}, {"name": "NO_PROXY", "value": "127.0.0.1,localhost"}],
        "logLevel": "debug",
        "priorityClassName": "",  # its pods stay pending here; they must not preempt the session's
    }
    (tmp_path / "values.yaml").write_text(yaml.safe_dump(values))
    started = time.monotonic()
    # The provisioner function is the recorder, so the batch can be read back.
    outputs = {**installed, "ProvisionerFunctionArn": recorder.function}
    deploy.install_chart(world.state, outputs, release=release, namespace=system, values_file=tmp_path / "values.yaml")
    forwarder = None
    try:
        apps = client.AppsV1Api(world.api_client)
        deployment = apps.read_namespaced_deployment(f"{release}-forwarder", system)
        assert deployment.spec.template.spec.service_account_name == "scaler"
        account = world.core.read_namespaced_service_account("scaler", system)
        assert account.metadata.annotations["team"] == "platform"
        identity = f"{release}-{uuid.uuid4().hex[:5]}"
        forwarder = deploy.start_forwarder(
            world.state, installed, identity=identity, namespace=system, deployment=f"{release}-forwarder"
        )
        environ = dict(
            line.split("=", 1)
            for line in Path(f"/proc/{forwarder.pid}/environ").read_bytes().decode().split("\0")
            if "=" in line
        )
        assert (environ["HTTPS_PROXY"], environ["NO_PROXY"], environ["LOG_LEVEL"]) == (
            proxy,
            "127.0.0.1,localhost",
            "debug",
        )
        assert (environ["POD_NAMESPACE"], environ["NODEWRIGHT_FORWARDER_LEASE_NAME"]) == (
            system,
            f"{release}-forwarder",
        )
        coordination = client.CoordinationV1Api(world.api_client)
        wait_for(
            lambda: coordination.read_namespaced_lease(f"{release}-forwarder", system).spec.holder_identity == identity,
            45,
            f"the kube-system forwarder holding its Lease ({forwarder.log})",
        )
        _unschedulable_pod(world, namespace, "needs-a-node-ks")
        batch = wait_for(lambda: recorder.batches_with(namespace), 45, f"a batch ({forwarder.log})")[0]
        assert _names(batch) == {"needs-a-node-ks"}
        log = forwarder.log.read_text()
        assert "Forbidden" not in log and "Traceback" not in log, log[-3000:]
        assert '"log_level":"debug"' in log, log[-3000:]  # the chart's logLevel, read by the forwarder
        # The Role grants the release's own Lease, the one the Deployment names, and no other.
        who = {"user": f"system:serviceaccount:{system}:scaler"}
        lease = ("update", "leases", "coordination.k8s.io", system)
        assert _allowed(world, *lease, name=f"{release}-forwarder", **who)
        assert not _allowed(world, *lease, name="nodewright-forwarder", **who)
    finally:
        if forwarder is not None:
            procs.stop(forwarder.pid)
        _helm_uninstall(world, release, system)
    assert time.monotonic() - started < 90


def test_a_function_role_gets_its_access_entrys_group_and_nothing_more(
    local_world: World, installed: dict[str, str]
) -> None:
    world = local_world
    resources = world.aws("cloudformation").describe_stack_resources(StackName=deploy.STACK)["StackResources"]
    role = next(
        r["PhysicalResourceId"]
        for r in resources
        if r.get("ResourceType") == "AWS::IAM::Role" and r["LogicalResourceId"].startswith("InterruptionRole")
    )
    token = world.role_token(f"arn:aws:iam::123456789012:role/{role}")
    # nodewright:interruption may list NodeClaims and nodes, and nothing else; no longer an admin.
    assert world.api_status(token, "GET", "/apis/nodewright.io/v1/nodeclaims") == 200
    assert world.api_status(token, "GET", "/api/v1/nodes") == 200
    assert world.api_status(token, "GET", "/api/v1/pods") == 403
    assert world.api_status(token, "GET", "/api/v1/namespaces/kube-system/secrets") == 403
    assert world.api_status(token, "DELETE", "/api/v1/nodes/system-a") == 403


@pytest.mark.parametrize(
    ("group", "verb", "resource", "api_group", "allowed"),
    [
        ("provisioner", "create", "nodeclaims", "nodewright.io", True),
        ("provisioner", "patch", "nodeclaims/status", "nodewright.io", True),
        ("provisioner", "patch", "nodes", "", True),
        ("provisioner", "create", "pods/eviction", "", False),
        ("provisioner", "delete", "nodes", "", False),
        ("provisioner", "list", "nodepools", "karpenter.sh", False),
        ("disruption", "create", "pods/eviction", "", True),
        ("disruption", "delete", "pods", "", True),
        ("disruption", "list", "poddisruptionbudgets", "policy", True),
        ("disruption", "delete", "nodeclaims", "karpenter.sh", False),
        ("planner", "patch", "nodeclaims/status", "nodewright.io", True),
        ("planner", "list", "pods", "", True),
        ("planner", "list", "poddisruptionbudgets", "policy", True),
        ("planner", "create", "pods/eviction", "", False),
        ("planner", "patch", "ec2nodeclasses/status", "nodewright.io", True),
        ("provisioner", "patch", "ec2nodeclasses/status", "nodewright.io", True),
        ("planner", "delete", "nodes", "", True),
        ("interruption", "delete", "nodes", "", False),
        ("interruption", "list", "nodeclaims", "nodewright.io", True),
        ("interruption", "patch", "nodes", "", False),
        ("interruption", "list", "ec2nodeclasses", "karpenter.k8s.aws", False),
        # Issue 24: NodeOverlays and CapacityBuffers are read and their status written; static NodePools launch.
        ("planner", "list", "nodeoverlays", "nodewright.io", True),
        ("planner", "watch", "nodeoverlays", "nodewright.io", True),
        ("planner", "patch", "nodeoverlays/status", "nodewright.io", True),
        ("planner", "list", "capacitybuffers", "autoscaling.x-k8s.io", True),
        ("planner", "patch", "capacitybuffers/status", "autoscaling.x-k8s.io", True),
        ("planner", "get", "podtemplates", "", True),
        ("planner", "create", "nodeclaims", "nodewright.io", True),
        ("provisioner", "list", "nodeoverlays", "nodewright.io", True),
        ("provisioner", "get", "podtemplates", "", True),
        ("provisioner", "patch", "capacitybuffers/status", "autoscaling.x-k8s.io", False),
        ("interruption", "list", "nodeoverlays", "nodewright.io", False),
    ],
)
def test_each_group_has_the_verbs_its_functions_call(
    local_world: World, installed: dict[str, str], group: str, verb: str, resource: str, api_group: str, allowed: bool
) -> None:
    namespaced = resource.split("/")[0] in ("pods", "events", "poddisruptionbudgets", "podtemplates", "capacitybuffers")
    namespace = "default" if namespaced else ""
    who = {"user": f"arn:aws:sts::123456789012:assumed-role/{group}/x", "groups": [f"nodewright:{group}"]}
    assert _allowed(local_world, verb, resource, api_group, namespace, **who) is allowed
    # Without the group the same identity gets nothing: the binding is what grants it.
    assert not _allowed(local_world, verb, resource, api_group, namespace, user=who["user"])


# --------------------------------------------------------------------------------------- beside Karpenter


def _karpenter_crds() -> list[dict[str, Any]]:
    spec = importlib.util.spec_from_file_location("gen_crds", ROOT / "scripts" / "gen_crds.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    crds: list[dict[str, Any]] = module.karpenter_crds()
    return crds


def _install_karpenter_crds(world: World) -> None:
    extensions = client.ApiextensionsV1Api(world.api_client)
    for crd in _karpenter_crds():
        try:
            extensions.create_custom_resource_definition(crd)
        except client.ApiException as exc:
            if exc.status != 409:
                raise
        wait_for(
            lambda n=crd["metadata"]["name"]: any(
                c.type == "Established" and c.status == "True"
                for c in extensions.read_custom_resource_definition(n).status.conditions or []
            ),
            30,
            f"CRD {crd['metadata']['name']} Established",
        )


def _nodewright_instances(world: World) -> set[str]:
    pages = (
        world.aws("ec2").get_paginator("describe_instances").paginate(Filters=tags.owned_filters(world.state.cluster))
    )
    return {i["InstanceId"] for page in pages for r in page["Reservations"] for i in r["Instances"]}


def test_pods_only_a_karpenter_nodepool_fits_get_nothing_from_nodewright(
    local_world: World, installed: dict[str, str], namespace: str
) -> None:
    world = local_world
    _install_karpenter_crds(world)
    custom = client.CustomObjectsApi(world.api_client)
    name, label = f"karpenter-{namespace}", {"team": f"karpenter-{namespace}"}
    discovery = [{"tags": {"karpenter.sh/discovery": world.state.cluster}}]
    custom.create_cluster_custom_object(
        "karpenter.k8s.aws",
        "v1",
        "ec2nodeclasses",
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": name},
            "spec": {
                "role": installed["NodeRoleName"],
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "subnetSelectorTerms": discovery,
                "securityGroupSelectorTerms": discovery,
            },
        },
    )
    custom.create_cluster_custom_object(
        "karpenter.sh",
        "v1",
        "nodepools",
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": name},
            "spec": {
                "template": {
                    "metadata": {"labels": label},
                    "spec": {
                        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": name},
                        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
                    },
                }
            },
        },
    )
    try:
        before = _nodewright_instances(world)
        for index in range(3):
            _unschedulable_pod(world, namespace, f"for-karpenter-{index}", selector=label)
        wait_for(
            lambda: all(_is_unschedulable(world, namespace, f"for-karpenter-{i}") for i in range(3)),
            60,
            "the scheduler marking the pods Unschedulable",
        )
        provisioner = Provisioner(world, installed)
        responses = provisioner.provision(namespace)
        assert responses and all(r["nodeclaims"] == [] for r in responses), responses
        reasons = [d for r in responses for d in r["decisions"] if d["action"] == "unschedulable"]
        assert len(reasons) == 3, responses
        # Karpenter's NodePool was never considered: only nodewright.io objects are read in a cluster.
        assert not [d for d in reasons if name in d["reason"]], reasons
        claims = custom.list_cluster_custom_object("nodewright.io", "v1", "nodeclaims")["items"]
        assert not [c for c in claims if c["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == name]
        assert _nodewright_instances(world) == before
    finally:
        custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodepools", name)
        custom.delete_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", name)


def test_the_planner_says_in_each_ec2nodeclass_status_whether_it_can_launch(
    local_world: World, installed: dict[str, str], namespace: str
) -> None:
    # Through the planner's own access entry and the chart's RBAC, as deployed: a class naming the stack's node
    # role is Ready with what it resolved to; one naming a role nodewright may not pass says so.
    world = local_world
    custom = client.CustomObjectsApi(world.api_client)
    discovery = [{"tags": {"karpenter.sh/discovery": world.state.cluster}}]
    ready, refused = f"ready-{namespace}", f"admin-{namespace}"
    for name, role in ((ready, installed["NodeRoleName"]), (refused, "admin")):
        spec = {
            "role": role,
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": discovery,
            "securityGroupSelectorTerms": discovery,
        }
        body = {"apiVersion": "nodewright.io/v1", "kind": "EC2NodeClass", "metadata": {"name": name}, "spec": spec}
        custom.create_cluster_custom_object("nodewright.io", "v1", "ec2nodeclasses", body)
    try:
        response = world.aws("lambda").invoke(FunctionName=installed["PlannerFunctionName"], Payload=b"{}")
        tick = json.loads(response["Payload"].read())
        assert "FunctionError" not in response, tick

        def status(name: str) -> dict[str, Any]:
            found = custom.get_cluster_custom_object("nodewright.io", "v1", "ec2nodeclasses", name)
            return dict(found.get("status") or {})

        good = status(ready)
        assert {c["type"]: c["status"] for c in good["conditions"]}["Ready"] == "True", good
        assert good["instanceProfile"] == installed["InstanceProfileName"], good
        assert good["subnets"] and good["securityGroups"], good
        bad = {c["type"]: c for c in status(refused)["conditions"]}
        assert bad["Ready"]["status"] == "False" and "role admin is not a node role" in bad["Ready"]["message"], bad
        assert bad["InstanceProfileReady"]["reason"] == "InstanceProfileNotAllowed", bad
    finally:
        for name in (ready, refused):
            custom.delete_cluster_custom_object("nodewright.io", "v1", "ec2nodeclasses", name)
