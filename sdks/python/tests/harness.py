"""What the integration tests share: the sandbox's Motor (environment of
sdks/motor-sandbox), its operator API, a real webhook receiver and a TCP
proxy on loopback, and waiting on a condition with a deadline."""

from __future__ import annotations

import json
import os
import queue
import socket
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is unset: run the suite through sdks/python/test (sdks/motor-sandbox)")
    return value


def admin(method: str, path: str, body: Any = None) -> Any:
    """The operator API (Bearer $MOTOR_ADMIN_TOKEN)."""
    request = urllib.request.Request(
        env("MOTOR_URL") + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {env('MOTOR_ADMIN_TOKEN')}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        raw = response.read()
    return json.loads(raw) if raw else None


def new_instance() -> str:
    """A fresh instance of the sandbox's app: its seqs start at 1."""
    created = admin(
        "POST", f"/v1/admin/apps/{env('MOTOR_APP_ID')}/instances", {"nombre": f"py-{uuid.uuid4().hex[:8]}"}
    )
    return created["id"]


def new_key(scopes: list[str], instancias: list[str] | None = None) -> str:
    created = admin(
        "POST",
        f"/v1/admin/apps/{env('MOTOR_APP_ID')}/keys",
        {"nombre": f"py-{uuid.uuid4().hex[:8]}", "scopes": scopes, "instancias": instancias or []},
    )
    return created["token"]


def wait_until(what: str, check: Callable[[], Any], timeout: float = 15.0, every: float = 0.05) -> Any:
    """Polls ``check`` until it returns something truthy; fails the test
    with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


@dataclass
class Request:
    path: str
    headers: Any  # the http.server message (get_all)
    pairs: list[tuple[str, str]]
    body: bytes
    answered: int = 0


@dataclass
class Receiver:
    """A webhook receiver on 127.0.0.1:<port 0>. Each path may have a
    handler ``(request) -> status``; the default answers 204. Every request
    is recorded with the status it got."""

    server: ThreadingHTTPServer
    handlers: dict[str, Callable[[Request], int]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def received(self, path: str, where: Callable[[Request], bool] = lambda r: True) -> list[Request]:
        with self.lock:
            return [r for r in self.requests if r.path == path and where(r)]


def start_receiver() -> Receiver:
    holder: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            request = Request(self.path, self.headers, list(self.headers.items()), body)
            receiver = holder["r"]
            handler = receiver.handlers.get(self.path)
            try:
                status = handler(request) if handler else 204
            except Exception:  # a test's handler failing is a 500, as in a real receiver
                status = 500
            request.answered = status
            with receiver.lock:
                receiver.requests.append(request)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    holder["r"] = Receiver(server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return holder["r"]


class Proxy:
    """A TCP proxy on loopback in front of Motor: records what clients send
    and can cut every open connection (a network failure, for real)."""

    def __init__(self, target_port: int) -> None:
        self._target = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.sent = b""
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._target))
            with self._lock:
                self._open += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, record: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if record:
                    with self._lock:
                        self.sent += chunk
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        with self._lock:
            sockets, self._open = self._open, []
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self._listener.close()
        self.cut()


def consume(stream, into: queue.Queue[Any]) -> threading.Thread:
    """Iterates ``stream`` on a thread, putting each envelope (or the error
    that ended it) into ``into``."""

    def run() -> None:
        try:
            for envelope in stream:
                into.put(envelope)
        except Exception as e:  # handed to the test
            into.put(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def take(into: queue.Queue[Any], n: int, timeout: float = 15.0) -> list[Any]:
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n:
        try:
            item = into.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            pytest.fail(f"timed out with {len(got)} of {n} stream events")
        if isinstance(item, Exception):
            raise item
        got.append(item)
    return got
