"""The Kubernetes adapter's VolumeAttachment read (the disruption workflow's CheckVolumes): every page of
storage.k8s.io/v1 volumeattachments, consistently (not from the watch cache: a detached volume must be seen gone),
kept to the node's (the API server has no spec.nodeName field selector for them)."""

from __future__ import annotations

from test_kubernetes_cluster import _cluster, _Server, server

__all__ = ["server"]

PATH = "/apis/storage.k8s.io/v1/volumeattachments"


def attachment(name: str, node: str) -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": {"nodeName": node, "source": {"persistentVolumeName": f"pv-{name}"}}}


def test_the_nodes_volume_attachments_are_read_from_every_page(server: _Server) -> None:
    server.routes[("GET", PATH)] = (200, {"items": [attachment("a", "node-a")], "metadata": {"continue": "p2"}})
    server.routes[("GET", f"{PATH}?p2")] = (
        200,
        {"items": [attachment("b", "node-b"), attachment("c", "node-a")], "metadata": {}},
    )
    found = _cluster(server, ["t"]).volume_attachments("node-a")
    assert [d["metadata"]["name"] for d in found] == ["a", "c"]
    assert found[0]["kind"] == "VolumeAttachment" and found[0]["apiVersion"] == "storage.k8s.io/v1"
    [first, _] = [r for r in server.requests if r["path"] == PATH]
    assert "resourceVersion" not in first["query"]
