"""JSON log lines and the HTTP endpoints (/healthz, /readyz, /metrics) of the forwarder."""

from __future__ import annotations

import datetime
import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from nodewright.forwarder.metrics import ForwarderMetrics


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and the record's `fields` (a dict) merged in."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, separators=(",", ":"))


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # The clients log every request at DEBUG and retries at INFO; our own lines say what matters.
    for noisy in ("botocore", "urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


class Probes:
    """What the endpoints report. `alive()` and `ready()` are called from the HTTP server's threads."""

    def __init__(self, alive: Callable[[], bool], ready: Callable[[], bool], metrics: ForwarderMetrics) -> None:
        self.alive = alive
        self.ready = ready
        self.metrics = metrics


def serve(probes: Probes, bind: str, port: int) -> ThreadingHTTPServer:
    """Start the endpoints on a daemon thread; returns the server (`shutdown()` stops it)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/healthz":
                self._reply(200 if probes.alive() else 503, "ok\n" if probes.alive() else "main loop stalled\n")
            elif self.path == "/readyz":
                ready = probes.ready()
                self._reply(200 if ready else 503, "ok\n" if ready else "pods not listed yet\n")
            elif self.path == "/metrics":
                self._reply(200, probes.metrics.render(), "text/plain; version=0.0.4; charset=utf-8")
            else:
                self._reply(404, "not found\n")

        def _reply(self, status: int, text: str, content_type: str = "text/plain; charset=utf-8") -> None:
            body = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            # Probes hit these every few seconds; they are not worth a log line each.
            return

    server = ThreadingHTTPServer((bind, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    return server
