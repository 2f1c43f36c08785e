"""A thousand pending pods through the real handler against moto: every pod is accounted for once.

The timings the handler reports (cluster read, set-up, solve, first CreateFleet) are printed with `-s`;
nothing here asserts on time.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from handlers import Context, load_handler
from test_provisioner_handler import event, instances, manifests, pod

from nodewright.adapters.memory import InMemoryCluster


def thousand_pods() -> list[dict[str, Any]]:
    """A Karpenter-style mix: web (small), api (medium), workers (large), arm64-only and zonal-spread pods."""
    docs = []
    sizes = [("web", "250m", 400), ("api", "500m", 250), ("worker", "2", 150), ("arm", "500m", 100)]
    for app, cpu, count in sizes:
        extra: dict[str, Any] = {"nodeSelector": {"kubernetes.io/arch": "arm64"}} if app == "arm" else {}
        for i in range(count):
            doc = pod(f"{app}-{i}", cpu=cpu, **extra)
            doc["metadata"]["labels"] = {"app": app}
            docs.append(doc)
    spread = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "spread"}},
    }
    for i in range(100):
        doc = pod(f"spread-{i}", cpu="500m", topologySpreadConstraints=[spread])
        doc["metadata"]["labels"] = {"app": "spread"}
        docs.append(doc)
    return docs


def test_a_thousand_pods_are_each_nominated_once_and_fleets_stay_within_60_overrides(account: dict[str, Any]) -> None:
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(manifests(*thousand_pods()))
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    response = handler.handler(event(cluster), Context())
    nominated = Counter(p for c in response["nodeclaims"] for p in c["pods"])
    assert len(nominated) == 1000 and set(nominated.values()) == {1}
    assert response["summary"]["nominated"] == 1000
    assert len(instances(account["ec2"])) == len(response["nodeclaims"])
    # The spread pods are balanced over the three zones within maxSkew 1.
    zones = Counter(c["zone"] for c in response["nodeclaims"] for p in c["pods"] if p.startswith("web/spread-"))
    assert len(zones) == 3 and max(zones.values()) - min(zones.values()) <= 1
    print(
        f"\n1000 pods: {len(response['nodeclaims'])} NodeClaims, {response['fleet_requests']} CreateFleet calls, "
        f"timings {response['timings']}"
    )
