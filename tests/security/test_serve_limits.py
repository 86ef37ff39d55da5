"""`ridercrm serve` bounds what a client can make it hold: header size and count, and the
time to send the headers and the body. Real sockets against a real `ridercrm serve`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.live import free_port

RIDERCRM = str(Path(sys.executable).with_name("ridercrm"))
HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 2.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, int, str]]:
    """A `ridercrm serve` with short timeouts: (host, port, pid, an admin key)."""
    directory = tmp_path_factory.mktemp("serve")
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RIDERCRM_")},
        "RIDERCRM_DATABASE_URL": f"sqlite:///{directory / 'crm.db'}",
        "RIDERCRM_HEADER_TIMEOUT_SECONDS": str(HEADER_TIMEOUT),
        "RIDERCRM_BODY_TIMEOUT_SECONDS": str(BODY_TIMEOUT),
    }
    for step in (["db", "upgrade"], ["keys", "create", "--name", "t", "--scope", "admin"]):
        done = subprocess.run(
            [RIDERCRM, *step], env=env, capture_output=True, text=True, check=True, timeout=60
        )
    key = done.stdout.splitlines()[-1]
    log = (directory / "serve.log").open("wb")
    process = subprocess.Popen(
        [RIDERCRM, "serve", "--port", str(port)],
        cwd=directory,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (directory / "serve.log").read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        yield "127.0.0.1", port, process.pid, key
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()


def connect(server: tuple[str, int, int, str]) -> socket.socket:
    sock = socket.create_connection(server[:2], timeout=10)
    return sock


def answer(sock: socket.socket, timeout: float = 10) -> bytes:
    """Everything the server sends until it closes the connection (or the timeout)."""
    sock.settimeout(timeout)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return received


def send_until_closed(sock: socket.socket, chunks: Iterator[bytes]) -> int:
    """Send chunks until the server stops reading; how many bytes went out."""
    sent = 0
    try:
        for chunk in chunks:
            sock.sendall(chunk)
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError, TimeoutError):
        pass
    return sent


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_an_8_mb_header_is_refused_with_431(server: tuple[str, int, int, str]) -> None:
    with connect(server) as sock:
        head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "
        sent = send_until_closed(sock, iter([head, *([b"a" * 65536] * 128)]))
        reply = answer(sock)
    assert reply.startswith(b"HTTP/1.1 431 "), reply[:200]
    assert sent < 8 * 1024 * 1024


def test_20000_headers_are_refused_with_431(server: tuple[str, int, int, str]) -> None:
    with connect(server) as sock:
        headers = b"".join(b"X-%d: v\r\n" % i for i in range(20_000))
        send_until_closed(sock, iter([b"GET /healthz HTTP/1.1\r\nHost: x\r\n", headers, b"\r\n"]))
        assert answer(sock).startswith(b"HTTP/1.1 431 ")


def test_more_headers_than_the_limit_are_refused_with_431(
    server: tuple[str, int, int, str],
) -> None:
    """150 short headers fit in the size limit; the count limit (100) refuses them."""
    with connect(server) as sock:
        headers = b"".join(b"X-%d: v\r\n" % i for i in range(150))
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
        reply = answer(sock)
    assert reply.startswith(b"HTTP/1.1 431 "), reply[:200]
    # Within the limits the same request is answered.
    with connect(server) as sock:
        headers = b"".join(b"X-%d: v\r\n" % i for i in range(90))
        sock.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + headers + b"\r\n"
        )
        assert answer(sock).startswith(b"HTTP/1.1 200 ")


def test_unfinished_headers_do_not_grow_the_server(server: tuple[str, int, int, str]) -> None:
    """Six connections each trickling a 16 MiB header: the server keeps at most the
    header limit of each, answers 431 and closes; its memory stays put."""
    pid = server[2]
    before = rss_kib(pid)
    sockets = [connect(server) for _ in range(6)]
    try:
        for sock in sockets:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
        sent = [send_until_closed(sock, iter([b"a" * 65536] * 256)) for sock in sockets]
        replies = [answer(sock) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
    assert all(reply.startswith(b"HTTP/1.1 431 ") for reply in replies), replies
    assert all(count < 4 * 1024 * 1024 for count in sent), sent
    assert rss_kib(pid) - before < 20 * 1024


def test_a_header_byte_every_half_second_is_dropped(server: tuple[str, int, int, str]) -> None:
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        trickle = (b"X-Slow: " + b"a" * 40)[:40]
        sent = send_until_closed(sock, _slowly(trickle, 0.5))
        reply = answer(sock)
        elapsed = time.monotonic() - started
    assert sent < len(trickle)
    assert reply == b"" or reply.startswith(b"HTTP/1.1 408 "), reply[:200]
    assert elapsed < HEADER_TIMEOUT + 5


def _slowly(data: bytes, pause: float) -> Iterator[bytes]:
    for byte in data:
        time.sleep(pause)
        yield bytes([byte])


def test_an_idle_connection_is_dropped(server: tuple[str, int, int, str]) -> None:
    with connect(server) as sock:
        started = time.monotonic()
        reply = answer(sock)
        assert time.monotonic() - started < HEADER_TIMEOUT + 5
    assert reply == b"" or reply.startswith(b"HTTP/1.1 408 ")


def test_a_body_shorter_than_its_content_length_gets_408(server: tuple[str, int, int, str]) -> None:
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(
            b"POST /crm/modify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"X-API-Key: " + server[3].encode() + b"\r\nContent-Length: 100\r\n\r\n{"
        )
        reply = answer(sock, timeout=BODY_TIMEOUT + 10)
        elapsed = time.monotonic() - started
    assert elapsed < BODY_TIMEOUT + 5
    assert reply == b"" or reply.startswith(b"HTTP/1.1 408 "), reply


def test_a_kept_alive_connection_serves_requests_within_the_limits(
    server: tuple[str, int, int, str],
) -> None:
    with httpx.Client(base_url=f"http://{server[0]}:{server[1]}", timeout=10) as client:
        for _ in range(3):
            assert client.get("/healthz").status_code == 200
            time.sleep(HEADER_TIMEOUT / 2)
        body = b'{"people_data": []}'
        response = client.post("/crm/modify", content=body, headers={"X-API-Key": "rcrm_x"})
        assert response.status_code == 401
