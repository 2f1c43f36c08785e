"""Deploy what the CDK app synthesizes into the local world's moto, never a hand-written copy.

`deploy_synthesized(cdk_out, stack)` does what `cdk deploy` does against a bootstrapped account:
it publishes the stack's file assets to the bootstrap bucket (zipping directories), records the
bootstrap version parameter the template checks, and creates the stack through moto's
CloudFormation. The functions, queues, rules and state machines then exist exactly as synthesized;
their Lambda code is the asset zip, which the Lambda seam unpacks and runs in-process.
"""

from __future__ import annotations

import io
import json
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The CDK's default bootstrap qualifier and the version its templates require at least.
BOOTSTRAP_QUALIFIER = "hnb659fds"
BOOTSTRAP_VERSION = "30"


@dataclass(frozen=True)
class FileAsset:
    """One file asset of a stack: where it is in cdk.out and where the template expects it."""

    source: Path
    packaging: str
    bucket: str
    key: str


def _substitute(text: str, account: str, region: str) -> str:
    return (
        text.replace("${AWS::AccountId}", account).replace("${AWS::Region}", region).replace("${AWS::Partition}", "aws")
    )


def stack_artifacts(cdk_out: Path, stack: str) -> tuple[Path, Path | None]:
    """The template file and (if any) asset manifest of `stack`, from cdk.out/manifest.json."""
    manifest = json.loads((cdk_out / "manifest.json").read_text())
    artifacts: dict[str, Any] = manifest.get("artifacts", {})
    if stack not in artifacts or artifacts[stack].get("type") != "aws:cloudformation:stack":
        known = sorted(k for k, v in artifacts.items() if v.get("type") == "aws:cloudformation:stack")
        raise KeyError(f"no stack {stack!r} in {cdk_out} (stacks: {', '.join(known) or 'none'})")
    template = cdk_out / artifacts[stack]["properties"]["templateFile"]
    assets = None
    for dependency in artifacts[stack].get("dependencies", []):
        artifact = artifacts.get(dependency, {})
        if artifact.get("type") == "cdk:asset-manifest":
            assets = cdk_out / artifact["properties"]["file"]
    return template, assets


def file_assets(asset_manifest: Path, account: str, region: str) -> list[FileAsset]:
    """File assets and their bootstrap-bucket destinations, with pseudo parameters resolved."""
    doc = json.loads(asset_manifest.read_text())
    assets = []
    for entry in doc.get("files", {}).values():
        source = asset_manifest.parent / entry["source"]["path"]
        packaging = str(entry["source"].get("packaging", "file"))
        for destination in entry.get("destinations", {}).values():
            assets.append(
                FileAsset(
                    source=source,
                    packaging=packaging,
                    bucket=_substitute(destination["bucketName"], account, region),
                    key=_substitute(destination["objectKey"], account, region),
                )
            )
    return assets


def asset_bytes(asset: FileAsset) -> bytes:
    """The bytes to upload: a zip of a directory asset, or the file itself."""
    if asset.packaging == "zip" and asset.source.is_dir():
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for file in sorted(asset.source.rglob("*")):
                if file.is_file():
                    archive.write(file, file.relative_to(asset.source).as_posix())
        return buffer.getvalue()
    return asset.source.read_bytes()


def deploy_synthesized(
    cdk_out: Path,
    stack: str,
    clients: dict[str, Any],
    account: str = "123456789012",
    region: str = "us-east-1",
    parameters: dict[str, str] | None = None,
    timeout: float = 120.0,
) -> dict[str, str]:
    """Create `stack` from `cdk_out` in moto; returns the stack outputs.

    `clients` holds boto3 clients for "s3", "ssm" and "cloudformation" against the moto server.
    """
    template, asset_manifest = stack_artifacts(cdk_out, stack)
    s3, ssm, cfn = clients["s3"], clients["ssm"], clients["cloudformation"]
    ssm.put_parameter(
        Name=f"/cdk-bootstrap/{BOOTSTRAP_QUALIFIER}/version", Value=BOOTSTRAP_VERSION, Type="String", Overwrite=True
    )
    if asset_manifest is not None:
        buckets: set[str] = set()
        for asset in file_assets(asset_manifest, account, region):
            if asset.bucket not in buckets:
                if region == "us-east-1":
                    s3.create_bucket(Bucket=asset.bucket)
                else:
                    s3.create_bucket(Bucket=asset.bucket, CreateBucketConfiguration={"LocationConstraint": region})
                buckets.add(asset.bucket)
            s3.put_object(Bucket=asset.bucket, Key=asset.key, Body=asset_bytes(asset))

    cfn.create_stack(
        StackName=stack,
        TemplateBody=template.read_text(),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in (parameters or {}).items()],
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
    )
    deadline = time.monotonic() + timeout
    while True:
        description = cfn.describe_stacks(StackName=stack)["Stacks"][0]
        status = str(description["StackStatus"])
        if status == "CREATE_COMPLETE":
            return {str(o["OutputKey"]): str(o["OutputValue"]) for o in description.get("Outputs", [])}
        if status.endswith("FAILED") or "ROLLBACK" in status or time.monotonic() > deadline:
            reason = description.get("StackStatusReason", "")
            raise RuntimeError(f"stack {stack} ended in {status}: {reason}")
        time.sleep(0.5)
