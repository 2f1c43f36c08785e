"""The token webhook's checks, identity mapping and STS response parsing."""

from __future__ import annotations

import datetime

import pytest

from nodewright.adapters.eks_token import encode_token
from nodewright.localworld.tokenwebhook import (
    Identity,
    TokenRejected,
    Verified,
    canonical_arn,
    check_presigned_url,
    map_identity,
    parse_caller_identity,
    review,
    token_review_response,
)

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)


def _url(action: str = "GetCallerIdentity", signed: str = "host;x-k8s-aws-id", date: str = "20260101T115500Z") -> str:
    return (
        f"https://sts.us-east-1.amazonaws.com/?Action={action}&Version=2011-06-15"
        "&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20260101%2Fus-east-1%2Fsts%2Faws4_request"
        f"&X-Amz-Date={date}&X-Amz-Expires=60&X-Amz-SignedHeaders={signed.replace(';', '%3B')}&X-Amz-Signature=ab"
    )


def test_a_fresh_signed_get_caller_identity_url_passes() -> None:
    query = check_presigned_url(_url(), "prod", NOW)
    assert query["X-Amz-Credential"].startswith("AKID/")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (_url(action="AssumeRole"), "GetCallerIdentity"),
        (_url(signed="host"), "x-k8s-aws-id"),
        (_url(date="20260101T114400Z"), "expired"),
        (_url(date="20260101T121000Z"), "future"),
        (_url(date="yesterday"), "X-Amz-Date"),
    ],
)
def test_urls_eks_would_refuse_are_refused(url: str, reason: str) -> None:
    with pytest.raises(TokenRejected, match=reason):
        check_presigned_url(url, "prod", NOW)


def test_tokens_that_are_not_eks_tokens_are_rejected_before_any_network_call() -> None:
    with pytest.raises(TokenRejected):
        review("eyJhbGciOi.not-an-eks-token", {"cluster": "prod", "sts_endpoint": "http://127.0.0.1:9"}, NOW)
    with pytest.raises(TokenRejected, match="GetCallerIdentity"):
        review(encode_token(_url(action="ListUsers")), {"cluster": "prod", "sts_endpoint": "http://127.0.0.1:9"}, NOW)


def test_assumed_role_arns_map_through_their_role() -> None:
    arn = "arn:aws:sts::123456789012:assumed-role/provisioner-role/provisioner-fn"
    assert canonical_arn(arn) == "arn:aws:iam::123456789012:role/provisioner-role"
    assert canonical_arn("arn:aws:iam::123456789012:user/alice") == "arn:aws:iam::123456789012:user/alice"
    mappings = [
        {"arn": "arn:aws:iam::123456789012:role/other", "username": "other", "groups": []},
        {"arn": "arn:aws:iam::123456789012:role/*", "username": "fn:{{SessionName}}@{{AccountID}}", "groups": ["g"]},
    ]
    user = map_identity(Identity(arn, "123456789012", "AROA:provisioner-fn"), mappings)
    assert user.username == "fn:provisioner-fn@123456789012"
    assert user.groups == ("g",)
    with pytest.raises(TokenRejected, match="not mapped"):
        map_identity(Identity("arn:aws:iam::123456789012:user/moto", "123456789012", "AIDA"), mappings)


def test_caller_identity_xml_and_json() -> None:
    xml = (
        '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>'
        "<Arn>arn:aws:sts::1:assumed-role/r/s</Arn><UserId>AROA:s</UserId><Account>1</Account>"
        "</GetCallerIdentityResult></GetCallerIdentityResponse>"
    )
    assert parse_caller_identity(xml.encode()) == Identity("arn:aws:sts::1:assumed-role/r/s", "1", "AROA:s")
    json_body = (
        b'{"GetCallerIdentityResponse": {"GetCallerIdentityResult": {"Arn": "a", "Account": "1", "UserId": "u"}}}'
    )
    assert parse_caller_identity(json_body) == Identity("a", "1", "u")


def test_review_answers_have_the_token_review_shape() -> None:
    assert token_review_response(None, "nope")["status"] == {"authenticated": False, "error": "nope"}


def _presigned(cluster: str, token: str | None = None) -> str:
    import boto3

    from nodewright.adapters.eks_token import presign_caller_identity

    sts = boto3.client(
        "sts",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:4566",
        aws_access_key_id="ASIAEXAMPLE",
        aws_secret_access_key="the-secret",
        aws_session_token=token,
    )
    return presign_caller_identity(sts, cluster)


def test_signatures_are_checked_as_sts_would() -> None:
    from nodewright.localworld.tokenwebhook import signature_matches

    url = _presigned("prod")
    assert signature_matches(url, "prod", "the-secret", None)
    assert not signature_matches(url, "staging", "the-secret", None)  # signed for another cluster
    assert not signature_matches(url, "prod", "another-secret", None)
    with_session = _presigned("prod", token="session-token")
    assert signature_matches(with_session, "prod", "the-secret", "session-token")
    tampered = url.replace("Action=GetCallerIdentity", "Action=GetCallerIdentity&Extra=1")
    assert not signature_matches(tampered, "prod", "the-secret", None)


def test_an_sts_that_does_not_answer_is_a_refusal_not_an_error() -> None:
    """Port 9 refuses the connection: the review says why (the webhook answers "not authenticated") instead of
    raising, which left kube-apiserver's review unanswered."""
    config = {"cluster": "prod", "sts_endpoint": "http://127.0.0.1:9", "verify_signatures": False}
    with pytest.raises(TokenRejected, match="STS did not answer"):
        review(encode_token(_url()), config, NOW)


def test_a_token_sts_vouched_for_is_not_replayed_but_its_time_and_mapping_still_count() -> None:
    token = encode_token(_url())
    identity = Identity("arn:aws:sts::123456789012:assumed-role/planner-role/fn", "123456789012", "AROA1")
    mappings = [{"arn": "arn:aws:iam::123456789012:role/planner-role", "username": "planner", "groups": ["g"]}]
    config = {"cluster": "prod", "sts_endpoint": "http://127.0.0.1:9", "mappings": mappings}
    verified: Verified = {token: (identity, NOW)}
    assert review(token, config, NOW, verified).username == "planner"  # STS (port 9) never asked
    with pytest.raises(TokenRejected, match="not mapped"):
        review(token, {**config, "mappings": []}, NOW, verified)
    with pytest.raises(TokenRejected, match="expired"):
        review(token, config, NOW + datetime.timedelta(minutes=11), verified)
    with pytest.raises(TokenRejected, match="STS did not answer"):
        review(encode_token(_url(date="20260101T115600Z")), config, NOW, verified)  # another token is asked for


def test_tokens_vouched_for_more_than_a_token_lifetime_ago_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new review drops what STS said for tokens that can no longer be valid, so the webhook's memory stays
    as small as the tokens in use."""
    from nodewright.localworld import tokenwebhook

    old = encode_token(_url(date="20260101T113000Z"))
    identity = Identity("arn:aws:sts::123456789012:assumed-role/planner-role/fn", "123456789012", "AROA1")
    verified: Verified = {old: (identity, NOW - datetime.timedelta(minutes=20))}
    fresh = encode_token(_url())
    monkeypatch.setattr(tokenwebhook, "replay", lambda url, cluster, endpoint: identity)
    config = {"cluster": "prod", "sts_endpoint": "http://127.0.0.1:9", "verify_signatures": False, "mappings": []}
    with pytest.raises(TokenRejected, match="not mapped"):
        review(fresh, config, NOW, verified)
    assert list(verified) == [fresh]
