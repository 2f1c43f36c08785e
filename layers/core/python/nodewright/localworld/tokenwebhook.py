"""A token-review webhook that plays aws-iam-authenticator's part for the local API server.

    python -m nodewright.localworld.tokenwebhook --port P --config webhook.json --cert C --key K

kube-apiserver sends every bearer token it cannot verify itself here (TokenReview,
`--authentication-token-webhook-config-file`). For a `k8s-aws-v1.` token we decode the presigned
STS GetCallerIdentity URL, check it the way EKS does (the action, the signed `x-k8s-aws-id` header
naming this cluster, a signing time no older than 15 minutes), replay it against moto's STS instead
of AWS, and map the returned ARN to a Kubernetes user and groups from the config. Because moto does
not verify signatures, the webhook does STS's part of that itself: it recomputes the SigV4 signature
with this cluster's name in `x-k8s-aws-id`, using the key's secret from the moto server, so a token
signed for another cluster (or forged) is refused as AWS would refuse it. Anything else is
answered "not authenticated", never an error, so other authenticators still get their turn.

Config (JSON): {"cluster": name, "sts_endpoint": "http://127.0.0.1:PORT",
  "mappings": [{"arn": "arn:aws:iam::123456789012:role/*", "username": "...", "groups": [...]}]}
Mapping ARNs are matched as shell-style patterns against the caller's canonical ARN (an assumed-role
session `arn:aws:sts::A:assumed-role/R/S` is canonicalized to `arn:aws:iam::A:role/R`). Usernames may
use `{{AccountID}}` and `{{SessionName}}`, as aws-iam-authenticator's do.
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import hmac
import json
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from nodewright.adapters.eks_token import CLUSTER_ID_HEADER, decode_token

TOKEN_LIFETIME = datetime.timedelta(minutes=15)
# Clock skew we tolerate for a signing time in the future, as STS itself does.
SKEW = datetime.timedelta(minutes=5)
# How long a review waits for moto (kube-apiserver's own wait for a webhook is longer).
STS_TIMEOUT = 30


class TokenRejected(ValueError):
    """The token is not a valid EKS token for this cluster; the message says why."""


@dataclass(frozen=True)
class Identity:
    """What STS said about the caller."""

    arn: str
    account: str
    user_id: str


@dataclass(frozen=True)
class User:
    """The Kubernetes user an identity maps to."""

    username: str
    uid: str
    groups: tuple[str, ...]


# Identities STS gave for tokens, with when they were first reviewed (see `review`).
Verified = dict[str, tuple[Identity, datetime.datetime]]


def check_presigned_url(url: str, cluster: str, now: datetime.datetime) -> dict[str, str]:
    """Validate a decoded token URL as EKS does and return its query parameters."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("https", "http"):
        raise TokenRejected(f"unexpected scheme {parts.scheme!r}")
    query = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query).items()}
    if query.get("Action") != "GetCallerIdentity":
        raise TokenRejected("the URL does not call GetCallerIdentity")
    signed = query.get("X-Amz-SignedHeaders", "").split(";")
    if CLUSTER_ID_HEADER not in signed:
        raise TokenRejected(f"the signature does not cover {CLUSTER_ID_HEADER}")
    try:
        signed_at = datetime.datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
    except (KeyError, ValueError) as exc:
        raise TokenRejected("missing or malformed X-Amz-Date") from exc
    if now - signed_at > TOKEN_LIFETIME:
        raise TokenRejected("token expired")
    if signed_at - now > SKEW:
        raise TokenRejected("token signed in the future")
    if not cluster:
        raise TokenRejected("no cluster configured")
    return query


def canonical_arn(arn: str) -> str:
    """Map an assumed-role session ARN to its role ARN; other ARNs are returned unchanged."""
    if ":assumed-role/" in arn:
        prefix, _, rest = arn.partition(":assumed-role/")
        role = rest.split("/", 1)[0]
        return prefix.replace(":sts:", ":iam:", 1) + ":role/" + role
    return arn


def session_name(arn: str) -> str:
    """The session part of an assumed-role ARN ('' for other ARNs)."""
    if ":assumed-role/" in arn:
        rest = arn.partition(":assumed-role/")[2]
        return rest.split("/", 1)[1] if "/" in rest else ""
    return ""


def map_identity(identity: Identity, mappings: list[dict[str, Any]]) -> User:
    """The first mapping whose ARN pattern matches the caller decides its user and groups."""
    canonical = canonical_arn(identity.arn)
    for mapping in mappings:
        if fnmatch.fnmatchcase(canonical, str(mapping["arn"])):
            username = (
                str(mapping.get("username", canonical))
                .replace("{{AccountID}}", identity.account)
                .replace("{{SessionName}}", session_name(identity.arn))
            )
            groups = tuple(str(g) for g in mapping.get("groups", []))
            return User(
                username=username, uid=f"aws-iam-authenticator:{identity.account}:{identity.user_id}", groups=groups
            )
    raise TokenRejected(f"ARN {canonical} is not mapped to a Kubernetes user")


def parse_caller_identity(body: bytes) -> Identity:
    """Read Arn, Account and UserId from a GetCallerIdentity response (XML or JSON)."""
    text = body.decode("utf-8", "replace").strip()
    if text.startswith("{"):
        doc = json.loads(text)
        result = doc.get("GetCallerIdentityResponse", {}).get("GetCallerIdentityResult", doc)
        return Identity(str(result["Arn"]), str(result["Account"]), str(result["UserId"]))
    root = ET.fromstring(text)
    values = {el.tag.rsplit("}", 1)[-1]: (el.text or "") for el in root.iter()}
    if "Arn" not in values:
        raise TokenRejected("STS answered without an Arn")
    return Identity(values["Arn"], values.get("Account", ""), values.get("UserId", ""))


def signature_matches(url: str, cluster: str, secret_key: str, session_token: str | None) -> bool:
    """Recompute the presigned URL's SigV4 query signature with `x-k8s-aws-id: <cluster>`.

    This is STS's own check, which moto skips: a token signed for another cluster's name, or with a
    wrong secret, fails here as it would in AWS.
    """
    from botocore.auth import SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    parts = urllib.parse.urlsplit(url)
    query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    given = query.get("X-Amz-Signature", "")
    access_key, _date, region, service, _ = query["X-Amz-Credential"].split("/")
    # Everything but the signature is what was signed, byte for byte as it appears in the URL.
    unsigned = "&".join(p for p in parts.query.split("&") if not p.startswith("X-Amz-Signature="))
    request = AWSRequest(
        method="GET",
        url=urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path or "/", unsigned, "")),
        headers={CLUSTER_ID_HEADER: cluster},
    )
    request.context["timestamp"] = query["X-Amz-Date"]
    auth = SigV4QueryAuth(
        Credentials(access_key, secret_key, session_token), service, region, int(query.get("X-Amz-Expires", 60))
    )
    expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
    return hmac.compare_digest(str(expected), given)


def verify_signature(url: str, cluster: str, moto_endpoint: str) -> None:
    """Fetch the key's secret from the moto server and check the signature; TokenRejected if not."""
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    access_key = query.get("X-Amz-Credential", "").split("/", 1)[0]
    try:
        with urllib.request.urlopen(f"{moto_endpoint}/_nodewright/credentials/{access_key}", timeout=STS_TIMEOUT) as r:
            secret = json.loads(r.read())
    except urllib.error.HTTPError as exc:
        raise TokenRejected("the token's access key is not valid (InvalidClientTokenId)") from exc
    except OSError as exc:  # a timeout or a refused connection: not authenticated, never an unanswered review
        raise TokenRejected(f"STS did not answer: {exc}") from exc
    if not signature_matches(url, cluster, secret["secret_access_key"], secret.get("session_token")):
        raise TokenRejected(f"the signature does not match (not signed for cluster {cluster!r}?)")


def replay(url: str, cluster: str, sts_endpoint: str) -> Identity:
    """Send the presigned request to moto's STS (keeping the signed query and header)."""
    parts = urllib.parse.urlsplit(url)
    target = urllib.parse.urlsplit(sts_endpoint)
    replayed = urllib.parse.urlunsplit((target.scheme, target.netloc, parts.path or "/", parts.query, ""))
    headers = {CLUSTER_ID_HEADER: cluster}
    query = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query).items()}
    if "X-Amz-Credential" in query:
        # moto identifies the caller only from an Authorization header, not from SigV4 query
        # parameters; restate the same credential and signature in header form for it.
        headers["Authorization"] = (
            f"{query.get('X-Amz-Algorithm', 'AWS4-HMAC-SHA256')} Credential={query['X-Amz-Credential']}, "
            f"SignedHeaders={query.get('X-Amz-SignedHeaders', '')}, Signature={query.get('X-Amz-Signature', '')}"
        )
    request = urllib.request.Request(replayed, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=STS_TIMEOUT) as response:
            return parse_caller_identity(response.read())
    except urllib.error.HTTPError as exc:
        raise TokenRejected(f"STS refused the token: HTTP {exc.code}") from exc
    except OSError as exc:
        raise TokenRejected(f"STS did not answer: {exc}") from exc


def review(token: str, config: dict[str, Any], now: datetime.datetime, verified: Verified | None = None) -> User:
    """Authenticate one bearer token; TokenRejected when it is not a valid mapped EKS token.

    `verified`: what STS said for tokens of this cluster, by token, with when it said it. A client reuses a
    token for 14 minutes, and STS's answer for it cannot change while it is valid: asking once is enough. Its
    time is still checked, and its mapping applied, at every review. Without this, a moto server busy for seconds
    (a planner describing 3,000 instances) turned a token reviewed a minute before into a 401."""
    try:
        url = decode_token(token)
    except ValueError as exc:
        raise TokenRejected(str(exc)) from exc
    cluster = str(config.get("cluster", ""))
    check_presigned_url(url, cluster, now)
    known = verified.get(token) if verified is not None else None
    if known is not None:
        return map_identity(known[0], list(config.get("mappings", [])))
    if config.get("verify_signatures", True):
        verify_signature(url, cluster, str(config["sts_endpoint"]))
    identity = replay(url, cluster, str(config["sts_endpoint"]))
    if verified is not None:
        # The server's threads share `verified`: the entries are copied before the walk (one C call) and popped, so
        # a review beside this one never meets a dict changing under it or an entry already gone.
        for old, (_, at) in list(verified.items()):
            if now - at > TOKEN_LIFETIME:
                verified.pop(old, None)
        verified[token] = (identity, now)
    return map_identity(identity, list(config.get("mappings", [])))


def token_review_response(user: User | None, error: str = "") -> dict[str, Any]:
    """A TokenReview answer for kube-apiserver."""
    status: dict[str, Any] = {"authenticated": user is not None}
    if user is not None:
        status["user"] = {"username": user.username, "uid": user.uid, "groups": list(user.groups)}
    if error:
        status["error"] = error
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status}


def serve(port: int, config_path: Path, cert: Path, key: Path) -> None:
    """Serve TokenReviews over HTTPS on 127.0.0.1:`port` until terminated."""

    verified: Verified = {}  # see `review`; the server's threads share it

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                doc = json.loads(self.rfile.read(length) or b"{}")
                token = str(doc.get("spec", {}).get("token", ""))
                config = json.loads(config_path.read_text())
                user: User | None = review(token, config, datetime.datetime.now(datetime.UTC), verified)
                answer = token_review_response(user)
                self.log_message("authenticated %s as %s", user.username if user else "-", "ok")
            except TokenRejected as exc:
                answer = token_review_response(None, str(exc))
                self.log_message("rejected: %s", exc)
            payload = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            # Health probe for the world's start-up check.
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"token webhook on https://127.0.0.1:{port}", flush=True)
    server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the webhook process."""
    parser = argparse.ArgumentParser(description="EKS token-review webhook for the local world")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--cert", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    args = parser.parse_args(argv)
    serve(args.port, args.config, args.cert, args.key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
