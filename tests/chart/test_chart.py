"""charts/nodewright: it lints, renders what the stack and the code expect, and refuses bad values by name."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
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
    for path in sorted((CHART / "crds").glob("nodewright.io_*.yaml")):
        text = path.read_text()
        assert "x-kubernetes-preserve-unknown-fields" not in text
        crd = yaml.safe_load(text)
        version = crd["spec"]["versions"][0]
        expected = "v1alpha1" if crd["spec"]["names"]["kind"] == "NodeOverlay" else "v1"  # Karpenter's versions
        assert crd["spec"]["group"] == "nodewright.io" and version["name"] == expected
        # NodePools scale (`kubectl scale nodepool`): spec.replicas is the desired size, status.nodes the current.
        scale = {"scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.nodes"}}
        assert version["subresources"] == {
            "status": {},
            **(scale if crd["spec"]["names"]["kind"] == "NodePool" else {}),
        }
        schema = version["schema"]["openAPIV3Schema"]
        assert schema["properties"]["spec"]["type"] == "object" and schema["properties"]["spec"]["properties"]


@pytest.mark.parametrize(
    ("missing", "named"),
    [
        (0, "missing property 'clusterName'"),
        (1, "missing property 'region'"),
        (2, "missing property 'provisionerFunction'"),
    ],
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
        ("podAntiAffinity=required", "podAntiAffinity"),
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


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_the_deployment_has_what_the_forwarder_reads_and_survives_node_loss(render: Any) -> None:
    rendered: Rendered = render("settings.NODEWRIGHT_FORWARDER_MAX_SECONDS=5")
    deployment = rendered.one("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    env = _env(container)
    assert {k: v for k, v in env.items() if isinstance(v, str)} == {
        settings.CLUSTER: "demo",
        settings.PROVISIONER_FUNCTION: "arn:aws:lambda:us-east-1:123456789012:function:p",
        settings.REGION: "us-east-1",
        "LOG_LEVEL": "info",
        "NODEWRIGHT_FORWARDER_LEASE_NAME": "nodewright-forwarder",
        "NODEWRIGHT_FORWARDER_PORT": "8080",
        "NODEWRIGHT_FORWARDER_MAX_SECONDS": "5",
    }
    assert env["POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert "envFrom" not in container and not rendered.of_kind("ConfigMap")
    assert container["image"] == f"nodewright-forwarder:{__version__}"
    assert deployment["spec"]["replicas"] == 2
    assert {container["livenessProbe"]["httpGet"]["path"], container["readinessProbe"]["httpGet"]["path"]} == {
        "/healthz",
        "/readyz",
    }
    assert container["securityContext"]["readOnlyRootFilesystem"] is True and pod["securityContext"]["runAsNonRoot"]
    # Linux nodes, as Karpenter's chart; never on nodes nodewright (or Karpenter) manages, one replica per node,
    # spread over zones.
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    [term] = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"} in term["matchExpressions"]
    [anti] = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    assert anti["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    [spread] = pod["topologySpreadConstraints"]
    assert spread["topologyKey"] == "topology.kubernetes.io/zone"
    assert spread["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert container["resources"] == {
        "requests": {"cpu": "50m", "memory": "128Mi"},
        "limits": {"cpu": "1", "memory": "512Mi"},
    }
    pdb = rendered.one("PodDisruptionBudget")
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": deployment["spec"]["selector"]}


def test_every_settings_key_the_chart_accepts_is_one_the_forwarder_reads() -> None:
    """values.schema.json lists the settings keys (so a misspelled one is refused at install): exactly the
    forwarder's documented tunables, less the three the chart sets itself (the Lease name its Role names, the
    port its probes use, the address)."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    keys = set(schema["properties"]["settings"]["properties"])
    assert schema["properties"]["settings"]["additionalProperties"] is False
    documented = set(re.findall(r"\| (NODEWRIGHT_FORWARDER_[A-Z_]+) \|", forwarder_config.__doc__ or ""))
    chart_owned = {f"{forwarder_config.PREFIX}{n}" for n in ("LEASE_NAME", "PORT", "BIND")}
    assert keys == documented - chart_owned


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("settings.NODEWRIGHT_FORWARDER_IDEL_SECONDS=1", "NODEWRIGHT_FORWARDER_IDEL_SECONDS"),
        ("settings.NODEWRIGHT_FORWARDER_LEASE_NAME=other", "NODEWRIGHT_FORWARDER_LEASE_NAME"),
        ("settings.batchMaxDuration=10s", "batchMaxDuration"),
        ("settings.NODEWRIGHT_FORWARDER_MAX_SECONDS=ten", "NODEWRIGHT_FORWARDER_MAX_SECONDS"),
        ("logLevel=verbose", "logLevel"),
        ("serviceAccount.nmae=x", "nmae"),
        ("podDisruptionBudget.minAvailabe=1", "minAvailabe"),
        ("resources.request.cpu=1", "request"),
        ("fullnameOverride=Not_A_Name", "fullnameOverride"),
    ],
)
def test_unknown_misspelled_or_malformed_values_are_refused_at_install(refused: Any, value: str, named: str) -> None:
    assert named in refused(value)


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("env[0].name=NODEWRIGHT_CLUSTER", "clusterName"),
        ("env[0].name=AWS_REGION", "region"),
        ("env[0].name=LOG_LEVEL", "logLevel"),
        ("env[0].name=NODEWRIGHT_FORWARDER_MAX_SECONDS", "settings.NODEWRIGHT_FORWARDER_MAX_SECONDS"),
        ("env[0].name=POD_NAMESPACE", "POD_NAMESPACE"),
    ],
)
def test_env_may_not_set_what_the_chart_sets(refused: Any, value: str, named: str) -> None:
    """No setting is silently overridden: a user's variable of the same name would win over (or lose to) the
    chart's, so it is refused, naming the value to use."""
    assert named in refused(value, value.replace(".name=", ".value=").rsplit("=", 1)[0] + "=x")


def test_any_namespace_with_proxy_env_extra_volumes_and_a_custom_service_account(render: Any) -> None:
    rendered: Rendered = render(
        "serviceAccount.name=nodewright",
        "serviceAccount.annotations.team=platform",
        "env[0].name=HTTPS_PROXY",
        "env[0].value=http://proxy.internal:3128",
        "env[1].name=NO_PROXY",
        "env[1].value=10.0.0.0/8\\,.svc",
        "envFrom[0].secretRef.name=proxy-credentials",
        "extraVolumes[0].name=ca",
        "extraVolumes[0].configMap.name=corporate-ca",
        "extraVolumeMounts[0].name=ca",
        "extraVolumeMounts[0].mountPath=/etc/ssl/corporate",
        "priorityClassName=platform-critical",
        "logLevel=debug",
        namespace="kube-system",
    )
    account = rendered.one("ServiceAccount")
    assert account["metadata"] == {**account["metadata"], "name": "nodewright", "namespace": "kube-system"}
    assert account["metadata"]["annotations"] == {"team": "platform"}
    deployment = rendered.one("Deployment")
    assert deployment["metadata"]["namespace"] == "kube-system"
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert pod["serviceAccountName"] == "nodewright"
    env = _env(container)
    assert env["HTTPS_PROXY"] == "http://proxy.internal:3128" and env["NO_PROXY"] == "10.0.0.0/8,.svc"
    assert env["LOG_LEVEL"] == "debug"
    assert container["envFrom"] == [{"secretRef": {"name": "proxy-credentials"}}]
    assert {"name": "ca", "configMap": {"name": "corporate-ca"}} in pod["volumes"]
    assert {"name": "ca", "mountPath": "/etc/ssl/corporate"} in container["volumeMounts"]
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]  # the chart's own stays
    assert pod["priorityClassName"] == "platform-critical"
    # Every binding names the account the pods run as, in the release namespace.
    bindings = rendered.of_kind("ClusterRoleBinding") + rendered.of_kind("RoleBinding")
    accounts = {(s["namespace"], s["name"]) for b in bindings for s in b["subjects"] if s["kind"] == "ServiceAccount"}
    assert accounts == {("kube-system", "nodewright")}
    assert {r["metadata"]["namespace"] for r in rendered.of_kind("Role") + rendered.of_kind("RoleBinding")} == {
        "kube-system"
    }


def test_an_existing_service_account_must_be_named_and_is_not_created(render: Any, refused: Any) -> None:
    rendered: Rendered = render("serviceAccount.create=false", "serviceAccount.name=platform-forwarder")
    assert not rendered.of_kind("ServiceAccount")
    assert rendered.one("Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "platform-forwarder"
    assert "serviceAccount.name is required" in refused("serviceAccount.create=false")
    # Annotations the chart could not write are refused, not dropped.
    assert "serviceAccount.create=true" in refused(
        "serviceAccount.create=false", "serviceAccount.name=x", "serviceAccount.annotations.a=b"
    )
    assert "name different roles" in refused(
        "serviceAccount.roleArn=arn:aws:iam::123456789012:role/a",
        "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::123456789012:role/b",
    )


def test_resources_are_taken_whole(render: Any) -> None:
    """Helm deep-merges maps; the chart's defaults are not in values.yaml, so a user's requests leave no default
    limits behind."""
    rendered: Rendered = render("resources.requests.cpu=200m", "resources.requests.memory=256Mi")
    [container] = rendered.one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["resources"] == {"requests": {"cpu": "200m", "memory": "256Mi"}}


def test_topology_spread_and_pod_anti_affinity_are_replaced_whole_with_the_selector_filled_in(render: Any) -> None:
    rendered: Rendered = render(
        "topologySpreadConstraints[0].topologyKey=kubernetes.io/hostname",
        "topologySpreadConstraints[0].maxSkew=1",
        "topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule",
        "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution=null",
        "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=100",
        "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey"
        "=kubernetes.io/hostname",
        "nodeSelector.kubernetes\\.io/arch=arm64",
    )
    deployment = rendered.one("Deployment")
    selector = {"matchLabels": deployment["spec"]["selector"]["matchLabels"]}
    pod = deployment["spec"]["template"]["spec"]
    assert pod["topologySpreadConstraints"] == [
        {
            "topologyKey": "kubernetes.io/hostname",
            "maxSkew": 1,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector,
        }
    ]
    anti = pod["affinity"]["podAntiAffinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in anti
    assert anti["preferredDuringSchedulingIgnoredDuringExecution"] == [
        {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": selector}}
    ]
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64"}


def test_pod_disruption_budget_takes_one_of_min_available_and_max_unavailable(render: Any, refused: Any) -> None:
    assert render("podDisruptionBudget.minAvailable=1").one("PodDisruptionBudget")["spec"]["minAvailable"] == 1
    assert "maxUnavailable" not in render("podDisruptionBudget.minAvailable=1").one("PodDisruptionBudget")["spec"]
    assert render("podDisruptionBudget.maxUnavailable=50%").one("PodDisruptionBudget")["spec"]["maxUnavailable"] == (
        "50%"
    )
    assert not render("podDisruptionBudget.enabled=false").of_kind("PodDisruptionBudget")
    assert "not both" in refused("podDisruptionBudget.minAvailable=1", "podDisruptionBudget.maxUnavailable=1")


def test_name_overrides_name_every_object_and_the_lease_the_role_grants_follows(render: Any) -> None:
    rendered: Rendered = render(
        "fullnameOverride=acme", "nameOverride=scaler", "additionalLabels.team=platform", release="other"
    )
    assert {d["metadata"]["labels"].get("team") for d in rendered.docs if d["kind"] != "CustomResourceDefinition"} == {
        "platform"
    }
    deployment = rendered.one("Deployment")
    assert deployment["metadata"]["name"] == "acme-forwarder"
    assert deployment["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "scaler"
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    lease = _env(container)["NODEWRIGHT_FORWARDER_LEASE_NAME"]
    assert lease == "acme-forwarder"
    role = rendered.one("Role")
    named = [rule for rule in role["rules"] if rule.get("resourceNames")]
    assert named == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [lease],
            "verbs": ["get", "update"],
        }
    ]
    cluster_scoped = {
        d["metadata"]["name"] for d in rendered.of_kind("ClusterRole") + rendered.of_kind("ClusterRoleBinding")
    }
    assert cluster_scoped == {
        f"acme-{n}" for n in ("forwarder", "provisioner", "disruption", "planner", "interruption")
    }
    assert rendered.one("ServiceAccount")["metadata"]["name"] == "acme-forwarder"
    # Release "nodewright" keeps the names the stack's defaults expect.
    assert render().one("Deployment")["metadata"]["name"] == "nodewright-forwarder"


def test_a_release_named_otherwise_gets_the_chart_name_as_suffix(render: Any) -> None:
    rendered: Rendered = render(release="scaling")
    assert rendered.one("Deployment")["metadata"]["name"] == "scaling-nodewright-forwarder"


def test_options_irsa_digest_and_an_added_node_term(render: Any) -> None:
    node_term = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
    rendered: Rendered = render(
        "serviceAccount.roleArn=arn:aws:iam::123456789012:role/forwarder",
        "image.digest=sha256:" + "a" * 64,
        # Lists are replaced whole (Helm merges maps only): a user adding a term restates the built-in one.
        f"{node_term}.matchExpressions[0].key=karpenter.sh/nodepool",
        f"{node_term}.matchExpressions[0].operator=DoesNotExist",
        f"{node_term}.matchExpressions[1].key=eks.amazonaws.com/nodegroup",
        f"{node_term}.matchExpressions[1].operator=Exists",
    )
    account = rendered.one("ServiceAccount")
    assert account["metadata"]["annotations"] == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/forwarder"
    }
    pod = rendered.one("Deployment")["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "nodewright-forwarder@sha256:" + "a" * 64
    [term] = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
        {"key": "eks.amazonaws.com/nodegroup", "operator": "Exists"},
    ]


def _lint(helm: Path, *sets: str) -> subprocess.CompletedProcess[str]:
    args = ["lint", str(CHART), "--strict", "-n", "kube-system"]
    for value in sets:
        args += ["--set", value]
    return run_helm(helm, *args)


@pytest.mark.parametrize(
    ("sets", "named"),
    [
        (REQUIRED[1:], "missing property 'clusterName'"),
        ((*REQUIRED, "settings.NODEWRIGHT_FORWARDER_IDEL_SECONDS=1"), "NODEWRIGHT_FORWARDER_IDEL_SECONDS"),
    ],
)
def test_helm_lint_strict_fails_on_a_missing_value_or_a_misspelled_setting(
    helm: Path, sets: tuple[str, ...], named: str
) -> None:
    assert _lint(helm, *REQUIRED).returncode == 0
    done = _lint(helm, *sets)
    assert done.returncode != 0 and named in done.stdout + done.stderr, done.stdout + done.stderr


def test_names_match_the_cdk_stack(render: Any) -> None:
    """The Pod Identity association's defaults (infra/config.py) and the access entries' groups
    (infra/provisioner.py, workflow.py, planner.py, interruption.py) name the same ServiceAccount and groups as
    release `nodewright` of the chart; a rename on one side only would break authentication silently."""
    rendered: Rendered = render()
    namespace, service_account = (_constant("config.py", n) for n in ("DEFAULT_NAMESPACE", "DEFAULT_SERVICE_ACCOUNT"))
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


def test_the_planner_reads_nodeoverlays_and_writes_their_status(render: Any) -> None:
    rendered: Rendered = render()
    # service.overlay_status: the planner's tick; the provisioner lists them for its catalog.
    planner = _rules(rendered.one("ClusterRole", "nodewright-planner"))
    assert {
        ("nodewright.io", "nodeoverlays", "list"),
        ("nodewright.io", "nodeoverlays", "watch"),
        ("nodewright.io", "nodeoverlays", "get"),
        ("nodewright.io", "nodeoverlays/status", "patch"),
    } <= planner
    assert ("nodewright.io", "nodeoverlays", "list") in _rules(rendered.one("ClusterRole", "nodewright-provisioner"))
    assert ("nodewright.io", "nodeoverlays", "patch") not in planner  # status only, never the spec


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


def test_the_planner_watches_every_list_of_its_read_and_the_provisioner_its_nodes_and_nodeclaims(render: Any) -> None:
    """KubernetesCluster.read() with incremental reads follows each of its lists with a watch (adapters/informer.py),
    and the provisioner's reads follow Nodes and NodeClaims; without the verb every watch is refused and every tick
    or batch lists them all again. Nothing else watches."""
    from nodewright.adapters.kubernetes_cluster import CLUSTER_LISTS, NODECLAIMS, NODECLASSES, NODEPOOLS

    rendered: Rendered = render()
    lists = [(g, p) for g, _, p in (*NODEPOOLS, *NODECLASSES, NODECLAIMS)]
    lists += [
        (path.split("/")[2] if path.startswith("/apis/") else "", path.rsplit("/", 1)[1]) for path, *_ in CLUSTER_LISTS
    ]
    planner = _rules(rendered.one("ClusterRole", "nodewright-planner"))
    assert {(group, resource, "watch") for group, resource in lists} <= planner
    provisioner = {r for r in _rules(rendered.one("ClusterRole", "nodewright-provisioner")) if r[2] == "watch"}
    assert provisioner == {("", "nodes", "watch"), (NODECLAIMS[0], NODECLAIMS[2], "watch")}
    for name in ("disruption", "interruption"):
        assert not any(verb == "watch" for _, _, verb in _rules(rendered.one("ClusterRole", f"nodewright-{name}"))), (
            name
        )


def test_the_capacitybuffer_crd_is_the_shared_autoscaling_api() -> None:
    """The CapacityBuffer CRD is the SIG Autoscaling API as Karpenter's chart ships it (crds/: installed only where
    none exists), serving v1beta1 (stored) and v1alpha1 with one schema and the status subresource."""
    crd = yaml.safe_load((CHART / "crds" / "autoscaling.x-k8s.io_capacitybuffers.yaml").read_text())
    assert crd["metadata"]["name"] == "capacitybuffers.autoscaling.x-k8s.io"
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    assert {n: (v["served"], v["storage"]) for n, v in versions.items()} == {
        "v1beta1": (True, True),
        "v1alpha1": (True, False),
    }
    assert versions["v1beta1"]["schema"] == versions["v1alpha1"]["schema"]
    assert all(v["subresources"] == {"status": {}} for v in versions.values())
    spec = versions["v1beta1"]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert set(spec["properties"]) == {
        "provisioningStrategy", "podTemplateRef", "scalableRef", "replicas", "percentage", "limits"
    }  # fmt: skip


def test_functions_that_read_the_cluster_read_capacity_buffers_and_only_the_planner_writes_their_status(
    render: Any,
) -> None:
    """`capacity_buffers()` lists CapacityBuffers and gets what they name (every `read()`, and the provisioner's
    buffer payloads); the planner's tick writes their status."""
    rendered: Rendered = render()
    reads = {
        ("autoscaling.x-k8s.io", "capacitybuffers", "list"),
        ("autoscaling.x-k8s.io", "capacitybuffers", "get"),
        ("", "podtemplates", "get"),
        ("apps", "deployments", "get"),
        ("apps", "replicasets", "get"),
        ("apps", "statefulsets", "get"),
    }
    status = ("autoscaling.x-k8s.io", "capacitybuffers/status", "patch")
    for name in ("provisioner", "disruption", "planner", "interruption"):
        granted = _rules(rendered.one("ClusterRole", f"nodewright-{name}"))
        assert (reads <= granted) is (name != "interruption"), name
        assert (status in granted) is (name == "planner"), name
        assert ("autoscaling.x-k8s.io", "capacitybuffers", "patch") not in granted, name
