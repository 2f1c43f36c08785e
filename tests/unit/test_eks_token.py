"""The EKS token adapter: format, signed cluster header, and the 14-minute cache."""

from __future__ import annotations

import urllib.parse
from typing import Any

import boto3
import pytest

from nodewright.adapters.eks_token import (
    CACHE_SECONDS,
    TOKEN_PREFIX,
    EksTokenSource,
    decode_token,
    encode_token,
    presign_caller_identity,
)


def _sts() -> Any:
    # Presigning is local computation: no endpoint is contacted.
    return boto3.client("sts", region_name="eu-west-1", aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret")


def test_token_is_prefix_plus_unpadded_base64url_of_the_url() -> None:
    url = "https://sts.eu-west-1.amazonaws.com/?Action=GetCallerIdentity&x=~~~???"
    token = encode_token(url)
    assert token.startswith(TOKEN_PREFIX)
    body = token[len(TOKEN_PREFIX) :]
    assert "=" not in body and "+" not in body and "/" not in body
    assert decode_token(token) == url
    with pytest.raises(ValueError):
        decode_token("Bearer abc")


def test_presigned_url_signs_the_cluster_header_for_get_caller_identity() -> None:
    url = presign_caller_identity(_sts(), "prod-cluster")
    parts = urllib.parse.urlsplit(url)
    query = dict(urllib.parse.parse_qsl(parts.query))
    assert parts.netloc == "sts.eu-west-1.amazonaws.com"
    assert query["Action"] == "GetCallerIdentity"
    assert query["X-Amz-SignedHeaders"].split(";") == ["host", "x-k8s-aws-id"]
    assert query["X-Amz-Expires"] == "60"
    assert query["X-Amz-Credential"].startswith("AKIDEXAMPLE/")


def test_the_header_hook_does_not_leak_into_later_requests() -> None:
    sts = _sts()
    presign_caller_identity(sts, "a")
    plain = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60)
    assert "x-k8s-aws-id" not in dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(plain).query))["X-Amz-SignedHeaders"]


class _CountingSts:
    """A real STS client that counts presign calls."""

    def __init__(self) -> None:
        self._real: Any = _sts()
        self.meta = self._real.meta
        self.presigned = 0

    def generate_presigned_url(self, *args: Any, **kwargs: Any) -> str:
        self.presigned += 1
        url: str = self._real.generate_presigned_url(*args, **kwargs)
        return url


def test_tokens_are_reused_for_fourteen_minutes_then_renewed() -> None:
    now = [1000.0]
    sts = _CountingSts()
    source = EksTokenSource("prod", sts_client=sts, clock=lambda: now[0])
    first = source.token()
    now[0] += CACHE_SECONDS - 1
    assert source.token() == first
    assert sts.presigned == 1
    now[0] += 1
    second = source.token()
    assert sts.presigned == 2
    assert decode_token(second).startswith("https://sts.eu-west-1.amazonaws.com/")
    assert CACHE_SECONDS == 14 * 60
