"""boto3 sessions for the Lambdas, reading a small copy of botocore's data: our services, our operations.

A Lambda's first EC2 client used to cost 110-210 ms of its cold start: botocore decodes the whole EC2 model
(830 operations, 4,400 shapes, 3.7 MB of JSON into OrderedDicts) and builds a method per operation, decodes
endpoints.json (1.2 MB, every service in every partition), and lists the 440 service folders of its data
directory (twice, with a stat per file) to check that a service exists. The Lambdas use seven services and
call 14 EC2 operations.

`write_models` writes a data directory holding only what those services need: for each service in
SERVICES its latest API version's files (the service model cut down to the listed operations and the
shapes they reach where SERVICES lists operations, copied whole otherwise; endpoint rules, paginators,
waiters, extras), endpoints.json cut down to those services in every partition, and botocore's other
top-level files unchanged. `session()` gives botocore a loader that reads that directory only (through
botocore's public `register_component`), so nothing else is listed or decoded.

Where the directory comes from: the dependencies layer writes it from the layer's own botocore at build
time (`infra.build`), and every function's environment names it in `NODEWRIGHT_AWS_MODELS`. Tests and the
local world build the same directory from the installed botocore (`cached_models()`) and set the same
variable, so a service or an operation missing here fails there as it would in Lambda (UnknownServiceError
or AttributeError on the client), not only in production.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

MODELS_ENV = "NODEWRIGHT_AWS_MODELS"

# Service -> the operations (API names) called through it, or None to keep its whole (small) model.
# DynamoDB's list includes what Powertools' idempotency layer calls (Get/Put/Update/DeleteItem).
SERVICES: Mapping[str, frozenset[str] | None] = {
    "dynamodb": frozenset({"BatchWriteItem", "DeleteItem", "GetItem", "PutItem", "Query", "UpdateItem"}),
    "ec2": frozenset(
        {
            "CreateFleet",
            "CreateLaunchTemplate",
            "DeleteLaunchTemplate",
            "DescribeAvailabilityZones",
            "DescribeCapacityReservations",
            "DescribeImages",
            "DescribeInstanceTypeOfferings",
            "DescribeInstanceTypes",
            "DescribeInstances",
            "DescribeLaunchTemplates",
            "DescribeSecurityGroups",
            "DescribeSpotPriceHistory",
            "DescribeSubnets",
            "TerminateInstances",
        }
    ),
    "eks": frozenset({"DescribeCluster"}),
    # Instance profiles for the node roles an EC2NodeClass may name (adapters.ec2_launcher).
    "iam": frozenset({"AddRoleToInstanceProfile", "CreateInstanceProfile", "GetInstanceProfile"}),
    # The planner asks the provisioner for a short CapacityBuffer's capacity (service.buffers).
    "lambda": frozenset({"Invoke"}),
    "pricing": None,
    "ssm": frozenset({"GetParameter", "GetParameters"}),
    "stepfunctions": frozenset({"DescribeExecution", "StartExecution"}),
    "sts": None,
}
# Files of a service's version folder that are never read at run time.
_SKIPPED_FILES = ("examples-1.json",)


def _shape_references(node: Any) -> Iterator[str]:
    """Every shape name a model fragment refers to (members, list members, map keys and values, errors)."""
    if isinstance(node, dict):
        shape = node.get("shape")
        if isinstance(shape, str):
            yield shape
        for value in node.values():
            if isinstance(value, dict | list):
                yield from _shape_references(value)
    elif isinstance(node, list):
        for value in node:
            yield from _shape_references(value)


def trim(model: Mapping[str, Any], operations: frozenset[str]) -> dict[str, Any]:
    """A service model (botocore `service-2` document) with only `operations` and the shapes they reach.

    Documentation strings are dropped too (never read at run time). Raises KeyError naming any operation
    the model does not have, so a typo in SERVICES fails the build, not a call in production.
    """
    missing = sorted(operations - set(model["operations"]))
    if missing:
        raise KeyError(f"{model['metadata'].get('serviceId', '?')} has no operation(s) {', '.join(missing)}")
    kept_operations = {name: _undocumented(model["operations"][name]) for name in sorted(operations)}
    shapes: dict[str, Any] = {}
    pending = list(_shape_references(kept_operations))
    while pending:
        name = pending.pop()
        if name in shapes:
            continue
        shapes[name] = _undocumented(model["shapes"][name])
        pending.extend(_shape_references(shapes[name]))
    trimmed = {key: value for key, value in model.items() if key not in ("operations", "shapes", "documentation")}
    trimmed["operations"] = kept_operations
    trimmed["shapes"] = dict(sorted(shapes.items()))
    return trimmed


def _undocumented(node: Any) -> Any:
    if isinstance(node, dict):
        # Only strings: a structure may have a member that happens to be called "documentation".
        return {
            k: _undocumented(v)
            for k, v in node.items()
            if not (k in ("documentation", "documentationUrl") and isinstance(v, str))
        }
    if isinstance(node, list):
        return [_undocumented(v) for v in node]
    return node


def write_models(target: Path, botocore_data: Path | None = None) -> Path:
    """Write the data directory described in the module doc under `target` and return `target`.

    `botocore_data` is the botocore data directory to read (default: the installed botocore's).
    """
    import botocore
    from botocore.loaders import Loader

    source = botocore_data or Path(botocore.__file__).parent / "data"
    loader = Loader(extra_search_paths=[str(source)], include_default_search_paths=False)
    prefixes = set()
    for service, operations in SERVICES.items():
        version = loader.determine_latest_version(service, "service-2")
        folder = target / service / version
        folder.mkdir(parents=True, exist_ok=True)
        for file in sorted((source / service / version).iterdir()):
            if file.name.startswith("service-2.json") or file.name in _SKIPPED_FILES:
                continue
            shutil.copyfile(file, folder / file.name)
        model = loader.load_service_model(service, "service-2", version)
        prefixes.add(str(model["metadata"]["endpointPrefix"]))
        if operations is not None:
            model = trim(model, operations)
        (folder / "service-2.json").write_text(json.dumps(model, separators=(",", ":")))
    for file in sorted(source.iterdir()):
        if file.is_file() and file.name.split(".", 1)[0] != "endpoints":
            shutil.copyfile(file, target / file.name)
    (target / "endpoints.json").write_text(json.dumps(_endpoints(_read_json(source, "endpoints"), prefixes)))
    return target


def _read_json(directory: Path, name: str) -> Any:
    plain = directory / f"{name}.json"
    if plain.is_file():
        return json.loads(plain.read_text())
    return json.loads(gzip.decompress((directory / f"{name}.json.gz").read_bytes()))


def _endpoints(endpoints: Mapping[str, Any], prefixes: set[str]) -> dict[str, Any]:
    """endpoints.json with, in every partition, only the services whose endpoint prefix is in `prefixes`."""
    partitions = []
    for partition in endpoints["partitions"]:
        services = {k: v for k, v in partition.get("services", {}).items() if k in prefixes}
        partitions.append({**partition, "services": services})
    return {**endpoints, "partitions": partitions}


def cached_models(cache: Path | None = None) -> Path:
    """The data directory for the installed botocore, written once under the nodewright cache
    (`$NODEWRIGHT_CACHE` or ~/.cache/nodewright) and keyed by botocore's version and `models_digest()`."""
    import botocore

    root = cache or Path(os.environ.get("NODEWRIGHT_CACHE") or Path.home() / ".cache" / "nodewright")
    target = root / "aws-models" / f"{botocore.__version__}-{models_digest()}"
    if not target.is_dir():
        staging = target.with_name(f".{target.name}.{os.getpid()}")
        write_models(staging)
        try:
            staging.rename(target)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            if not target.is_dir():
                raise
    return target


def models_digest() -> str:
    """A short digest of what shapes the directory: this module's source (SERVICES and the trimming). The
    dependencies layer's cache key and `cached_models()` include it."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]


def session(region: str | None = None) -> Any:
    """A boto3 Session whose botocore reads only `$NODEWRIGHT_AWS_MODELS` when it is set (botocore's own
    data otherwise)."""
    import boto3
    import botocore.session
    from botocore.loaders import Loader

    core = botocore.session.get_session()
    models = os.environ.get(MODELS_ENV, "")
    if models:
        core.register_component("data_loader", Loader(extra_search_paths=[models], include_default_search_paths=False))
    return boto3.session.Session(botocore_session=core, region_name=region)
