"""The Kubernetes side of the local world: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and KWOK, started from the cached binaries on 127.0.0.1 with free ports.
"""

from __future__ import annotations

import json
import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from nodewright.localworld import procs
from nodewright.localworld.pki import Pki

SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"
# KWOK simulates the kubelet of nodes carrying this label. A label, not an annotation: KWOK watches
# with it as a server-side selector, so removing the label makes the node leave KWOK's watch and its
# lease stop being renewed (with an annotation selector KWOK keeps heartbeating a node it once saw).
KWOK_LABEL_KEY = "kwok.x-k8s.io/node"
KWOK_LABEL_SELECTOR = f"{KWOK_LABEL_KEY}=fake"
# The controller manager's and the scheduler's client rate to the API server. Their defaults (20/30 and 50/100
# requests a second) pace a world of thousands of nodes: the ReplicaSet controller creating pods, the garbage
# collector removing a deleted node's pods and the scheduler binding or marking pods all queue behind them,
# while the API server on 127.0.0.1 has room for more.
CLIENT_QPS = 200
CLIENT_BURST = 400


@dataclass(frozen=True)
class Timing:
    """Node-health timing. A lease much shorter than the grace period keeps healthy KWOK nodes
    Ready, while a released node turns NotReady within about `grace` seconds instead of 50."""

    node_lease_seconds: int = 10
    node_monitor_grace: str = "20s"
    node_monitor_period: str = "2s"


def write_kubeconfig(path: Path, server: str, pki: Pki, user: str = "nodewright-admin") -> None:
    """An admin kubeconfig using the client certificate (JSON is valid YAML)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority": str(pki.ca_cert)}}],
        "users": [
            {"name": user, "user": {"client-certificate": str(pki.admin_cert), "client-key": str(pki.admin_key)}}
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
        "current-context": "local",
    }
    path.write_text(json.dumps(doc, indent=2))


def write_webhook_kubeconfig(path: Path, webhook_port: int, pki: Pki) -> None:
    """The kubeconfig-shaped file kube-apiserver uses to reach the token-review webhook."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "eks-token-webhook",
                "cluster": {
                    "server": f"https://127.0.0.1:{webhook_port}/authenticate",
                    "certificate-authority": str(pki.ca_cert),
                },
            }
        ],
        "users": [{"name": "kube-apiserver", "user": {}}],
        "contexts": [{"name": "webhook", "context": {"cluster": "eks-token-webhook", "user": "kube-apiserver"}}],
        "current-context": "webhook",
    }
    path.write_text(json.dumps(doc, indent=2))


# KWOK plays 4 pod stages and renews 4 node leases at a time by default, each an API round trip: tens of
# thousands of pods take minutes to start, and thousands of leases fall behind on a busy API server until the
# node lifecycle controller marks nodes NotReady and evicts their pods. Once a KwokConfiguration is given, KWOK
# leaves every option it omits at zero, not at its default, so all of them are spelled out (defaults elsewhere).
KWOK_OPTIONS = """apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 16
  nodeLeaseParallelism: 16
  nodePlayStageParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enableDebuggingHandlers: true
  enableProfilingHandler: true"""


def write_kwok_config(path: Path, stages_dir: Path) -> None:
    """One multi-document KWOK config: its options (KWOK_OPTIONS) and the stage definitions shipped with the
    KWOK module."""
    docs = [f.read_text().strip() for f in sorted(stages_dir.glob("*.yaml"))]
    if not docs:
        raise FileNotFoundError(f"no KWOK stages in {stages_dir}; rebuild the local world binaries")
    path.write_text("\n---\n".join([KWOK_OPTIONS, *docs]) + "\n")


def _https_ok(url: str, pki: Pki) -> bool:
    context = ssl.create_default_context(cafile=str(pki.ca_cert))
    context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
    with urllib.request.urlopen(url, context=context, timeout=3) as response:
        return bool(response.status == 200)


def _http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=3) as response:
        return bool(response.status == 200)


def start_etcd(bin_dir: Path, state: Path, logs: Path, timeout: float) -> tuple[procs.Proc, int]:
    """Start etcd with its data under `state`; fsync is off because the data is throw-away."""
    client, peer = procs.free_port(), procs.free_port()
    proc = procs.start(
        "etcd",
        [
            str(bin_dir / "etcd"),
            "--name=local",
            f"--data-dir={state / 'etcd'}",
            f"--listen-client-urls=http://127.0.0.1:{client}",
            f"--advertise-client-urls=http://127.0.0.1:{client}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=local=http://127.0.0.1:{peer}",
            "--listen-metrics-urls=",
            "--unsafe-no-fsync=true",
            "--quota-backend-bytes=2147483648",
            "--log-level=warn",
        ],
        logs,
    )
    procs.wait_ready(proc, lambda: _http_ok(f"http://127.0.0.1:{client}/health"), timeout)
    return proc, client


def start_apiserver(
    bin_dir: Path, pki: Pki, etcd_port: int, webhook_kubeconfig: Path, logs: Path, timeout: float
) -> tuple[procs.Proc, int]:
    """Start kube-apiserver on 127.0.0.1 and wait for /readyz."""
    port = procs.free_port()
    proc = procs.start(
        "kube-apiserver",
        [
            str(bin_dir / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            # No kube-proxy or Service network exists; do not publish an endpoint for `kubernetes`.
            "--endpoint-reconciler-type=none",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.sa_pub}",
            f"--service-account-signing-key-file={pki.sa_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC",
            f"--authentication-token-webhook-config-file={webhook_kubeconfig}",
            "--authentication-token-webhook-version=v1",
            "--authentication-token-webhook-cache-ttl=30s",
            "--allow-privileged=true",
            "--profiling=false",
            "--v=1",
        ],
        logs,
    )
    procs.wait_ready(proc, lambda: _https_ok(f"https://127.0.0.1:{port}/readyz", pki), timeout)
    return proc, port


def start_controllers(
    bin_dir: Path, pki: Pki, kubeconfig: Path, stages_dir: Path, state: Path, logs: Path, timing: Timing
) -> tuple[procs.Proc, procs.Proc, procs.Proc]:
    """Start kube-controller-manager (all default controllers), kube-scheduler and KWOK.

    Their readiness is judged through the API (the default ServiceAccount, nodes becoming Ready),
    so this returns as soon as they are launched.
    """
    kcm = procs.start(
        "kube-controller-manager",
        [
            str(bin_dir / "kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={procs.free_port()}",
            "--leader-elect=false",
            "--controllers=*",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki.sa_key}",
            f"--root-ca-file={pki.ca_cert}",
            f"--cluster-signing-cert-file={pki.ca_cert}",
            f"--cluster-signing-key-file={pki.ca_key}",
            f"--cluster-cidr={POD_CIDR}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--node-monitor-period={timing.node_monitor_period}",
            f"--node-monitor-grace-period={timing.node_monitor_grace}",
            f"--kube-api-qps={CLIENT_QPS}",
            f"--kube-api-burst={CLIENT_BURST}",
            "--v=1",
        ],
        logs,
    )
    scheduler = procs.start(
        "kube-scheduler",
        [
            str(bin_dir / "kube-scheduler"),
            f"--kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={procs.free_port()}",
            "--leader-elect=false",
            f"--kube-api-qps={CLIENT_QPS}",
            f"--kube-api-burst={CLIENT_BURST}",
            "--v=1",
        ],
        logs,
    )
    kwok_config = state / "kwok.yaml"
    write_kwok_config(kwok_config, stages_dir)
    kwok = procs.start(
        "kwok",
        [
            str(bin_dir / "kwok"),
            f"--kubeconfig={kubeconfig}",
            f"--config={kwok_config}",
            f"--manage-nodes-with-label-selector={KWOK_LABEL_SELECTOR}",
            f"--node-lease-duration-seconds={timing.node_lease_seconds}",
            f"--server-address=127.0.0.1:{procs.free_port()}",
            "--cidr=10.244.0.0/16",
            "--node-ip=10.0.0.1",
        ],
        logs,
    )
    return kcm, scheduler, kwok
