"""The two Lambda layers: nodewright's core package, and the third-party packages it imports.

They are separate because they change at different rates: the core changes with every commit and is
about 1 MB, the dependencies change when pyproject.toml does and are about 100 MB unzipped. Both are
built locally (see `infra.build`); the CDK asset hash is the bundle's input hash.
"""

from __future__ import annotations

from aws_cdk import AssetHashType, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra import build

RUNTIME = lambda_.Runtime.PYTHON_3_11
ARCHITECTURE = lambda_.Architecture.ARM_64


def code_from_bundle(bundle: build.Bundle) -> lambda_.AssetCode:
    """Lambda code from a built directory, identified by its input hash instead of a fingerprint."""
    return lambda_.Code.from_asset(str(bundle.path), asset_hash=bundle.key, asset_hash_type=AssetHashType.CUSTOM)


class Layers(Construct):
    """`core` and `dependencies`, both for python3.11 on arm64."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        # A replaced version is deleted only in the clean-up phase after a successful update, when no
        # function uses it any more; uninstalling leaves no layer behind.
        self.core = lambda_.LayerVersion(
            self,
            "Core",
            code=code_from_bundle(build.core_layer_bundle()),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="nodewright core package (model, scheduling, catalog, adapters, services)",
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.dependencies = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=code_from_bundle(build.dependencies_layer_bundle()),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="third-party packages nodewright imports (kubernetes, Powertools, PyYAML, boto3)",
            removal_policy=RemovalPolicy.DESTROY,
        )
