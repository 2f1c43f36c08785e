"""PersistentVolumeClaims, PersistentVolumes and StorageClasses: what the scheduler reads of a pod's volumes
(where they can be, whether they attach as EBS volumes, whether a pod can start with them at all)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from nodewright.model.errors import Collector
from nodewright.model.fields import parse_node_selector_term, parse_string_list
from nodewright.model.kube import check_kube_header, namespaced_name
from nodewright.model.objects import (
    EBS_CSI_DRIVER,
    NodeSelectorTerm,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from nodewright.model.requirements import Operator, Requirement
from nodewright.model.schema import check_fields, get_enum, get_list, get_map, get_str, join


def _metadata(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = doc.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _deleting(doc: Mapping[str, Any]) -> bool:
    """Whether the object is being deleted (a finalizer holds it): no pod can start with it."""
    return bool(_metadata(doc).get("deletionTimestamp"))


def parse_pvc(ctx: Collector, doc: Mapping[str, Any]) -> PersistentVolumeClaim | None:
    """A PersistentVolumeClaim: its storage class and, once bound, its volume."""
    check_kube_header(ctx, doc, "PersistentVolumeClaim")
    namespace, name = namespaced_name(doc)
    spec = get_map(ctx, doc.get("spec"), "spec") or {}
    storage_class = get_str(ctx, spec.get("storageClassName"), "spec.storageClassName")
    volume = get_str(ctx, spec.get("volumeName"), "spec.volumeName") or ""
    status = doc.get("status")
    unusable = ""
    if _deleting(doc):
        unusable = "is being deleted"
    elif isinstance(status, dict) and status.get("phase") == "Lost":
        unusable = "is Lost (its volume no longer exists)"
    return PersistentVolumeClaim(
        namespace, name, storage_class or "", volume, unusable, default_class=storage_class is None
    )


def parse_pv(ctx: Collector, doc: Mapping[str, Any]) -> PersistentVolume | None:
    """A PersistentVolume: its required node affinity (zonal volumes pin a zone), CSI driver, and whether it
    is a local or hostPath volume."""
    check_kube_header(ctx, doc, "PersistentVolume")
    _, name = namespaced_name(doc)
    spec = get_map(ctx, doc.get("spec"), "spec") or {}
    terms: list[NodeSelectorTerm] = []
    affinity = get_map(ctx, spec.get("nodeAffinity"), "spec.nodeAffinity") or {}
    check_fields(ctx, affinity, "spec.nodeAffinity", ("required",))
    required = get_map(ctx, affinity.get("required"), "spec.nodeAffinity.required") or {}
    check_fields(ctx, required, "spec.nodeAffinity.required", ("nodeSelectorTerms",))
    path = "spec.nodeAffinity.required.nodeSelectorTerms"
    for i, raw in enumerate(get_list(ctx, required.get("nodeSelectorTerms"), path) or []):
        term = parse_node_selector_term(ctx, raw, join(path, i))
        if term is not None:
            terms.append(term)
    csi = get_map(ctx, spec.get("csi"), "spec.csi") or {}
    driver = get_str(ctx, csi.get("driver"), "spec.csi.driver") or ""
    if not driver and spec.get("awsElasticBlockStore") is not None:
        driver = EBS_CSI_DRIVER  # an in-tree EBS volume is served by the EBS CSI driver (CSI migration)
    local = spec.get("local") is not None or spec.get("hostPath") is not None
    return PersistentVolume(name, tuple(terms), driver, local, _deleting(doc))


def parse_storage_class(ctx: Collector, doc: Mapping[str, Any]) -> tuple[StorageClass, bool] | None:
    """A StorageClass and whether it is the cluster default (its is-default-class annotation)."""
    check_kube_header(ctx, doc, "StorageClass")
    _, name = namespaced_name(doc)
    provisioner = get_str(ctx, doc.get("provisioner"), "provisioner", required=True) or ""
    mode = (
        get_enum(ctx, doc.get("volumeBindingMode"), "volumeBindingMode", ("Immediate", "WaitForFirstConsumer"))
        or "Immediate"
    )
    terms = []
    for i, raw in enumerate(get_list(ctx, doc.get("allowedTopologies"), "allowedTopologies") or []):
        where = join("allowedTopologies", i)
        term = get_map(ctx, raw, where, required=True)
        if term is None:
            continue
        check_fields(ctx, term, where, ("matchLabelExpressions",))
        requirements = []
        for j, raw_expr in enumerate(
            get_list(ctx, term.get("matchLabelExpressions"), join(where, "matchLabelExpressions")) or []
        ):
            expr_path = join(join(where, "matchLabelExpressions"), j)
            expr = get_map(ctx, raw_expr, expr_path, required=True)
            if expr is None:
                continue
            check_fields(ctx, expr, expr_path, ("key", "values"))
            key = get_str(ctx, expr.get("key"), join(expr_path, "key"), required=True)
            values = parse_string_list(ctx, expr.get("values"), join(expr_path, "values"))
            if not values:
                ctx.error(join(expr_path, "values"), "needs at least one value")
            elif key:
                requirements.append(Requirement(key, Operator.IN, values))
        terms.append(NodeSelectorTerm(tuple(requirements)))
    metadata = _metadata(doc)
    annotations = metadata.get("annotations") or {}
    is_default = (
        isinstance(annotations, dict) and annotations.get("storageclass.kubernetes.io/is-default-class") == "true"
    )
    created = metadata.get("creationTimestamp")
    if isinstance(created, datetime):  # YAML reads an unquoted timestamp as one
        utc = created.astimezone(UTC) if created.tzinfo else created
        created = utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    return StorageClass(name, provisioner, mode, tuple(terms), created if isinstance(created, str) else ""), is_default
