"""CapacityBuffer's pure core: validation with the field and the fix, replica arithmetic, virtual pods."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.model import capacitybuffer as cb
from nodewright.model.errors import Collector
from nodewright.model.loader import load_documents

TEMPLATE = {
    "apiVersion": "v1",
    "kind": "PodTemplate",
    "metadata": {"name": "web", "namespace": "shop"},
    "template": {
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "nodeName": "somewhere",
            "priorityClassName": "high",
            "containers": [
                {
                    "name": "app",
                    "image": "web",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                    "volumeMounts": [{"name": "data", "mountPath": "/d"}, {"name": "conf", "mountPath": "/c"}],
                }
            ],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "conf", "configMap": {"name": "conf"}},
            ],
        },
    },
}


def _buffer(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1alpha1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "room", "namespace": "shop", "uid": "u1"},
        "spec": spec,
    }


def _errors(doc: dict[str, Any]) -> dict[str, str]:
    """Field path -> its messages, joined."""
    ctx = Collector("test", "CapacityBuffer", "shop/room")
    cb.parse_capacity_buffer(ctx, doc)
    out: dict[str, str] = {}
    for e in ctx.errors:
        out[e.path] = f"{out.get(e.path, '')} | {e.message}"
    return out


@pytest.mark.parametrize(
    ("spec", "path", "fix"),
    [
        ({"podTemplateRef": {"name": "web"}, "scalableRef": {"kind": "Deployment", "name": "w"}}, "spec", "not both"),
        ({"replicas": 2}, "spec", "set podTemplateRef"),
        ({"podTemplateRef": {"name": "web"}}, "spec", "set spec.replicas"),
        ({"podTemplateRef": {"name": "web"}, "replicas": -1}, "spec.replicas", "at least 0"),
        ({"podTemplateRef": {"name": "web"}, "replicas": 1, "percentage": 5}, "spec.percentage", "scalableRef only"),
        ({"scalableRef": {"kind": "Job", "name": "j"}}, "spec.scalableRef.kind", "Deployment"),
        (
            {"scalableRef": {"apiGroup": "batch", "kind": "Deployment", "name": "j"}},
            "spec.scalableRef.apiGroup",
            "apps",
        ),
        (
            {"podTemplateRef": {"name": "web"}, "replicas": 1, "provisioningStrategy": "x/y"},
            "spec.provisioningStrategy",
            "active-capacity",
        ),
        ({"podTemplateRef": {"name": "web"}, "replicas": 1, "replica": 3}, "spec.replica", "replicas"),
    ],
)
def test_an_unusable_spec_names_the_field_and_the_fix(spec: dict[str, Any], path: str, fix: str) -> None:
    errors = _errors(_buffer(**spec))
    assert path in errors and fix in errors[path], errors


def test_both_api_versions_are_read_and_others_refused() -> None:
    assert _errors(_buffer(podTemplateRef={"name": "web"}, replicas=1)) == {}
    doc = {**_buffer(podTemplateRef={"name": "web"}, replicas=1), "apiVersion": "autoscaling.x-k8s.io/v2"}
    assert "v1beta1" in _errors(doc)["apiVersion"]


@pytest.mark.parametrize(
    ("replicas", "percentage", "limits", "expected"),
    [
        (None, None, {}, 0),  # nothing set: no pods
        (3, None, {}, 3),
        (3, 5, {}, 5),  # the larger of replicas and the percentage figure
        (6, 5, {"cpu": 2000}, 4),  # capped by the limits (2 CPU / 500m)
        (None, None, {"cpu": 2000, "memory": 3 * 2**30}, 3),  # limits alone, the tighter resource
        (2, None, {"nvidia.com/gpu": 4}, 2),  # a limit on a resource the pod does not request caps nothing
    ],
)
def test_desired_replicas(replicas: int | None, percentage: int | None, limits: dict[str, int], expected: int) -> None:
    requests = {"cpu": 500, "memory": 2**30, "pods": 1}
    assert cb.desired_replicas(replicas, percentage, limits, requests) == expected


def test_virtual_pods_are_sanitized_copies_of_the_template() -> None:
    inputs, errors = load_documents([TEMPLATE, _buffer(podTemplateRef={"name": "web"}, replicas=2)], "test")
    assert errors == []
    [resolution] = inputs.buffers
    assert resolution.ready and resolution.pod_template_ref == "web"
    pods = [p for p in inputs.pending_pods if cb.is_virtual(p)]
    assert [p.name for p in pods] == ["capacity-buffer-room-1", "capacity-buffer-room-2"]
    first = pods[0]
    assert first.labels == {"app": "web"} and first.namespace == "shop"
    assert first.priority == cb.VIRTUAL_POD_PRIORITY and first.priority_class_name == ""
    assert first.pvc_names == () and first.node_name == ""
    assert (first.requests["cpu"], first.requests["memory"]) == (500, 2**30)
    assert cb.buffer_of(first) == "shop/room"
    # The template itself is left as it was.
    assert TEMPLATE["template"]["spec"]["nodeName"] == "somewhere"  # type: ignore[index]


def test_sanitized_spec_drops_claims_and_their_mounts_only() -> None:
    spec = cb.sanitized_spec(TEMPLATE["template"]["spec"])  # type: ignore[index]
    assert [v["name"] for v in spec["volumes"]] == ["conf"]
    assert [m["name"] for m in spec["containers"][0]["volumeMounts"]] == ["conf"]
    assert "nodeName" not in spec and "priorityClassName" not in spec


def test_a_template_nodewright_cannot_read_is_resolution_failed() -> None:
    broken = {
        **TEMPLATE,
        "template": {"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "x"}}}]}},
    }
    found = cb.resolve(cb.CapacityBuffer("shop", "room", pod_template_ref="web", replicas=1), {"shop/web": broken}, {})
    assert (found.ready, found.reason, found.pods) == (False, cb.RESOLUTION_FAILED, ())
    assert "cpu" in found.message


def test_validate_reports_a_buffer_whose_reference_is_missing() -> None:
    _, errors = load_documents([_buffer(podTemplateRef={"name": "gone"}, replicas=1)], "test")
    [error] = errors
    assert error.path == "spec.podTemplateRef.name"
    assert 'podtemplates "gone" not found' in error.message and "add it" in error.message
