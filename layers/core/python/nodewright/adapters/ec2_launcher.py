"""The Cloud port on AWS: EKS DescribeCluster, EC2 (subnets, security groups, images, reservations, launch
templates, CreateFleet, instances) and SSM public AMI parameters.

Caches live as long as the adapter, which a warm Lambda container keeps: the cluster description for an
hour; what EC2NodeClasses resolve to, part by part with Karpenter's TTLs (`pkg/cache/cache.go` and the
operator's refresh intervals): subnets, security groups and AMIs for a minute, instance profiles for 15
minutes. Each part is keyed on the spec fields it is resolved from, so an edited EC2NodeClass is resolved
afresh at once; `resolve_ttl` caps every part (the planner judges drift against answers under a tick old, the
workflow's replacement resolves afresh); `forget_node_class` drops a class's parts when a launch finds one of
them gone. Karpenter keeps the SSM parameters of an AMI alias for 24 hours; here the alias is an AMI part like
any other (a minute), because the planner, a separate process, judges AMI drift against what SSM says now,
and a provisioner launching a day-old image would have its nodes replaced as drifted. Failures are not kept:
a class that does not resolve is tried again by the next call. Launch template names are kept for `TEMPLATE_CACHE_TTL`
(10 minutes; a name is a content hash, so a cached name can only go stale if the template is deleted:
garbage collection deletes only templates an hour old that no NodeClaim names, and a CreateFleet that
still finds one gone clears the cache so the next attempt recreates it).

Throttling: botocore's standard retry mode backs off on RequestLimitExceeded; when EC2 still throttles
after those retries, CreateFleet raises `Throttled` so the service stops launching for this batch.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from nodewright import tags as owned
from nodewright.catalog.catalog import CapacityReservation
from nodewright.launch.amis import VARIANTS, alias_parameters, image_queries, newest_per_architecture
from nodewright.launch.fleet import THROTTLING_ERRORS
from nodewright.launch.template import TEMPLATE_PREFIX, Image, LaunchTemplateSpec, ResolvedNodeClass, Subnet
from nodewright.launch.userdata import ClusterInfo
from nodewright.model import roles
from nodewright.model.nodeclass import AMISelectorTerm, EC2NodeClass, SelectorTerm
from nodewright.ports import Instance, LaunchError, LaunchTemplateRecord, NodeClassError, Throttled
from nodewright.ttlcache import TtlCache

CLUSTER_INFO_TTL = 3600.0
# Karpenter's: cache.DefaultTTL (and the default subnet- and ami-refresh-interval), cache.InstanceProfileTTL.
SUBNETS_TTL = 60.0
SECURITY_GROUPS_TTL = 60.0
IMAGES_TTL = 60.0
INSTANCE_PROFILE_TTL = 900.0
TEMPLATE_CACHE_TTL = 600.0
_LIVE_STATES = ["pending", "running", "stopping", "stopped"]
LIST_PAGE = 1000  # DescribeInstances' MaxResults ceiling

T = TypeVar("T")


def _tag_filters(tags: Mapping[str, str]) -> list[dict[str, Any]]:
    """EC2 filters for a selector term's tags; the value `*` means "any value" (the key must exist)."""
    return [
        {"Name": "tag-key", "Values": [k]} if v == "*" else {"Name": f"tag:{k}", "Values": [v]}
        for k, v in sorted(tags.items())
    ]


def _error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


class Ec2Cloud:
    """Cloud port backed by boto3 clients (ec2, ssm, eks, and iam when needed) for one cluster.

    `node_role` / `instance_profile` are what the stack created; `node_roles` the other roles the stack lets
    EC2NodeClasses name (its `nodeRoles` context). The provisioner may pass only these (iam:PassRole is
    scoped to them), so an EC2NodeClass naming another role, or an instance profile holding another role,
    is refused. For an extra role, nodewright creates one instance profile (under `tags.INSTANCE_PROFILE_PATH`,
    tagged with its cluster) and reuses it; `iam` builds the IAM client the first time one is needed.
    """

    def __init__(
        self,
        cluster_name: str,
        node_role: str,
        instance_profile: str,
        ec2: Any,
        ssm: Any,
        eks: Any,
        clock: Callable[[], float] = time.monotonic,
        resolve_ttl: float | None = None,
        wall_clock: Callable[[], float] = time.time,
        node_roles: Sequence[str] = (),
        iam: Callable[[], Any] | None = None,
    ) -> None:
        self.cluster_name = cluster_name
        self.node_role = node_role
        self.instance_profile = instance_profile
        self.node_roles = tuple(node_roles)
        self.ec2 = ec2
        self.ssm = ssm
        self.eks = eks
        self._iam_factory = iam
        self._iam_client: Any = None
        self._clock = clock
        # Seconds since the epoch, for AMI deprecation times (the monotonic clock only ages caches).
        self._wall_clock = wall_clock
        self._resolve_ttl = resolve_ttl
        self._info: tuple[float, ClusterInfo] | None = None
        # The parts of EC2NodeClasses resolved, keyed on the spec fields each comes from (see the module doc).
        self._subnet_cache: TtlCache[str, tuple[tuple[Subnet, ...], frozenset[str]]] = TtlCache(SUBNETS_TTL)
        self._group_cache: TtlCache[str, tuple[str, ...]] = TtlCache(SECURITY_GROUPS_TTL)
        self._image_cache: TtlCache[tuple[str, str], Mapping[tuple[str, str], Image]] = TtlCache(IMAGES_TTL)
        self._profile_cache: TtlCache[tuple[str, str], str] = TtlCache(INSTANCE_PROFILE_TTL)
        self._templates: dict[str, float] = {}  # name -> when it was last seen to exist

    # ------------------------------------------------------------------------------------ cluster

    def cluster_info(self) -> ClusterInfo:
        now = self._clock()
        if self._info is None or now - self._info[0] >= CLUSTER_INFO_TTL:
            cluster = self.eks.describe_cluster(name=self.cluster_name)["cluster"]
            network = cluster.get("kubernetesNetworkConfig") or {}
            info = ClusterInfo(
                name=self.cluster_name,
                endpoint=str(cluster["endpoint"]),
                ca_data=str((cluster.get("certificateAuthority") or {}).get("data", "")),
                service_cidr=str(network.get("serviceIpv4Cidr") or network.get("serviceIpv6Cidr") or ""),
                version=str(cluster.get("version", "")),
            )
            self._info = (now, info)
        return self._info[1]

    # --------------------------------------------------------------------------------- node class

    def resolve_node_class(self, node_class: EC2NodeClass, k8s_version: str) -> ResolvedNodeClass:
        now = self._clock()
        keys = _part_keys(node_class, k8s_version)
        # Every part is resolved even when another fails, so the EC2NodeClass's status can say all that is wrong.
        failures: dict[str, tuple[str, str]] = {}

        def part(condition: str, reason: str, resolve: Callable[[], T], empty: T) -> T:
            try:
                return resolve()
            except NodeClassError as error:
                failures[condition] = (reason, str(error))
                return empty

        def cached(cache: TtlCache[Any, T], key: Any, compute: Callable[[], T]) -> Callable[[], T]:
            return lambda: cache.fetch(key, now, compute, self._resolve_ttl)

        nothing: tuple[tuple[Subnet, ...], frozenset[str]] = ((), frozenset())
        subnets, matching = part(
            "SubnetsReady",
            "SubnetsNotFound",
            cached(self._subnet_cache, keys.subnets, lambda: self._subnets(node_class)),
            nothing,
        )
        resolved = ResolvedNodeClass(
            node_class=node_class,
            subnets=subnets,
            matching_subnet_ids=matching,
            security_group_ids=part(
                "SecurityGroupsReady",
                "SecurityGroupsNotFound",
                cached(self._group_cache, keys.security_groups, lambda: self._security_groups(node_class)),
                (),
            ),
            images=part(
                "AMIsReady",
                "AMINotFound",
                cached(self._image_cache, keys.images, lambda: self._images(node_class, k8s_version)),
                {},
            ),
            instance_profile=part(
                "InstanceProfileReady",
                "InstanceProfileNotAllowed",
                cached(self._profile_cache, keys.instance_profile, lambda: self._instance_profile(node_class)),
                "",
            ),
        )
        if failures:
            raise NodeClassError("; ".join(message for _, message in failures.values()), failures, resolved)
        return resolved

    def forget_node_class(self, node_class: EC2NodeClass) -> None:
        """Drop every resolved part of this EC2NodeClass (a launch found a subnet, security group, image or
        instance profile gone): the next call resolves it against EC2 again."""
        keys = _part_keys(node_class, "")  # images are kept per Kubernetes version too: every version goes
        self._subnet_cache.drop(keys.subnets)
        self._group_cache.drop(keys.security_groups)
        self._image_cache.drop_where(lambda key: key[0] == keys.images[0])
        self._profile_cache.drop(keys.instance_profile)

    @property
    def allowed_roles(self) -> tuple[str, ...]:
        """The node roles EC2NodeClasses may name: the stack's own first."""
        return tuple(r for r in (roles.role_name(self.node_role), *self.node_roles) if r)

    def _iam(self) -> Any:
        if self._iam_client is None:
            if self._iam_factory is None:
                raise NodeClassError("this function has no IAM client to check or create instance profiles with")
            self._iam_client = self._iam_factory()
        return self._iam_client

    def _instance_profile(self, node_class: EC2NodeClass) -> str:
        if node_class.instance_profile:
            return self._checked_profile(node_class.instance_profile)
        role = roles.role_name(node_class.role)
        if role == roles.role_name(self.node_role):
            return self.instance_profile
        if not roles.allowed(role, self.node_roles):
            raise NodeClassError(roles.role_refusal(node_class.role, self.allowed_roles))
        return self._profile_for_role(role)

    def _checked_profile(self, name: str) -> str:
        """A given instance profile, once its role is known to be one nodewright may pass."""
        if name == self.instance_profile:
            return name
        try:
            profile = self._iam().get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
        except ClientError as error:
            if _error_code(error) == "NoSuchEntity":
                raise NodeClassError(f"instanceProfile {name} does not exist in this account") from error
            raise
        held = [str(r["RoleName"]) for r in profile.get("Roles", ())]
        if not held or not roles.allowed(held[0], self.allowed_roles):
            raise NodeClassError(
                f"instanceProfile {name} holds {'role ' + held[0] if held else 'no role'}: "
                + roles.role_refusal(held[0] if held else "(none)", self.allowed_roles)
            )
        return name

    def _profile_for_role(self, role: str) -> str:
        """nodewright's instance profile for `role`: found, or created and tagged, with the role added."""
        name = instance_profile_name(self.cluster_name, role)
        iam = self._iam()
        try:
            held = [
                str(r["RoleName"])
                for r in iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"].get("Roles", ())
            ]
        except ClientError as error:
            if _error_code(error) != "NoSuchEntity":
                raise
            tag_list = [{"Key": owned.CLUSTER, "Value": self.cluster_name}, {"Key": owned.NAME, "Value": name}]
            try:
                iam.create_instance_profile(InstanceProfileName=name, Path=owned.INSTANCE_PROFILE_PATH, Tags=tag_list)
            except ClientError as create_error:
                if _error_code(create_error) != "EntityAlreadyExists":  # another invocation was first
                    raise
            held = []
        if not held:
            try:
                iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=role)
            except ClientError as error:
                if _error_code(error) != "LimitExceeded":  # another invocation added it first
                    raise
        elif held != [role]:
            raise NodeClassError(
                f"instance profile {name} holds role {held[0]}, not {role}; delete the profile and nodewright "
                "recreates it with the right role"
            )
        return name

    def _subnets(self, node_class: EC2NodeClass) -> tuple[tuple[Subnet, ...], frozenset[str]]:
        """The subnet that takes each zone's launches, and the ids of every subnet the terms match."""
        found: dict[str, Mapping[str, Any]] = {}
        for term in node_class.subnet_selector_terms:
            for subnet in self._describe("describe_subnets", "Subnets", term, "SubnetIds", "subnet"):
                found[str(subnet["SubnetId"])] = subnet
        if not found:
            raise NodeClassError(
                f"no subnet matches subnetSelectorTerms {_describe_terms(node_class.subnet_selector_terms)}"
            )
        best: dict[str, Mapping[str, Any]] = {}
        for subnet in sorted(found.values(), key=lambda s: str(s["SubnetId"])):
            zone = str(subnet["AvailabilityZone"])
            # The subnet with the most free addresses takes the zone's launches (as Karpenter does).
            if zone not in best or int(subnet.get("AvailableIpAddressCount", 0)) > int(
                best[zone].get("AvailableIpAddressCount", 0)
            ):
                best[zone] = subnet
        chosen = tuple(
            Subnet(
                str(s["SubnetId"]),
                zone,
                int(s.get("AvailableIpAddressCount", 0)),
                str(s.get("AvailabilityZoneId", "")),
            )
            for zone, s in sorted(best.items())
        )
        return chosen, frozenset(found)

    def _security_groups(self, node_class: EC2NodeClass) -> tuple[str, ...]:
        found: set[str] = set()
        for term in node_class.security_group_selector_terms:
            for group in self._describe("describe_security_groups", "SecurityGroups", term, "GroupIds", "group-name"):
                found.add(str(group["GroupId"]))
        if not found:
            raise NodeClassError(
                f"no security group matches securityGroupSelectorTerms "
                f"{_describe_terms(node_class.security_group_selector_terms)}"
            )
        return tuple(sorted(found))

    def _describe(self, operation: str, key: str, term: SelectorTerm, id_arg: str, name_filter: str) -> list[Any]:
        kwargs: dict[str, Any] = {}
        if term.id:
            kwargs[id_arg] = [term.id]
        else:
            filters = _tag_filters(term.tags)
            if term.name:
                filters.append(
                    {"Name": "group-name" if name_filter == "group-name" else "tag:Name", "Values": [term.name]}
                )
            kwargs["Filters"] = filters
        out: list[Any] = []
        try:
            for page in self.ec2.get_paginator(operation).paginate(**kwargs):
                out.extend(page.get(key, ()))
        except ClientError as error:
            if _error_code(error).endswith(".NotFound") or _error_code(error).startswith("InvalidGroup"):
                return []
            raise
        return out

    def _images(self, node_class: EC2NodeClass, k8s_version: str) -> dict[tuple[str, str], Image]:
        """(architecture, variant) -> image: an alias's public parameters, or the image Karpenter would pick
        per architecture among what the other terms select (the same image for GPU and other types)."""
        alias = next((t.alias for t in node_class.ami_selector_terms if t.alias), "")
        if alias:
            images = self._alias_images(alias, k8s_version)
        else:
            images = {
                (arch, variant): Image(str(image["ImageId"]), arch, variant, str(image.get("Name", "")))
                for arch, image in self._selected_images(node_class.ami_selector_terms).items()
                for variant in VARIANTS
            }
        if not images:
            raise NodeClassError(
                f"no AMI found for amiSelectorTerms of EC2NodeClass {node_class.name} (Kubernetes {k8s_version}): "
                f"{_describe_ami_terms(node_class.ami_selector_terms)}"
            )
        return images

    def _selected_images(self, terms: Sequence[AMISelectorTerm]) -> dict[str, Mapping[str, Any]]:
        ssm_images = {t.ssm_parameter: self._parameter(t.ssm_parameter) for t in terms if t.ssm_parameter}
        found: list[Mapping[str, Any]] = []
        for query in image_queries(terms, ssm_images):
            for page in self.ec2.get_paginator("describe_images").paginate(**query.request()):
                found.extend(page.get("Images", ()))
        return newest_per_architecture(found, self._wall_clock())

    def _parameter(self, name: str) -> str:
        """An SSM parameter's value, "" when it does not exist (Karpenter skips such a term)."""
        try:
            return str(self.ssm.get_parameter(Name=name)["Parameter"]["Value"])
        except ClientError as error:
            if _error_code(error) == "ParameterNotFound":
                return ""
            raise

    def _alias_images(self, alias: str, k8s_version: str) -> dict[tuple[str, str], Image]:
        try:
            names = alias_parameters(alias, k8s_version)
        except ValueError as error:
            raise NodeClassError(str(error)) from error
        response = self.ssm.get_parameters(Names=sorted(names))
        out = {}
        for parameter in response.get("Parameters", []):
            # One parameter may serve several (architecture, variant) pairs (Windows' one image serves all).
            for arch, variant in names[str(parameter["Name"])]:
                out[(arch, variant)] = Image(str(parameter["Value"]), arch, variant, alias)
        return out

    def capacity_reservations(self, resolved: ResolvedNodeClass) -> Sequence[CapacityReservation]:
        out: dict[str, CapacityReservation] = {}
        for term in resolved.node_class.capacity_reservation_selector_terms:
            kwargs: dict[str, Any] = {"Filters": [{"Name": "state", "Values": ["active"]}]}
            if term.id:
                kwargs["CapacityReservationIds"] = [term.id]
            else:
                kwargs["Filters"] += _tag_filters(term.tags)
            if term.owner_id:
                kwargs["Filters"].append({"Name": "owner-id", "Values": [term.owner_id]})
            for page in self.ec2.get_paginator("describe_capacity_reservations").paginate(**kwargs):
                for r in page.get("CapacityReservations", ()):
                    out[str(r["CapacityReservationId"])] = CapacityReservation(
                        str(r["CapacityReservationId"]),
                        str(r["InstanceType"]),
                        str(r["AvailabilityZone"]),
                        int(r.get("AvailableInstanceCount", 0)),
                        "capacity-block" if r.get("ReservationType") == "capacity-block" else "default",
                    )
        return [out[k] for k in sorted(out)]

    # ------------------------------------------------------------------------------------- launch

    def ensure_launch_template(self, spec: LaunchTemplateSpec, tags: Mapping[str, str]) -> str:
        name = spec.name
        seen = self._templates.get(name)
        if seen is not None and self._clock() - seen < TEMPLATE_CACHE_TTL:
            return name
        try:
            self.ec2.describe_launch_templates(LaunchTemplateNames=[name])
        except ClientError as error:
            if "NotFound" not in _error_code(error):
                raise
            tag_list = [
                {"Key": k, "Value": v} for k, v in sorted({**tags, owned.TEMPLATE_HASH: spec.content_hash()}.items())
            ]
            try:
                self.ec2.create_launch_template(
                    LaunchTemplateName=name,
                    LaunchTemplateData=spec.data(),
                    TagSpecifications=[{"ResourceType": "launch-template", "Tags": tag_list}],
                )
            except ClientError as create_error:
                # Another invocation created the same content first: the template is there, which is all we need.
                if "AlreadyExists" not in _error_code(create_error):
                    raise LaunchError(f"CreateLaunchTemplate: {create_error}") from create_error
        self._templates[name] = self._clock()
        return name

    def launch_templates(self) -> Sequence[LaunchTemplateRecord]:
        """The launch templates nodewright created for this cluster (its own tags, never Karpenter's)."""
        filters = owned.owned_filters(self.cluster_name)
        out = []
        for page in self.ec2.get_paginator("describe_launch_templates").paginate(Filters=filters):
            for template in page.get("LaunchTemplates", ()):
                name = str(template.get("LaunchTemplateName", ""))
                if not name.startswith(TEMPLATE_PREFIX):
                    continue
                tags = {str(t["Key"]): str(t.get("Value", "")) for t in template.get("Tags", ())}
                created = template.get("CreateTime")
                out.append(
                    LaunchTemplateRecord(
                        name=name,
                        created_at=float(created.timestamp()) if hasattr(created, "timestamp") else 0.0,
                        node_class=tags.get(owned.NODECLASS, ""),
                    )
                )
        return out

    def delete_launch_template(self, name: str) -> None:
        """Delete one template (already gone is fine) and forget it."""
        self._templates.pop(name, None)
        try:
            self.ec2.delete_launch_template(LaunchTemplateName=name)
        except ClientError as error:
            if "NotFound" not in _error_code(error):
                raise

    def create_fleet(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            response: Mapping[str, Any] = self.ec2.create_fleet(**request)
        except ClientError as error:
            if _error_code(error) in THROTTLING_ERRORS:
                raise Throttled(f"{_error_code(error)}: {error}") from error
            if "LaunchTemplate" in _error_code(error) and "NotFound" in _error_code(error):
                # Someone deleted a template we had cached; forget them so the next attempt recreates it.
                self._templates.clear()
            raise LaunchError(str(error)) from error
        return response

    def instances_of_nodeclaim(self, nodeclaim: str) -> Sequence[Instance]:
        return self.instances_of_nodeclaims([nodeclaim]).get(nodeclaim, ())

    def instances_of_nodeclaims(self, nodeclaims: Sequence[str]) -> Mapping[str, Sequence[Instance]]:
        out: dict[str, list[Instance]] = {}
        names = sorted(set(nodeclaims))
        # EC2 takes up to 200 values per filter: a batch's NodeClaims in one or two calls, not one each.
        for start in range(0, len(names), 200):
            filters = [
                {"Name": f"tag:{owned.NODECLAIM}", "Values": names[start : start + 200]},
                *owned.owned_filters(self.cluster_name),
                {"Name": "instance-state-name", "Values": _LIVE_STATES},
            ]
            for page in self.ec2.get_paginator("describe_instances").paginate(
                Filters=filters, PaginationConfig={"PageSize": LIST_PAGE}
            ):
                for reservation in page.get("Reservations", ()):
                    for i in reservation.get("Instances", ()):
                        instance = _instance(i)
                        out.setdefault(instance.tags.get(owned.NODECLAIM, ""), []).append(instance)
        return out

    def capacity_instances(self) -> Sequence[Instance]:
        filters = [
            *owned.owned_filters(self.cluster_name),
            {"Name": "instance-state-name", "Values": _LIVE_STATES},
        ]
        # Pages of 1,000 (EC2's most): a 3,000-node cluster in 3 calls (filters, unlike InstanceIds, allow MaxResults).
        pages = self.ec2.get_paginator("describe_instances").paginate(
            Filters=filters, PaginationConfig={"PageSize": LIST_PAGE}
        )
        return [
            _instance(i)
            for page in pages
            for reservation in page.get("Reservations", ())
            for i in reservation.get("Instances", ())
        ]

    def terminate(self, instance_ids: Iterable[str]) -> None:
        ids = sorted(set(instance_ids))
        if not ids:
            return
        try:
            self.ec2.terminate_instances(InstanceIds=ids)
        except ClientError as error:
            if _error_code(error) != "InvalidInstanceID.NotFound":
                raise

    def describe_instances(self, instance_ids: Iterable[str]) -> Sequence[Instance]:
        ids = sorted(set(instance_ids))
        out: list[Instance] = []
        # A filter on instance-id (not InstanceIds=) so an id EC2 no longer knows is left out, not an error.
        for start in range(0, len(ids), 200):
            filters = [{"Name": "instance-id", "Values": ids[start : start + 200]}]
            for page in self.ec2.get_paginator("describe_instances").paginate(
                Filters=filters, PaginationConfig={"PageSize": LIST_PAGE}
            ):
                for reservation in page.get("Reservations", ()):
                    out.extend(_instance(i) for i in reservation.get("Instances", ()))
        return out


@dataclass(frozen=True, slots=True)
class _PartKeys:
    """What each resolved part of an EC2NodeClass is cached under: the spec fields it is resolved from."""

    subnets: str
    security_groups: str
    images: tuple[str, str]
    instance_profile: tuple[str, str]


def _part_keys(node_class: EC2NodeClass, k8s_version: str) -> _PartKeys:
    return _PartKeys(
        subnets=repr(node_class.subnet_selector_terms),
        security_groups=repr(node_class.security_group_selector_terms),
        images=(repr(node_class.ami_selector_terms), k8s_version),
        instance_profile=(node_class.role, node_class.instance_profile),
    )


def instance_profile_name(cluster: str, role: str) -> str:
    """The instance profile nodewright creates for `role` in `cluster` (at most 128 characters, unique per both)."""
    digest = hashlib.sha256(f"{cluster}/{role}".encode()).hexdigest()[:12]
    return f"nodewright-{role[:64]}-{digest}"


def _instance(i: Mapping[str, Any]) -> Instance:
    launch = i.get("LaunchTime")
    return Instance(
        id=str(i["InstanceId"]),
        instance_type=str(i.get("InstanceType", "")),
        zone=str((i.get("Placement") or {}).get("AvailabilityZone", "")),
        state=str((i.get("State") or {}).get("Name", "")),
        capacity_type="spot" if i.get("InstanceLifecycle") == "spot" else "on-demand",
        launch_time=float(launch.timestamp()) if launch is not None and hasattr(launch, "timestamp") else 0.0,
        tags={str(t["Key"]): str(t.get("Value", "")) for t in i.get("Tags", ())},
        image_id=str(i.get("ImageId", "")),
        subnet_id=str(i.get("SubnetId", "")),
        security_group_ids=tuple(sorted(str(g["GroupId"]) for g in i.get("SecurityGroups", ()) if g.get("GroupId"))),
    )


def _describe_ami_terms(terms: Sequence[AMISelectorTerm]) -> str:
    parts = []
    for term in terms:
        if term.alias:
            parts.append(f"alias {term.alias}")
        elif term.id:
            parts.append(f"id {term.id}")
        elif term.ssm_parameter:
            parts.append(f"ssmParameter {term.ssm_parameter}")
        else:
            selected = [f"name {term.name}"] if term.name else []
            selected += [f"tag {k}={v}" for k, v in sorted(term.tags.items())]
            owner = f" owned by {term.owner}" if term.owner else ""
            parts.append(", ".join(selected) + owner)
    return "[" + "; ".join(parts) + "]"


def _describe_terms(terms: Sequence[SelectorTerm]) -> str:
    parts = []
    for term in terms:
        if term.id:
            parts.append(f"id {term.id}")
        elif term.name:
            parts.append(f"name {term.name}")
        else:
            parts.append("tags " + ", ".join(f"{k}={v}" for k, v in sorted(term.tags.items())))
    return "[" + "; ".join(parts) + "]"


def ec2_cloud(
    cluster_name: str,
    node_role: str,
    instance_profile: str,
    region: str,
    session: Any | None = None,
    resolve_ttl: float | None = None,
    node_roles: Sequence[str] = (),
) -> Ec2Cloud:
    """An Ec2Cloud with boto3 clients in `region`, standard retries (backoff on throttling). `resolve_ttl`: the
    longest any resolved part of an EC2NodeClass is reused (None: Karpenter's TTL per part; the planner, which
    tells drift from them, caps it below its tick); the IAM client is made only when an EC2NodeClass names a
    role or instance profile other than the stack's."""
    import boto3
    from botocore.config import Config

    session = session or boto3.session.Session()
    config = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=30)
    return Ec2Cloud(
        cluster_name,
        node_role,
        instance_profile,
        ec2=session.client("ec2", region_name=region, config=config),
        ssm=session.client("ssm", region_name=region, config=config),
        eks=session.client("eks", region_name=region, config=config),
        resolve_ttl=resolve_ttl,
        node_roles=node_roles,
        iam=lambda: session.client("iam", region_name=region, config=config),
    )
