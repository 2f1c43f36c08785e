"""cluster/: the CRDs are what the generator writes, and the manifests agree with the code that reads them."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import yaml

from nodewright import settings
from nodewright.forwarder import config as forwarder_config

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = ROOT / "cluster"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("crd_generate", CLUSTER / "crds" / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _docs(relative: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((CLUSTER / relative).read_text()) if d]


def _all_docs() -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((CLUSTER / "kustomization.yaml").read_text())
    return [doc for path in kustomization["resources"] for doc in _docs(path)]


def test_committed_crds_are_what_the_generator_writes() -> None:
    for name, text in _generator().render().items():
        assert (CLUSTER / "crds" / name).read_text() == text, f"run python cluster/crds/generate.py ({name})"


def test_crd_schemas_are_structural_without_preserve_unknown_fields() -> None:
    for path in sorted((CLUSTER / "crds").glob("*.yaml")):
        text = path.read_text()
        assert "x-kubernetes-preserve-unknown-fields" not in text
        crd = yaml.safe_load(text)
        version = crd["spec"]["versions"][0]
        assert crd["spec"]["group"] == "nodewright.io" and version["name"] == "v1"
        assert version["subresources"] == {"status": {}}
        schema = version["schema"]["openAPIV3Schema"]
        assert schema["properties"]["spec"]["type"] == "object" and schema["properties"]["spec"]["properties"]


def test_kustomization_lists_every_manifest_once() -> None:
    kustomization = yaml.safe_load((CLUSTER / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    on_disk = {str(p.relative_to(CLUSTER)) for p in CLUSTER.rglob("*.yaml") if p.name != "kustomization.yaml"}
    assert listed == on_disk and len(listed) == len(kustomization["resources"])


def test_deployment_sets_every_setting_the_forwarder_requires() -> None:
    docs = _all_docs()
    configmap = next(d for d in docs if d["kind"] == "ConfigMap")
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = set(configmap["data"]) | {e["name"] for e in container["env"]}
    for required in (settings.CLUSTER, settings.PROVISIONER_FUNCTION, settings.REGION, "POD_NAME", "POD_NAMESPACE"):
        assert required in env
    # Every tunable in the ConfigMap is one the forwarder reads (a typo would be silently ignored).
    documented = set(re.findall(r"\| (NODEWRIGHT_FORWARDER_[A-Z_]+) \|", forwarder_config.__doc__ or ""))
    for name in configmap["data"]:
        if name.startswith(forwarder_config.PREFIX):
            assert name in documented, name
    assert deployment["spec"]["replicas"] == 2
    probes = {container["livenessProbe"]["httpGet"]["path"], container["readinessProbe"]["httpGet"]["path"]}
    assert probes == {"/healthz", "/readyz"}
    assert container["resources"]["requests"] and container["resources"]["limits"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    pdb = next(d for d in docs if d["kind"] == "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"] == deployment["spec"]["selector"]


def _constant(module: str, name: str) -> str:
    match = re.search(rf'^{name} = "([^"]+)"', (ROOT / "infra" / module).read_text(), re.MULTILINE)
    assert match, f"{name} not found in infra/{module}"
    return match.group(1)


def test_names_match_the_cdk_stack() -> None:
    """The Pod Identity association (infra/forwarder.py) and the access entries' groups (infra/provisioner.py,
    workflow.py, planner.py, interruption.py) name the same ServiceAccount and groups as the manifests; a
    rename on one side only breaks auth silently."""
    # Read as text: infra/ imports the CDK, which the unit tests do not need to load.
    NAMESPACE, SERVICE_ACCOUNT = (_constant("forwarder.py", name) for name in ("NAMESPACE", "SERVICE_ACCOUNT"))
    stack_groups = sorted(
        _constant(module, "KUBERNETES_GROUP")
        for module in ("provisioner.py", "workflow.py", "planner.py", "interruption.py")
    )
    docs = _all_docs()
    account = next(d for d in docs if d["kind"] == "ServiceAccount")
    assert (account["metadata"]["namespace"], account["metadata"]["name"]) == (NAMESPACE, SERVICE_ACCOUNT)
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == SERVICE_ACCOUNT
    bindings = [d for d in docs if d["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    forwarder_subjects = [s for b in bindings for s in b["subjects"] if s["kind"] == "ServiceAccount"]
    assert forwarder_subjects and all(
        (s["namespace"], s["name"]) == (NAMESPACE, SERVICE_ACCOUNT) for s in forwarder_subjects
    )
    groups = [s["name"] for b in bindings for s in b["subjects"] if s["kind"] == "Group"]
    assert sorted(groups) == stack_groups


def test_the_forwarder_only_reads_pods_and_nodes_and_writes_pod_event_times_cluster_wide() -> None:
    [role] = [d for d in _docs("rbac/forwarder.yaml") if d["kind"] == "ClusterRole"]
    granted = {
        (g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
    }
    # It watches nodes to report the ones that joined still tainted karpenter.sh/unregistered; the
    # provisioner, not the forwarder, takes the taint off. It writes only NodeClaims' lastPodEventTime.
    assert granted == {
        ("", "pods", "list"),
        ("", "pods", "watch"),
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        ("nodewright.io", "nodeclaims", "list"),
        ("nodewright.io", "nodeclaims/status", "patch"),
    }
