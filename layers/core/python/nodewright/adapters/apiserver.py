"""HTTP(S) to one Kubernetes API server: requests with a fresh bearer token, retries only where safe, and watches
read line by line as they arrive. What the requests mean is `kubernetes_cluster`'s."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from urllib.parse import urlencode

CONNECT_TIMEOUT_SECONDS = 5.0
READ_TIMEOUT_SECONDS = 30.0


class ApiError(Exception):
    """The API server answered with an error status."""

    def __init__(self, status: int, method: str, path: str, body: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


class ApiServer:
    """HTTP(S) requests to one Kubernetes API server, each with a fresh-enough bearer token.

    `endpoint` is the server's base URL; `ca_pem` the PEM bundle that signs its certificate (None: the
    system's trust store); `token()` is called per request and is expected to cache (EksTokenSource does).
    Connection failures are retried (the request never reached the server); a request that reached it is
    retried only when it is idempotent and the read failed, and HTTP error statuses are returned, not retried.
    `connections`: how many requests may be in flight at once (the threads of the caller's widest fan-out).
    """

    def __init__(self, endpoint: str, ca_pem: str | None, token: Callable[[], str], connections: int) -> None:
        import urllib3

        self._base = endpoint.rstrip("/")
        self._token = token
        self._pool = urllib3.PoolManager(
            num_pools=1,
            maxsize=connections,
            cert_reqs="CERT_REQUIRED",
            ca_cert_data=ca_pem,
            retries=urllib3.Retry(total=3, connect=3, read=1, status=0, backoff_factor=0.2, redirect=False),
            timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_SECONDS, read=READ_TIMEOUT_SECONDS),
        )

    @property
    def endpoint(self) -> str:
        """The server's base URL (what a process's informers are kept by)."""
        return self._base

    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, bytes]:
        """Send one request; returns (HTTP status, body bytes)."""
        url = self._base + path + (f"?{urlencode(list(query))}" if query else "")
        sent = {**(headers or {}), "Authorization": f"Bearer {self._token()}"}
        response = self._pool.request(method, url, body=body, headers=sent, redirect=False)
        return int(response.status), bytes(response.data)

    def stream(self, path: str, query: Sequence[tuple[str, str]], headers: Mapping[str, str]) -> Iterator[bytes]:
        """A GET's body line by line as it arrives (a watch); an error status raises ApiError. Closing the
        iterator before the end drops the connection instead of waiting for the server to end the body."""
        url = self._base + path + (f"?{urlencode(list(query))}" if query else "")
        sent = {**headers, "Authorization": f"Bearer {self._token()}"}
        response = self._pool.request("GET", url, headers=sent, redirect=False, preload_content=False)
        try:
            if response.status >= 400:
                raise ApiError(int(response.status), "GET", path, response.read().decode(errors="replace"))
            pending = b""
            for chunk in response.stream(2**16, decode_content=True):
                *lines, pending = (pending + chunk).split(b"\n")
                yield from lines
            if pending:
                yield pending
        finally:
            response.close()
            response.release_conn()
