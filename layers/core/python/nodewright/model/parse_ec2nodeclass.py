"""Parse and validate EC2NodeClass documents exactly as Karpenter v1 users write them.

Accepted API versions: `karpenter.k8s.aws/v1` unchanged and `nodewright.io/v1`. The rules are those of the
AWS provider v1.14's CRD and CEL validations (selector terms, aliases and AMI families, block devices,
kubelet settings, metadata options, tags), plus a few checks of what EC2 would refuse only at launch (iops
and throughput for the volume type). Fields Karpenter has but nodewright does not support yet are refused
by name; nothing is silently ignored. Every error of a document is collected.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from nodewright import tags as ownership
from nodewright.model.durations import DurationError, parse_duration
from nodewright.model.errors import Collector, ValidationError
from nodewright.model.fields import parse_string_list
from nodewright.model.nodeclass import (
    AMISelectorTerm,
    BlockDevice,
    BlockDeviceMapping,
    EC2NodeClass,
    KubeletConfiguration,
    MetadataOptions,
    SelectorTerm,
)
from nodewright.model.parse import check_header, object_name
from nodewright.model.quantity import QuantityError, parse_quantity
from nodewright.model.schema import (
    check_fields,
    get_bool,
    get_enum,
    get_int,
    get_list,
    get_map,
    get_resources,
    get_str,
    get_str_map,
    join,
    map_key,
    suggest,
)

NODECLASS_API_VERSIONS = ("karpenter.k8s.aws/v1", "nodewright.io/v1")

# AMI families of Karpenter v1.14's aliases and spec.amiFamily. nodewright bootstraps AL2023, Bottlerocket, AL2
# (bootstrap.sh) and Windows (Start-EKSBootstrap.ps1) nodes, and launches Custom ones with the user's own user data.
ALIAS_FAMILIES = ("al2023", "bottlerocket", "al2", "windows2019", "windows2022", "windows2025")
SUPPORTED_ALIAS_FAMILIES = ALIAS_FAMILIES
# spec.kubelet's fields (Karpenter v1's KubeletConfiguration).
KUBELET_FIELDS = (
    "maxPods",
    "podsPerCore",
    "systemReserved",
    "kubeReserved",
    "evictionHard",
    "evictionSoft",
    "evictionSoftGracePeriod",
    "evictionMaxPodGracePeriod",
    "imageGCHighThresholdPercent",
    "imageGCLowThresholdPercent",
    "cpuCFSQuota",
    "clusterDNS",
)
AMI_FAMILY_SETTINGS = ("AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025")
SUPPORTED_AMI_FAMILY_SETTINGS = {
    "AL2023": "al2023",
    "Bottlerocket": "bottlerocket",
    "Custom": "custom",
    "AL2": "al2",
    "Windows2019": "windows2019",
    "Windows2022": "windows2022",
    "Windows2025": "windows2025",
}

VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
VOLUME_SIZE = re.compile(r"^([1-9][0-9]*)(Gi|G|Ti|T)$")
# The largest size per unit that Karpenter's volumeSize pattern allows (all about 64 TB, EBS's limit).
VOLUME_SIZE_MAX = {"Gi": 59000, "G": 64000, "Ti": 58, "T": 64}
EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
RESERVED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")
PERCENT = re.compile(r"^(\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%$")
RESTRICTED_TAGS = ownership.RESTRICTED
_ID_PATTERNS = {
    "ami": re.compile(r"^ami-[0-9a-z]+$"),
    "subnet": re.compile(r"^subnet-[0-9a-z]+$"),
    "sg": re.compile(r"^sg-[0-9a-z]+$"),
    "cr": re.compile(r"^cr-[0-9a-z]+$"),
}
OWNER_ID = re.compile(r"^[0-9]{12}$")


EC2NODECLASS_FIELDS = (
    "amiFamily",
    "amiSelectorTerms",
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "capacityReservationSelectorTerms",
    "role",
    "instanceProfile",
    "userData",
    "blockDeviceMappings",
    "metadataOptions",
    "kubelet",
    "tags",
    "associatePublicIPAddress",
    "detailedMonitoring",
    "instanceStorePolicy",
    "context",
)
# Karpenter fields nodewright does not support yet, and pre-v1 fields, each with what to do instead.
EC2NODECLASS_UNSUPPORTED_FIELDS = {
    "networkInterfaces": "networkInterfaces (EFA interfaces) is not supported yet by nodewright; remove it and "
    "nodes get one ENA interface",
    "connectionTracking": "connectionTracking is not supported yet by nodewright; remove it and nodes keep EC2's "
    "default connection tracking timeouts",
    "cpuOptions": "cpuOptions is not supported yet by nodewright; remove it",
    "ipPrefixCount": "ipPrefixCount (prefix delegation) is not supported yet by nodewright; remove it",
    "placementGroupSelector": "placementGroupSelector is not supported yet by nodewright; remove it",
    "amiSelector": "was replaced by amiSelectorTerms (a list of terms such as - alias: al2023@latest)",
    "subnetSelector": "was replaced by subnetSelectorTerms (a list of terms such as - tags: {...})",
    "securityGroupSelector": "was replaced by securityGroupSelectorTerms (a list of terms such as - tags: {...})",
    "launchTemplate": "custom launch templates are not supported (Karpenter removed them too); use the "
    "EC2NodeClass fields instead",
}


def parse_ec2nodeclass(doc: Mapping[str, Any], source: str = "") -> tuple[EC2NodeClass | None, list[ValidationError]]:
    """Validate an EC2NodeClass document (already YAML-loaded) and build an `EC2NodeClass`.

    Returns the EC2NodeClass (None when any error was found) and every error found in the document.
    """
    ctx = Collector(source, "EC2NodeClass", object_name(doc))
    node_class = ec2nodeclass_from(ctx, doc)
    return (node_class if ctx.ok else None), ctx.errors


def ec2nodeclass_from(ctx: Collector, doc: Mapping[str, Any]) -> EC2NodeClass | None:
    """Like `parse_ec2nodeclass`, reporting into an existing collector."""
    api_version = check_header(ctx, doc, NODECLASS_API_VERSIONS)
    spec = get_map(ctx, doc.get("spec"), "spec", required=True)
    if spec is None:
        return None
    check_fields(ctx, spec, "spec", EC2NODECLASS_FIELDS, unsupported=EC2NODECLASS_UNSUPPORTED_FIELDS)

    ami_terms = _ami_terms(ctx, spec.get("amiSelectorTerms"), "spec.amiSelectorTerms")
    family_setting = _ami_family(ctx, spec.get("amiFamily"), ami_terms)
    subnets = _selector_terms(
        ctx, spec.get("subnetSelectorTerms"), "spec.subnetSelectorTerms", ("tags", "id"), "subnet", required=True
    )
    groups = _selector_terms(
        ctx,
        spec.get("securityGroupSelectorTerms"),
        "spec.securityGroupSelectorTerms",
        ("tags", "id", "name"),
        "sg",
        required=True,
    )
    reservations = _selector_terms(
        ctx,
        spec.get("capacityReservationSelectorTerms"),
        "spec.capacityReservationSelectorTerms",
        ("tags", "id", "ownerID"),
        "cr",
        required=False,
    )
    role = get_str(ctx, spec.get("role"), "spec.role")
    profile = get_str(ctx, spec.get("instanceProfile"), "spec.instanceProfile")
    if role is not None and profile is not None:
        ctx.error("spec.instanceProfile", "set exactly one of role and instanceProfile, not both")
    elif role is None and profile is None and "role" not in spec and "instanceProfile" not in spec:
        ctx.error("spec.role", "set exactly one of role (nodewright manages the instance profile) or instanceProfile")
    for field_name, text in (("role", role), ("instanceProfile", profile)):
        if text == "":
            ctx.error(join("spec", field_name), "must not be empty")
    user_data = get_str(ctx, spec.get("userData"), "spec.userData") or ""
    mappings = _block_device_mappings(ctx, spec.get("blockDeviceMappings"), "spec.blockDeviceMappings")
    metadata_options = _metadata_options(ctx, spec.get("metadataOptions"), "spec.metadataOptions")
    kubelet = _kubelet(ctx, spec.get("kubelet"), "spec.kubelet")
    tags = _tags(ctx, spec.get("tags"), "spec.tags")
    public_ip = get_bool(ctx, spec.get("associatePublicIPAddress"), "spec.associatePublicIPAddress")
    monitoring = get_bool(ctx, spec.get("detailedMonitoring"), "spec.detailedMonitoring")
    store_policy = get_enum(ctx, spec.get("instanceStorePolicy"), "spec.instanceStorePolicy", ("RAID0",)) or ""
    context = get_str(ctx, spec.get("context"), "spec.context") or ""
    if not ctx.ok:
        return None
    return EC2NodeClass(
        name=object_name(doc),
        ami_selector_terms=ami_terms,
        subnet_selector_terms=subnets,
        security_group_selector_terms=groups,
        capacity_reservation_selector_terms=reservations,
        role=role or "",
        instance_profile=profile or "",
        user_data=user_data,
        block_device_mappings=mappings,
        metadata_options=metadata_options,
        kubelet=kubelet,
        tags=tags,
        associate_public_ip_address=public_ip,
        detailed_monitoring=bool(monitoring),
        instance_store_policy=store_policy,
        api_version=api_version,
        source=ctx.source,
        context=context,
        ami_family_setting=family_setting,
    )


def _tag_map(ctx: Collector, value: Any, path: str) -> dict[str, str]:
    """A selector term's tags: 1 to 20 of them, none empty ("*" matches any value)."""
    tags = get_str_map(ctx, value, path)
    if isinstance(value, dict) and not value:
        # Karpenter's API drops an empty map and then refuses the term; selecting on no tag at all would
        # match every subnet, security group or image the account can see.
        ctx.error(path, "must name at least one tag (use '*' as the value to match any value of a key)")
    if len(tags) > 20:
        ctx.error(path, f"has {len(tags)} tags; at most 20 are allowed in one term")
    for key, item in tags.items():
        if not key or not item:
            ctx.error(map_key(path, key), "empty tag keys or values are not supported (use '*' to match any value)")
    return tags


def _exclusive(
    ctx: Collector, term: Mapping[str, Any], path: str, exclusive: tuple[str, ...], fields: tuple[str, ...]
) -> None:
    """Report each of `exclusive` that is set together with another of `fields` in the same term."""
    present = [f for f in fields if f in term]
    for field_name in exclusive:
        others = [f for f in present if f != field_name]
        if field_name in term and others:
            ctx.error(join(path, field_name), f"cannot be combined with {', '.join(others)} in the same term")


def _ami_terms(ctx: Collector, value: Any, path: str) -> tuple[AMISelectorTerm, ...]:
    items = get_list(ctx, value, path, required=True)
    if items is None:
        return ()
    if not items:
        ctx.error(path, "must have at least one term, e.g. - alias: al2023@latest")
        return ()
    if len(items) > 30:
        ctx.error(path, f"has {len(items)} terms; at most 30 are allowed")
    fields = ("alias", "id", "name", "owner", "tags", "ssmParameter")
    terms = []
    for i, raw in enumerate(items):
        where = join(path, i)
        term = get_map(ctx, raw, where, required=True)
        if term is None:
            continue
        check_fields(ctx, term, where, fields)
        if not any(f in term for f in ("alias", "id", "name", "tags", "ssmParameter")):
            ctx.error(where, "needs one of alias, id, name, tags or ssmParameter (owner only narrows name or tags)")
            continue
        # Karpenter lets ssmParameter share a term with id or alias and then ignores it; nodewright refuses that.
        _exclusive(ctx, term, where, ("alias", "id", "ssmParameter"), fields)
        alias = get_str(ctx, term.get("alias"), join(where, "alias")) or ""
        if alias:
            _check_alias(ctx, alias, join(where, "alias"))
            if len(items) != 1:
                ctx.error(join(where, "alias"), "an alias term must be the only amiSelectorTerm")
        ami_id = get_str(ctx, term.get("id"), join(where, "id")) or ""
        if ami_id and not _ID_PATTERNS["ami"].match(ami_id):
            ctx.error(join(where, "id"), f'"{ami_id}" is not an AMI id (ami-0123456789abcdef0)')
        terms.append(
            AMISelectorTerm(
                alias=alias,
                id=ami_id,
                name=get_str(ctx, term.get("name"), join(where, "name")) or "",
                owner=get_str(ctx, term.get("owner"), join(where, "owner")) or "",
                tags=_tag_map(ctx, term.get("tags"), join(where, "tags")) if "tags" in term else {},
                ssm_parameter=get_str(ctx, term.get("ssmParameter"), join(where, "ssmParameter")) or "",
            )
        )
    return tuple(terms)


def _check_alias(ctx: Collector, alias: str, path: str) -> None:
    """family@version with a family Karpenter knows; any version (Karpenter resolves it, or finds no image)."""
    if len(alias) > 30 or not re.match(r"^[a-zA-Z0-9]+@.+$", alias):
        ctx.error(path, f'"{alias}" is not family@version, e.g. al2023@latest or bottlerocket@v1.20.0')
        return
    family, _, version = alias.partition("@")
    if family not in ALIAS_FAMILIES:
        near = suggest(family, SUPPORTED_ALIAS_FAMILIES)
        hint = (
            f"did you mean {near}@{version}?"
            if near
            else f"use one of {', '.join(ALIAS_FAMILIES)} (e.g. al2023@latest)"
        )
        ctx.error(path, f'family "{family}" is not an AMI alias family; {hint}')
        return
    if family.startswith("windows") and version != "latest":
        ctx.error(path, f"windows families only take the version latest, not {version}")


def _ami_family(ctx: Collector, value: Any, terms: tuple[AMISelectorTerm, ...]) -> str:
    """spec.amiFamily lower-cased ("" when unset): required without an alias, else the alias's family or Custom."""
    path = "spec.amiFamily"
    alias_family = next((t.alias.split("@", 1)[0] for t in terms if t.alias), "")
    text = get_str(ctx, value, path)
    if text is None:
        if terms and not alias_family:
            ctx.error(
                path,
                "is required when amiSelectorTerms has no alias term; set AL2023, Bottlerocket, AL2, Windows2022 "
                "or Custom",
            )
        return ""
    if text not in AMI_FAMILY_SETTINGS:
        near = suggest(text, SUPPORTED_AMI_FAMILY_SETTINGS)
        hint = f"did you mean {near}?" if near else f"use one of {', '.join(AMI_FAMILY_SETTINGS)}"
        removed = " (Ubuntu was removed in Karpenter v1; use Custom)" if text == "Ubuntu" else ""
        ctx.error(path, f'"{text}" is not an AMI family{removed}; {hint}')
        return ""
    family = SUPPORTED_AMI_FAMILY_SETTINGS[text]
    if alias_family and family not in (alias_family, "custom"):
        ctx.error(
            path,
            f"{text} does not match the alias family {alias_family}; remove amiFamily (the alias sets it) or "
            "set Custom",
        )
    return family


def _selector_terms(
    ctx: Collector, value: Any, path: str, fields: tuple[str, ...], id_kind: str, required: bool
) -> tuple[SelectorTerm, ...]:
    items = get_list(ctx, value, path, required=required)
    if items is None:
        return ()
    if required and not items:
        ctx.error(path, "must have at least one term, e.g. - tags: {karpenter.sh/discovery: my-cluster}")
        return ()
    if len(items) > 30:
        ctx.error(path, f"has {len(items)} terms; at most 30 are allowed")
    selecting = tuple(f for f in fields if f != "ownerID")
    terms = []
    for i, raw in enumerate(items):
        where = join(path, i)
        term = get_map(ctx, raw, where, required=True)
        if term is None:
            continue
        check_fields(ctx, term, where, fields, unsupported=_RESERVATION_TERM_UNSUPPORTED if id_kind == "cr" else None)
        if not any(f in term for f in selecting):
            also = " (ownerID only narrows tags)" if "ownerID" in fields else ""
            ctx.error(where, f"needs one of {', '.join(selecting)}{also}")
            continue
        _exclusive(ctx, term, where, ("id", "name"), fields)
        term_id = get_str(ctx, term.get("id"), join(where, "id")) or ""
        if term_id and not _ID_PATTERNS[id_kind].match(term_id):
            ctx.error(join(where, "id"), f'"{term_id}" is not a {id_kind} id ({id_kind}-0123456789abcdef0)')
        owner_id = get_str(ctx, term.get("ownerID"), join(where, "ownerID")) or ""
        if "ownerID" in term and not OWNER_ID.match(owner_id):
            ctx.error(join(where, "ownerID"), f'"{owner_id}" is not an AWS account id (12 digits, e.g. 012345678901)')
        terms.append(
            SelectorTerm(
                tags=_tag_map(ctx, term.get("tags"), join(where, "tags")) if "tags" in term else {},
                id=term_id,
                name=get_str(ctx, term.get("name"), join(where, "name")) or "",
                owner_id=owner_id,
            )
        )
    return tuple(terms)


_RESERVATION_TERM_UNSUPPORTED = {
    "instanceMatchCriteria": "instanceMatchCriteria (open or targeted reservations) is not supported yet by "
    "nodewright; select reservations by id or tags",
}


def _block_device_mappings(ctx: Collector, value: Any, path: str) -> tuple[BlockDeviceMapping, ...]:
    items = get_list(ctx, value, path)
    if items is None:
        return ()
    if len(items) > 50:
        ctx.error(path, f"has {len(items)} mappings; at most 50 are allowed")
    out = []
    for i, raw in enumerate(items):
        where = join(path, i)
        mapping = get_map(ctx, raw, where, required=True)
        if mapping is None:
            continue
        check_fields(ctx, mapping, where, ("deviceName", "rootVolume", "ebs"))
        device = get_str(ctx, mapping.get("deviceName"), join(where, "deviceName"), required=True)
        root = get_bool(ctx, mapping.get("rootVolume"), join(where, "rootVolume")) or False
        ebs = _ebs(ctx, mapping.get("ebs"), join(where, "ebs"))
        if device and ebs:
            out.append(BlockDeviceMapping(device_name=device, ebs=ebs, root_volume=root))
    if sum(1 for m in out if m.root_volume) > 1:
        ctx.error(path, "only one mapping may set rootVolume: true")
    return tuple(out)


def _ebs(ctx: Collector, value: Any, path: str) -> BlockDevice | None:
    ebs = get_map(ctx, value, path, required=True)
    if ebs is None:
        return None
    check_fields(
        ctx,
        ebs,
        path,
        (
            "volumeSize",
            "volumeType",
            "iops",
            "throughput",
            "encrypted",
            "kmsKeyID",
            "deleteOnTermination",
            "snapshotID",
            "volumeInitializationRate",
        ),
    )
    size_bytes = _volume_size(ctx, ebs.get("volumeSize"), join(path, "volumeSize"))
    snapshot = get_str(ctx, ebs.get("snapshotID"), join(path, "snapshotID")) or ""
    if "volumeSize" not in ebs and not snapshot:
        ctx.error(path, "set volumeSize or snapshotID")
    rate = get_int(ctx, ebs.get("volumeInitializationRate"), join(path, "volumeInitializationRate"), 100, 300)
    if rate is not None and not snapshot:
        ctx.error(join(path, "volumeInitializationRate"), "applies to volumes created from a snapshot; set snapshotID")
    volume_type = get_enum(ctx, ebs.get("volumeType"), join(path, "volumeType"), VOLUME_TYPES) or "gp3"
    # EC2's ranges and volume types for iops and throughput, checked here rather than at the first launch.
    iops = get_int(ctx, ebs.get("iops"), join(path, "iops"), minimum=100, maximum=256000)
    if iops is not None and volume_type not in ("io1", "io2", "gp3"):
        ctx.error(join(path, "iops"), f"iops applies to io1, io2 and gp3 volumes only, not {volume_type}")
    throughput = get_int(ctx, ebs.get("throughput"), join(path, "throughput"), minimum=125, maximum=1000)
    if throughput is not None and volume_type != "gp3":
        ctx.error(join(path, "throughput"), f"throughput applies to gp3 volumes only, not {volume_type}")
    encrypted = get_bool(ctx, ebs.get("encrypted"), join(path, "encrypted"))
    delete = get_bool(ctx, ebs.get("deleteOnTermination"), join(path, "deleteOnTermination"))
    return BlockDevice(
        volume_size_bytes=size_bytes,
        volume_type=volume_type,
        iops=iops,
        throughput=throughput,
        encrypted=True if encrypted is None else encrypted,
        kms_key_id=get_str(ctx, ebs.get("kmsKeyID"), join(path, "kmsKeyID")) or "",
        delete_on_termination=True if delete is None else delete,
        snapshot_id=snapshot,
        volume_initialization_rate=rate,
    )


def _volume_size(ctx: Collector, value: Any, path: str) -> int | None:
    """A whole size in Gi, G, Ti or T within Karpenter's limit for that unit, in bytes."""
    size = get_str(ctx, value, path)
    if size is None:
        return None
    match = VOLUME_SIZE.match(size)
    if match is None:
        ctx.error(path, f'"{size}" must be a whole size in Gi, G, Ti or T, e.g. 100Gi')
        return None
    number, unit = int(match.group(1)), match.group(2)
    if number > VOLUME_SIZE_MAX[unit]:
        ctx.error(path, f'"{size}" is larger than EBS allows; use at most {VOLUME_SIZE_MAX[unit]}{unit}')
        return None
    try:
        return int(parse_quantity(size))
    except QuantityError as exc:
        ctx.error(path, str(exc))
        return None


def _metadata_options(ctx: Collector, value: Any, path: str) -> MetadataOptions:
    raw = get_map(ctx, value, path)
    default = MetadataOptions()
    if raw is None:
        return default
    check_fields(ctx, raw, path, ("httpEndpoint", "httpProtocolIPv6", "httpPutResponseHopLimit", "httpTokens"))
    states = ("enabled", "disabled")
    return MetadataOptions(
        http_endpoint=get_enum(ctx, raw.get("httpEndpoint"), join(path, "httpEndpoint"), states)
        or default.http_endpoint,
        http_protocol_ipv6=get_enum(ctx, raw.get("httpProtocolIPv6"), join(path, "httpProtocolIPv6"), states)
        or default.http_protocol_ipv6,
        http_put_response_hop_limit=get_int(
            ctx, raw.get("httpPutResponseHopLimit"), join(path, "httpPutResponseHopLimit"), minimum=1, maximum=64
        )
        or default.http_put_response_hop_limit,
        http_tokens=get_enum(ctx, raw.get("httpTokens"), join(path, "httpTokens"), ("required", "optional"))
        or default.http_tokens,
    )


def _reserved(ctx: Collector, value: Any, path: str) -> dict[str, int]:
    raw = get_map(ctx, value, path) or {}
    for key in raw:
        if key not in RESERVED_RESOURCES:
            ctx.error(map_key(path, str(key)), f"is not reservable; use {', '.join(RESERVED_RESOURCES)}")
    return get_resources(ctx, {k: v for k, v in raw.items() if k in RESERVED_RESOURCES}, path)


def _eviction(ctx: Collector, value: Any, path: str) -> dict[str, str]:
    raw = get_str_map(ctx, value, path)
    out = {}
    for signal, threshold in raw.items():
        where = map_key(path, signal)
        if signal not in EVICTION_SIGNALS:
            ctx.error(where, f"is not an eviction signal; use one of {', '.join(EVICTION_SIGNALS)}")
            continue
        if not PERCENT.match(threshold):
            try:
                parse_quantity(threshold)
            except QuantityError:
                ctx.error(where, f'"{threshold}" must be a quantity such as 100Mi or a percentage such as 5%')
                continue
        out[signal] = threshold
    return out


def _kubelet(ctx: Collector, value: Any, path: str) -> KubeletConfiguration:
    raw = get_map(ctx, value, path)
    if raw is None:
        return KubeletConfiguration()
    check_fields(
        ctx,
        raw,
        path,
        KUBELET_FIELDS,
    )
    soft = _eviction(ctx, raw.get("evictionSoft"), join(path, "evictionSoft"))
    grace = get_str_map(ctx, raw.get("evictionSoftGracePeriod"), join(path, "evictionSoftGracePeriod"))
    for signal, period in grace.items():
        where = map_key(join(path, "evictionSoftGracePeriod"), signal)
        if signal not in soft:
            ctx.error(where, "has no matching evictionSoft threshold; set both or neither")
        try:
            parse_duration(period)
        except DurationError as exc:
            ctx.error(where, str(exc))
    for signal in soft:
        if signal not in grace:
            ctx.error(
                map_key(join(path, "evictionSoft"), signal),
                "needs a matching evictionSoftGracePeriod entry (e.g. 1m30s)",
            )
    high = get_int(ctx, raw.get("imageGCHighThresholdPercent"), join(path, "imageGCHighThresholdPercent"), 0, 100)
    low = get_int(ctx, raw.get("imageGCLowThresholdPercent"), join(path, "imageGCLowThresholdPercent"), 0, 100)
    if high is not None and low is not None and high <= low:
        ctx.error(
            join(path, "imageGCHighThresholdPercent"),
            f"{high} must be greater than imageGCLowThresholdPercent ({low})",
        )
    dns = parse_string_list(ctx, raw.get("clusterDNS"), join(path, "clusterDNS"))
    for i, address in enumerate(dns):
        try:
            ipaddress.ip_address(address)
        except ValueError:
            ctx.error(join(join(path, "clusterDNS"), i), f'"{address}" is not an IP address')
    return KubeletConfiguration(
        max_pods=get_int(ctx, raw.get("maxPods"), join(path, "maxPods"), minimum=0),
        pods_per_core=get_int(ctx, raw.get("podsPerCore"), join(path, "podsPerCore"), minimum=0),
        system_reserved=_reserved(ctx, raw.get("systemReserved"), join(path, "systemReserved")),
        kube_reserved=_reserved(ctx, raw.get("kubeReserved"), join(path, "kubeReserved")),
        eviction_hard=_eviction(ctx, raw.get("evictionHard"), join(path, "evictionHard")),
        eviction_soft=soft,
        cluster_dns=dns,
        eviction_soft_grace_period=grace,
        eviction_max_pod_grace_period=get_int(
            ctx, raw.get("evictionMaxPodGracePeriod"), join(path, "evictionMaxPodGracePeriod")
        ),
        image_gc_high_threshold_percent=high,
        image_gc_low_threshold_percent=low,
        cpu_cfs_quota=get_bool(ctx, raw.get("cpuCFSQuota"), join(path, "cpuCFSQuota")),
    )


def _tags(ctx: Collector, value: Any, path: str) -> dict[str, str]:
    tags = get_str_map(ctx, value, path)
    for key in tags:
        where = map_key(path, key)
        if not key:
            ctx.error(where, "empty tag keys are not supported")
        elif key.startswith("kubernetes.io/cluster"):
            ctx.error(where, "is a restricted tag (kubernetes.io/cluster/*); nodewright sets it itself")
        elif key in ownership.KARPENTER_TAGS:
            ctx.error(
                where,
                f"is a restricted tag ({key}): Karpenter recognises its own instances by it and would garbage-"
                "collect nodewright's; remove it (Karpenter refuses it in spec.tags too)",
            )
        elif key in RESTRICTED_TAGS:
            ctx.error(where, f"is a restricted tag ({key}); nodewright sets it itself")
    return tags
