"""`python -m nodewright.forwarder`: run one forwarder replica until SIGTERM or SIGINT.

Configuration comes from the environment (nodewright.settings.ForwarderSettings for the required values,
nodewright.forwarder.config for the tunables, LOG_LEVEL as the chart's `logLevel`: debug, info, warn or
error). Exit status 2 means a setting is missing or wrong.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from types import FrameType

from nodewright.settings import SettingsError


def main() -> int:
    from nodewright.forwarder.observe import Probes, configure_logging, serve

    # Karpenter's names (its chart's logLevel): warn is Python's WARNING.
    levels = {"debug": "DEBUG", "info": "INFO", "warn": "WARNING", "warning": "WARNING", "error": "ERROR"}
    level = os.environ.get("LOG_LEVEL", "").strip().lower() or "info"
    configure_logging(levels.get(level, "INFO"))
    log = logging.getLogger("nodewright.forwarder")
    if level not in levels:
        log.error("invalid configuration", extra={"fields": {"error": f"LOG_LEVEL={level!r}: use {', '.join(levels)}"}})
        return 2
    from nodewright.forwarder.config import ForwarderConfig

    try:
        config = ForwarderConfig.from_env()
    except SettingsError as exc:
        log.error("invalid configuration", extra={"fields": {"error": str(exc)}})
        return 2
    # The clients are imported only now: `--help`-style failures above stay fast and dependency-free.
    from nodewright.forwarder import kube
    from nodewright.forwarder.app import Forwarder
    from nodewright.forwarder.heartbeat import CloudWatchPublisher
    from nodewright.forwarder.invoker import LambdaInvoker

    api = kube.api_client()
    lease = kube.LeaseStore(api, config.lease_namespace, config.lease_name)

    def on_leadership(leading: bool) -> None:
        if leading:
            involved = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "name": config.lease_name,
                "namespace": config.lease_namespace,
            }
            kube.record_event(
                api, config.lease_namespace, involved, "LeaderElection", f"{config.identity} became leader"
            )

    forwarder = Forwarder(
        config=config,
        pods=kube.PodSource(api),
        nodes=kube.NodeSource(api),
        bound_pods=kube.BoundPodSource(api),
        nodeclaim_of=kube.NodeClaimIndex(api).nodeclaim_of,
        leases=lease,
        invoker=LambdaInvoker(
            config.settings.provisioner_function,
            config.settings.region,
            attempts=config.invoke_attempts,
            timeout_seconds=config.invoke_timeout_seconds,
        ),
        gone=kube.Gone,
        publisher=CloudWatchPublisher(config.settings.cluster, config.settings.region),
        on_leadership=on_leadership,
    )
    server = serve(Probes(forwarder.alive, forwarder.ready, forwarder.metrics), config.bind, config.port)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("stopping", extra={"fields": {"signal": signal.Signals(signum).name}})
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info(
        "forwarder starting",
        extra={
            "fields": {
                "identity": config.identity,
                "cluster": config.settings.cluster,
                "function": config.settings.provisioner_function,
                "lease": f"{config.lease_namespace}/{config.lease_name}",
                "port": server.server_address[1],
                "idle_seconds": config.batch.idle_seconds,
                "max_seconds": config.batch.max_seconds,
                "log_level": level,
            }
        },
    )
    try:
        forwarder.run(stop)
    finally:
        server.shutdown()
    log.info("forwarder stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
