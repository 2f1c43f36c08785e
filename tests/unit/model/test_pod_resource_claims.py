"""A pod that lists resource claims at pod level is refused like one whose containers consume claims (DRA is not
supported yet): Kubernetes allocates pod-level claims even when no container names them."""

from nodewright.model.loader import load_documents


def test_pod_level_resource_claims_are_refused_with_the_field_named() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "app"}], "resourceClaims": [{"name": "gpu-claim"}]},
    }
    inputs, errors = load_documents([doc], "test")
    assert inputs.pending_pods == () or list(inputs.pending_pods) == []
    assert [str(e) for e in errors] == [
        "test: Pod/default/p: spec.resourceClaims: dynamic resource claims are not supported yet by nodewright"
    ]
