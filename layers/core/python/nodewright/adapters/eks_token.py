"""EKS bearer tokens for the Kubernetes API, made the way `aws eks get-token` makes them.

A token is `k8s-aws-v1.` + base64url (no padding) of a presigned STS `GetCallerIdentity` URL whose
signature covers the header `x-k8s-aws-id: <cluster name>`. The cluster's authenticator replays the
URL against STS to learn the caller's ARN, so the token proves an IAM identity without sending a
secret. EKS accepts a token for 15 minutes after it is signed; we reuse one for 14 so a request
never carries a token about to expire.

This adapter runs unchanged in AWS and in the local world (where `AWS_ENDPOINT_URL` sends the STS
presign to moto and the local token-review webhook replays it there).
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable
from typing import Any

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
# The presigned URL itself only needs to live long enough for the authenticator to replay it;
# EKS applies its own 15-minute window from the signing time.
PRESIGN_EXPIRES_SECONDS = 60
CACHE_SECONDS = 14 * 60


def encode_token(presigned_url: str) -> str:
    """Wrap a presigned URL as an EKS bearer token."""
    encoded = base64.urlsafe_b64encode(presigned_url.encode()).decode().rstrip("=")
    return TOKEN_PREFIX + encoded


def decode_token(token: str) -> str:
    """Recover the presigned URL from an EKS bearer token; ValueError if it is not one."""
    if not token.startswith(TOKEN_PREFIX):
        raise ValueError("token does not start with k8s-aws-v1.")
    body = token[len(TOKEN_PREFIX) :]
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError("token body is not base64url") from exc


def presign_caller_identity(sts_client: Any, cluster_name: str) -> str:
    """A presigned GET URL for STS GetCallerIdentity whose signature covers `x-k8s-aws-id`."""

    def add_cluster_header(request: Any, **_: Any) -> None:
        request.headers[CLUSTER_ID_HEADER] = cluster_name

    # Registered on this client only, with a unique id, so it cannot leak into other clients.
    handler_id = f"nodewright-eks-token-{id(sts_client)}"
    sts_client.meta.events.register_first("before-sign.sts.GetCallerIdentity", add_cluster_header, unique_id=handler_id)
    try:
        url: str = sts_client.generate_presigned_url(
            "get_caller_identity", Params={}, ExpiresIn=PRESIGN_EXPIRES_SECONDS, HttpMethod="GET"
        )
    finally:
        sts_client.meta.events.unregister("before-sign.sts.GetCallerIdentity", unique_id=handler_id)
    return url


class EksTokenSource:
    """Hands out a cached EKS token for one cluster, minting a new one every ~14 minutes.

    Thread-safe; `clock` (monotonic seconds) is injectable so expiry is testable without sleeping.
    """

    def __init__(
        self,
        cluster_name: str,
        sts_client: Any = None,
        region: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cluster_name = cluster_name
        self._sts = sts_client
        self._region = region
        self._clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._minted_at = 0.0

    def _client(self) -> Any:
        if self._sts is None:
            import boto3

            # boto3 signs against the regional STS endpoint by default, which EKS accepts and which
            # keeps working when the global endpoint is disabled; AWS_ENDPOINT_URL redirects it locally.
            self._sts = boto3.client("sts", region_name=self._region)
        return self._sts

    def token(self) -> str:
        """A token valid for at least one more minute."""
        with self._lock:
            now = self._clock()
            if self._token is None or now - self._minted_at >= CACHE_SECONDS:
                self._token = encode_token(presign_caller_identity(self._client(), self._cluster_name))
                self._minted_at = now
            return self._token
