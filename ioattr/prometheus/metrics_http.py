"""The exporter's HTTP endpoint: GET /metrics, plain or gzip, from a threaded stdlib server.

The body comes from a callable returning (text, gzip) bytes, so the big
part can be rendered and compressed once per drain and served as is to
every scrape until the next one. A gzip stream may hold several members,
which is how the per-scrape part (process metrics) is appended to the
cached one without recompressing it (Go's and Python's gzip readers read
multi-member streams, as RFC 1952 allows).
"""
from __future__ import annotations

import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, cast

from ioattr.prometheus.metrics_text import CONTENT_TYPE

INDEX = (b"<html><head><title>ioattr exporter</title></head><body><h1>ioattr exporter</h1>"
         b"<p><a href=\"/metrics\">/metrics</a></p></body></html>\n")


class _Handler(BaseHTTPRequestHandler):
    server_version = "ioattr-exporter"
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path = self.path.split("?", 1)[0]
        if path in ("/metrics", "/metrics/"):
            wants_gzip = "gzip" in (self.headers.get("Accept-Encoding") or "")
            try:
                plain, gz = cast(_Server, self.server).body(wants_gzip)
            except Exception as e:  # noqa: BLE001 - a scrape error is the scraper's to see
                self._send(500, b"error collecting metrics: " + str(e).encode() + b"\n", "text/plain")
                return
            if wants_gzip:
                self._send(200, gz, CONTENT_TYPE, gzip=True)
            else:
                self._send(200, plain, CONTENT_TYPE)
        elif path == "/":
            self._send(200, INDEX, "text/html; charset=utf-8")
        else:
            self._send(404, b"not found: try /metrics\n", "text/plain")

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET()

    def _send(self, code: int, body: bytes, ctype: str, gzip: bool = False) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        if gzip:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass  # no line per scrape on stderr


class _Server(ThreadingHTTPServer):
    """The threaded server, holding what a scrape is served (body) for its handlers."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int, body: Callable[[bool], tuple[bytes, bytes]]) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.body = body
        super().__init__((host, port), _Handler)  # OSError when the address is taken

    def handle_error(self, request: object, client_address: object) -> None:
        """A scraper that hangs up mid-request or mid-response (Prometheus stopped, a
        scrape timeout, curl interrupted) is not ioattr's error: nothing on stderr, where
        socketserver would print a traceback. Anything else is one line."""
        err = sys.exc_info()[1]
        if isinstance(err, (ConnectionError, TimeoutError)):
            return
        print(f"ioattr exporter: error serving {client_address}: {type(err).__name__}: {err}",
              file=sys.stderr)


class MetricsServer:
    """Serve `body(gzip) -> (plain, gzipped)` on host:port until stop()."""

    def __init__(self, host: str, port: int, body: Callable[[bool], tuple[bytes, bytes]]) -> None:
        self.httpd = _Server(host, port, body)
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="metrics-http", daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def start(self) -> "MetricsServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.thread.is_alive():
            self.httpd.shutdown()
            self.thread.join(5)
        self.httpd.server_close()
