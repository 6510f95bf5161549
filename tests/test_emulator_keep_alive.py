"""The endpoint keeps a connection open between requests (emulator/keep_alive.py), as AWS's endpoints
do for HTTP/1.1 (https://www.rfc-editor.org/rfc/rfc9112#section-9.3: persistent unless either side
says ``Connection: close``), and a body the endpoint never read does not become the next request."""

from __future__ import annotations

import json
import socket
from http.client import HTTPResponse
from urllib.parse import urlsplit

import pytest

from emulator.clock import CLOCK_PATH


def _connect(aws) -> socket.socket:
    address = urlsplit(aws.endpoint_url)
    return socket.create_connection((address.hostname, address.port), timeout=10)


@pytest.fixture
def connection(aws):
    with _connect(aws) as sock:
        yield sock


def _exchange(sock: socket.socket, request: bytes) -> tuple[HTTPResponse, bytes]:
    sock.sendall(request)
    response = HTTPResponse(sock, method=request.split(b" ", 1)[0].decode())
    response.begin()
    return response, response.read()


def test_requests_follow_one_another_on_one_connection_whatever_the_first_body_held(aws, connection):
    # Given: a GET of the clock with a body the clock's endpoint never reads, shaped like a request line
    smuggled = b"GET /nowhere HTTP/1.1\r\n\r\n"
    first, body = _exchange(connection, b"GET " + CLOCK_PATH.encode() + b" HTTP/1.1\r\nHost: emulator\r\n"
                            b"Content-Length: " + str(len(smuggled)).encode() + b"\r\n\r\n" + smuggled)
    # Then: it is answered with its length, and the connection stays open
    assert first.status == 200 and "paused" in json.loads(body)
    assert first.getheader("Connection") is None and int(first.getheader("Content-Length")) == len(body)
    # When: a second request follows on the same connection
    second, body = _exchange(connection, b"GET " + CLOCK_PATH.encode() + b" HTTP/1.1\r\nHost: emulator\r\n\r\n")
    # Then: it is the one answered (not the body left over from the first)
    assert second.status == 200 and "paused" in json.loads(body)


def test_a_client_that_says_close_and_a_chunked_body_each_end_their_connection(aws, connection):
    closing, _ = _exchange(connection, b"GET " + CLOCK_PATH.encode() + b" HTTP/1.1\r\nHost: emulator\r\nConnection: close\r\n\r\n")
    assert closing.status == 200 and connection.recv(1) == b""
    with _connect(aws) as sock:
        chunked, body = _exchange(sock, b"POST " + CLOCK_PATH.encode() + b"/pause HTTP/1.1\r\nHost: emulator\r\n"
                                  b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
        try:
            assert chunked.status == 200 and json.loads(body)["paused"] is True
            assert chunked.getheader("Connection") == "close" and sock.recv(1) == b""
        finally:
            aws.clock.resume()
