"""The forwarder's tunables, read from its environment when it starts (never at import time).

The three required settings (cluster, provisioner function, region) are `nodewright.settings.
ForwarderSettings`; everything here has a default, so the Deployment only sets what it changes:

| variable | default | meaning |
|---|---|---|
| NODEWRIGHT_FORWARDER_IDLE_SECONDS | 1 | the window closes this long after the last new pending pod |
| NODEWRIGHT_FORWARDER_MAX_SECONDS | 10 | ... or this long after the first, whichever is first |
| NODEWRIGHT_FORWARDER_RESEND_INITIAL_SECONDS | 10 | a delivered, still pending pod goes again after this (Karpenter) |
| NODEWRIGHT_FORWARDER_RESEND_MAX_SECONDS | 10 | ... doubling per delivered batch up to this (no growth by default) |
| NODEWRIGHT_FORWARDER_UNDELIVERED_RETRY_SECONDS | 5 | the pods of a batch whose Invoke failed go again after this |
| NODEWRIGHT_FORWARDER_REGISTRATION_RESEND_INITIAL_SECONDS | 5 | an unregistered node is sent again after this |
| NODEWRIGHT_FORWARDER_REGISTRATION_RESEND_MAX_SECONDS | 60 | ... doubling per send up to this |
| NODEWRIGHT_FORWARDER_PAYLOAD_LIMIT_BYTES | 5242880 | largest Invoke request body (Lambda's sync limit: 6 MB) |
| NODEWRIGHT_FORWARDER_INVOKE_ATTEMPTS | 5 | tries per payload on throttling and server errors |
| NODEWRIGHT_FORWARDER_INVOKE_TIMEOUT_SECONDS | 330 | read timeout of one Invoke (above the provisioner's own timeout) |
| NODEWRIGHT_FORWARDER_LEASE_NAME | nodewright-forwarder | the coordination.k8s.io Lease |
| POD_NAMESPACE | nodewright | namespace of the Lease (the Deployment sets it from the downward API) |
| POD_NAME | host name + random suffix | this replica's identity in the Lease |
| NODEWRIGHT_FORWARDER_LEASE_SECONDS | 15 | lease duration |
| NODEWRIGHT_FORWARDER_RENEW_DEADLINE_SECONDS | 10 | the leader steps down if it could not renew for this long |
| NODEWRIGHT_FORWARDER_RETRY_SECONDS | 2 | how often candidates and the leader touch the Lease |
| NODEWRIGHT_FORWARDER_PORT | 8080 | /healthz, /readyz, /metrics |
| NODEWRIGHT_FORWARDER_HEARTBEAT_SECONDS | 60 | how often the leader publishes its heartbeat (heartbeat.py) |
| NODEWRIGHT_FORWARDER_BIND | 0.0.0.0 | address the HTTP server binds |
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from nodewright.forwarder.batching import (
    DEFAULT_PAYLOAD_LIMIT,
    KARPENTER_REQUEUE_SECONDS,
    LAMBDA_SYNC_PAYLOAD_LIMIT,
    BatchPolicy,
)
from nodewright.forwarder.leader import LeasePolicy
from nodewright.forwarder.registration import RegistrationPolicy
from nodewright.settings import ForwarderSettings, SettingsError

PREFIX = "NODEWRIGHT_FORWARDER_"


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"environment variable {name}={raw!r} is not a number") from None
    if value <= 0:
        raise SettingsError(f"environment variable {name} must be positive, not {raw}")
    return value


@dataclass(frozen=True, slots=True)
class ForwarderConfig:
    settings: ForwarderSettings
    batch: BatchPolicy
    lease: LeasePolicy
    payload_limit: int
    invoke_attempts: int
    invoke_timeout_seconds: float
    lease_name: str
    lease_namespace: str
    identity: str
    port: int
    bind: str
    registration: RegistrationPolicy = field(default_factory=RegistrationPolicy)
    heartbeat_seconds: float = 60.0

    @staticmethod
    def from_env(env: Mapping[str, str] | None = None) -> ForwarderConfig:
        """Read everything (default: os.environ). Raises SettingsError naming the variable at fault."""
        env = os.environ if env is None else env
        try:
            batch = BatchPolicy(
                idle_seconds=_number(env, PREFIX + "IDLE_SECONDS", 1.0),
                max_seconds=_number(env, PREFIX + "MAX_SECONDS", 10.0),
                resend_initial_seconds=_number(env, PREFIX + "RESEND_INITIAL_SECONDS", KARPENTER_REQUEUE_SECONDS),
                resend_max_seconds=_number(env, PREFIX + "RESEND_MAX_SECONDS", KARPENTER_REQUEUE_SECONDS),
                undelivered_retry_seconds=_number(env, PREFIX + "UNDELIVERED_RETRY_SECONDS", 5.0),
            )
            lease = LeasePolicy(
                lease_seconds=_number(env, PREFIX + "LEASE_SECONDS", 15.0),
                renew_deadline_seconds=_number(env, PREFIX + "RENEW_DEADLINE_SECONDS", 10.0),
                retry_seconds=_number(env, PREFIX + "RETRY_SECONDS", 2.0),
            )
            registration = RegistrationPolicy(
                resend_initial_seconds=_number(env, PREFIX + "REGISTRATION_RESEND_INITIAL_SECONDS", 5.0),
                resend_max_seconds=_number(env, PREFIX + "REGISTRATION_RESEND_MAX_SECONDS", 60.0),
            )
        except ValueError as exc:
            raise SettingsError(f"forwarder timings: {exc}") from None
        limit = int(_number(env, PREFIX + "PAYLOAD_LIMIT_BYTES", DEFAULT_PAYLOAD_LIMIT))
        if limit > LAMBDA_SYNC_PAYLOAD_LIMIT:
            raise SettingsError(f"{PREFIX}PAYLOAD_LIMIT_BYTES={limit} is above Lambda's 6 MB synchronous limit")
        identity = env.get("POD_NAME", "").strip() or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"
        return ForwarderConfig(
            settings=ForwarderSettings.from_env(env),
            batch=batch,
            lease=lease,
            payload_limit=limit,
            invoke_attempts=int(_number(env, PREFIX + "INVOKE_ATTEMPTS", 5)),
            invoke_timeout_seconds=_number(env, PREFIX + "INVOKE_TIMEOUT_SECONDS", 330.0),
            lease_name=env.get(PREFIX + "LEASE_NAME", "").strip() or "nodewright-forwarder",
            lease_namespace=env.get("POD_NAMESPACE", "").strip() or "nodewright",
            identity=identity,
            port=int(_number(env, PREFIX + "PORT", 8080)),
            bind=env.get(PREFIX + "BIND", "").strip() or "0.0.0.0",
            registration=registration,
            heartbeat_seconds=_number(env, PREFIX + "HEARTBEAT_SECONDS", 60.0),
        )
