"""charts/nodewright: it lints, renders what the stack and the code expect, and refuses bad values by name."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CHART, REQUIRED, ROOT, Rendered, run_helm

from nodewright import __version__, settings
from nodewright.forwarder import config as forwarder_config


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_crds", ROOT / "scripts" / "gen_crds.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _constant(module: str, name: str) -> str:
    # Read as text: infra/ imports the CDK, which these tests do not need to load.
    match = re.search(rf'^{name} = "([^"]+)"', (ROOT / "infra" / module).read_text(), re.MULTILINE)
    assert match, f"{name} not found in infra/{module}"
    return match.group(1)


def _rules(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_helm_lint_is_clean_in_strict_mode(helm: Path) -> None:
    args = ["lint", str(CHART), "--strict", "-n", "nodewright"]
    for value in REQUIRED:
        args += ["--set", value]
    done = run_helm(helm, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 chart(s) failed" in done.stdout


def test_the_chart_is_released_with_nodewright() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == __version__


def test_committed_crds_are_what_the_generator_writes() -> None:
    for name, text in _generator().render().items():
        assert (CHART / "crds" / name).read_text() == text, f"run python scripts/gen_crds.py ({name})"


def test_crd_schemas_are_structural_without_preserve_unknown_fields() -> None:
    for path in sorted((CHART / "crds").glob("*.yaml")):
        text = path.read_text()
        assert "x-kubernetes-preserve-unknown-fields" not in text
        crd = yaml.safe_load(text)
        version = crd["spec"]["versions"][0]
        assert crd["spec"]["group"] == "nodewright.io" and version["name"] == "v1"
        assert version["subresources"] == {"status": {}}
        schema = version["schema"]["openAPIV3Schema"]
        assert schema["properties"]["spec"]["type"] == "object" and schema["properties"]["spec"]["properties"]


@pytest.mark.parametrize(
    ("missing", "named"),
    [(0, "clusterName is required"), (1, "region is required"), (2, "provisionerFunction is required")],
)
def test_a_missing_required_value_is_named_with_its_source(helm: Path, missing: int, named: str) -> None:
    args = ["template", "nodewright", str(CHART), "-n", "nodewright"]
    for value in (v for i, v in enumerate(REQUIRED) if i != missing):
        args += ["--set", value]
    done = run_helm(helm, *args)
    assert done.returncode != 0 and named in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("image.digest=latest", "digest"),
        ("podAntiAffinity=sometimes", "podAntiAffinity"),
        ("settings.IDLE_SECONDS=1", "IDLE_SECONDS"),
        ("serviceAccount.roleArn=forwarder", "roleArn"),
        ("replica=3", "replica"),
    ],
)
def test_a_wrong_value_is_refused_naming_it(helm: Path, value: str, named: str) -> None:
    args = ["template", "nodewright", str(CHART), "-n", "nodewright"]
    for v in (*REQUIRED, value):
        args += ["--set", v]
    done = run_helm(helm, *args)
    assert done.returncode != 0 and named in done.stderr, done.stderr


def test_it_installs_only_into_the_namespace_the_stack_names(helm: Path) -> None:
    args = ["template", "nodewright", str(CHART), "-n", "kube-system"]
    for value in REQUIRED:
        args += ["--set", value]
    done = run_helm(helm, *args)
    assert done.returncode != 0 and "install into the namespace nodewright" in done.stderr
    assert _constant("forwarder.py", "NAMESPACE") == "nodewright"


def test_the_deployment_has_what_the_forwarder_reads_and_survives_node_loss(render: Any) -> None:
    rendered: Rendered = render("settings.NODEWRIGHT_FORWARDER_MAX_SECONDS=5")
    configmap = rendered.one("ConfigMap")
    assert configmap["data"] == {
        settings.CLUSTER: "demo",
        settings.PROVISIONER_FUNCTION: "arn:aws:lambda:us-east-1:123456789012:function:p",
        settings.REGION: "us-east-1",
        "NODEWRIGHT_FORWARDER_MAX_SECONDS": "5",
    }
    deployment = rendered.one("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    env = {e["name"] for e in container["env"]}
    assert {"POD_NAME", "POD_NAMESPACE"} <= env
    assert container["envFrom"] == [{"configMapRef": {"name": configmap["metadata"]["name"]}}]
    assert container["image"] == f"nodewright-forwarder:{__version__}"
    assert deployment["spec"]["replicas"] == 2
    assert {container["livenessProbe"]["httpGet"]["path"], container["readinessProbe"]["httpGet"]["path"]} == {
        "/healthz",
        "/readyz",
    }
    assert container["securityContext"]["readOnlyRootFilesystem"] is True and pod["securityContext"]["runAsNonRoot"]
    # Never on nodes nodewright (or Karpenter) manages, one replica per node, spread over zones.
    [term] = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"} in term["matchExpressions"]
    [anti] = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    assert anti["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert pod["topologySpreadConstraints"][0]["topologyKey"] == "topology.kubernetes.io/zone"
    pdb = rendered.one("PodDisruptionBudget")
    assert pdb["spec"] == {"minAvailable": 1, "selector": deployment["spec"]["selector"]}
    # Every tunable the chart passes is one the forwarder reads (a typo would be silently ignored).
    documented = set(re.findall(r"\| (NODEWRIGHT_FORWARDER_[A-Z_]+) \|", forwarder_config.__doc__ or ""))
    assert {k for k in configmap["data"] if k.startswith(forwarder_config.PREFIX)} <= documented


def test_options_irsa_digest_preferred_anti_affinity_and_extra_node_terms(render: Any) -> None:
    rendered: Rendered = render(
        "serviceAccount.roleArn=arn:aws:iam::123456789012:role/forwarder",
        "image.digest=sha256:" + "a" * 64,
        "podAntiAffinity=preferred",
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].key=eks.amazonaws.com/nodegroup",
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].operator=Exists",
    )
    account = rendered.one("ServiceAccount")
    assert account["metadata"]["annotations"] == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/forwarder"
    }
    pod = rendered.one("Deployment")["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "nodewright-forwarder@sha256:" + "a" * 64
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in pod["affinity"]["podAntiAffinity"]
    [term] = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    # The user's term is ANDed with the built-in one, never replaces it.
    assert term["matchExpressions"] == [
        {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
        {"key": "eks.amazonaws.com/nodegroup", "operator": "Exists"},
    ]


def test_names_match_the_cdk_stack(render: Any) -> None:
    """The Pod Identity association (infra/forwarder.py) and the access entries' groups (infra/provisioner.py,
    workflow.py, planner.py, interruption.py) name the same ServiceAccount and groups as the chart; a rename on
    one side only would break authentication silently."""
    rendered: Rendered = render()
    namespace, service_account = (_constant("forwarder.py", n) for n in ("NAMESPACE", "SERVICE_ACCOUNT"))
    account = rendered.one("ServiceAccount")
    assert (account["metadata"]["namespace"], account["metadata"]["name"]) == (namespace, service_account)
    assert rendered.one("Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == service_account
    bindings = rendered.of_kind("ClusterRoleBinding") + rendered.of_kind("RoleBinding")
    accounts = {(s["namespace"], s["name"]) for b in bindings for s in b["subjects"] if s["kind"] == "ServiceAccount"}
    assert accounts == {(namespace, service_account)}
    groups = sorted(s["name"] for b in bindings for s in b["subjects"] if s["kind"] == "Group")
    stack_groups = sorted(
        _constant(module, "KUBERNETES_GROUP")
        for module in ("provisioner.py", "workflow.py", "planner.py", "interruption.py")
    )
    assert groups == stack_groups


def test_no_rule_reaches_karpenters_objects(render: Any) -> None:
    rendered: Rendered = render()
    for role in rendered.of_kind("ClusterRole") + rendered.of_kind("Role"):
        groups = {group for group, _, _ in _rules(role)}
        assert not {g for g in groups if g.startswith("karpenter")}, role["metadata"]["name"]
        assert "*" not in str(role["rules"]), role["metadata"]["name"]


def test_the_forwarder_only_reads_pods_nodes_and_nodeclaims_and_writes_no_nodeclaim(render: Any) -> None:
    rendered: Rendered = render()
    role = rendered.one("ClusterRole", "nodewright-forwarder")
    # It watches nodes to report the ones that joined still tainted karpenter.sh/unregistered (the provisioner,
    # not the forwarder, takes the taint off), and lists NodeClaims to name a node's claim in the pod events it
    # reports. It may not write NodeClaim status: that could move a claim's providerID onto a node nodewright did
    # not launch; the provisioner writes lastPodEventTime once the API server confirms the report.
    assert _rules(role) == {
        ("", "pods", "list"),
        ("", "pods", "watch"),
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        ("nodewright.io", "nodeclaims", "list"),
    }
    provisioner = _rules(rendered.one("ClusterRole", "nodewright-provisioner"))
    assert {
        ("nodewright.io", "nodeclaims", "get"),
        ("", "nodes", "get"),
        ("nodewright.io", "nodeclaims/status", "patch"),
    } <= provisioner


def test_only_the_workflow_evicts_and_deletes_pods_and_only_it_and_the_planner_delete_nodes(render: Any) -> None:
    rendered: Rendered = render()
    granted = {
        name: _rules(rendered.one("ClusterRole", f"nodewright-{name}"))
        for name in ("provisioner", "disruption", "planner", "interruption")
    }
    evicting = {("", "pods/eviction", "create"), ("", "pods", "delete")}
    node_delete = ("", "nodes", "delete")
    assert evicting | {node_delete} <= granted["disruption"]
    for name in ("provisioner", "planner", "interruption"):
        assert not evicting & granted[name], name
    # The planner's instance garbage collection deletes the Node of an instance it terminated (and takes
    # nodewright.io/termination off it first); the provisioner and the interruption handler never delete a node.
    assert node_delete in granted["planner"]
    assert {("", "nodes", "get"), ("", "nodes", "patch")} <= granted["planner"]
    assert node_delete not in granted["provisioner"] | granted["interruption"]
    # It reads the NodeClaim and Node its instance's tags name (the lists are its fallback without EC2), and deletes
    # an interrupted instance's NodeClaim, which its finalizer keeps until the workflow is done; it patches nothing,
    # so it can never take the finalizer off.
    assert granted["interruption"] == {
        ("nodewright.io", "nodeclaims", "get"),
        ("nodewright.io", "nodeclaims", "list"),
        ("nodewright.io", "nodeclaims", "delete"),
        ("nodewright.io", "nodepools", "list"),
        ("nodewright.io", "ec2nodeclasses", "list"),
        ("", "nodes", "get"),
        ("", "nodes", "list"),
        ("", "events", "create"),
    }


def test_the_provisioner_and_the_planner_write_nodepool_and_ec2nodeclass_status_and_no_one_else(render: Any) -> None:
    rendered: Rendered = render()
    # service.status: Cluster.set_status reads the object, then merge-patches its status subresource.
    writes = {
        ("nodewright.io", "ec2nodeclasses", "get"),
        ("nodewright.io", "ec2nodeclasses/status", "patch"),
        ("nodewright.io", "nodepools", "get"),
        ("nodewright.io", "nodepools/status", "patch"),
    }
    for name in ("provisioner", "disruption", "planner", "interruption"):
        granted = _rules(rendered.one("ClusterRole", f"nodewright-{name}"))
        assert (writes <= granted) is (name in ("provisioner", "planner")), name
        assert not {("nodewright.io", r, "patch") for r in ("ec2nodeclasses", "nodepools")} & granted, name


def test_every_function_that_deletes_a_nodeclaim_or_node_can_take_the_termination_finalizer_off(render: Any) -> None:
    rendered: Rendered = render()
    for name in ("provisioner", "disruption", "planner"):
        granted = _rules(rendered.one("ClusterRole", f"nodewright-{name}"))
        for group, resource in (("nodewright.io", "nodeclaims"), ("", "nodes")):
            if (group, resource, "delete") in granted:
                assert {(group, resource, "get"), (group, resource, "patch")} <= granted, (name, resource)
        # Finishing a registration puts the finalizer on the node: a read-modify-write of its metadata.
        assert {("", "nodes", "get"), ("", "nodes", "patch")} <= granted, name


def test_only_the_workflow_lists_volume_attachments_to_wait_for_their_detachment(render: Any) -> None:
    """CheckVolumes (service.workflow.await_volumes) lists the node's VolumeAttachments after the drain, as
    Karpenter's termination does before it terminates the instance; no other function reads them."""
    rendered: Rendered = render()
    attachments = ("storage.k8s.io", "volumeattachments", "list")
    assert attachments in _rules(rendered.one("ClusterRole", "nodewright-disruption"))
    for name in ("provisioner", "planner", "interruption"):
        assert attachments not in _rules(rendered.one("ClusterRole", f"nodewright-{name}")), name
