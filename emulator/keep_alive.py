"""The endpoint's connections kept open between requests (HTTP/1.1 keep-alive), as AWS's are.

werkzeug's development server, which moto's server mode uses, answers every request with
``Connection: close``: each SDK call then opened a new TCP connection and the server started a new
thread for it, the client's side rebuilt its connection, and each answer waited for the client to
hang up. That was much of an emulator shard's CPU (the SDK calls of the Step Functions engine, the
Lambda instances and the tests all go through it). werkzeug closes because Python's http.server
cannot find the next request on a connection whose body the application left unread; here the body
is bounded by its ``Content-Length`` and drained after the answer, and the answer carries its own
length, so the next request starts where it should.

A request whose body is chunked, and an answer the application streams without a length, go
werkzeug's way and close the connection after them.
"""

from __future__ import annotations

import socket
import traceback
from typing import Any

from moto.moto_server.werkzeug_app import MotoRequestHandler
from werkzeug.wsgi import LimitedStream

# Answers that never carry a body (RFC 9110 6.4.1); a HEAD answer keeps the length the GET would have.
_BODILESS = {204, 304}


class KeepAliveRequestHandler(MotoRequestHandler):
    # An answer's head and body go out as two writes; with Nagle's algorithm the body would wait for
    # the client's delayed acknowledgement of the head on a connection kept open (40 ms on Linux).
    disable_nagle_algorithm = True

    def run_wsgi(self) -> None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            return super().run_wsgi()
        if self.headers.get("Expect", "").lower().strip(" \t") == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.environ = environ = self.make_environ()
        body = LimitedStream(self.rfile, int(self.headers.get("Content-Length") or 0))
        environ["wsgi.input"] = body
        answer: dict[str, Any] = {}
        written: list[bytes] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            answer["status"], answer["headers"] = status, headers
            return written.append

        try:
            chunks = self.server.app(environ, start_response)
            try:
                written.extend(chunks)
            finally:
                if hasattr(chunks, "close"):
                    chunks.close()
            body.exhaust()
        except (ConnectionError, socket.timeout) as error:
            self.close_connection = True
            self.connection_dropped(error, environ)
            return
        except Exception:
            self.close_connection = True
            self.log_error("Error on request:\n%s", traceback.format_exc())
            self.send_error(500)
            return
        status, _, reason = answer["status"].partition(" ")
        code = int(status)
        self.send_response(code, reason)
        bodiless = code in _BODILESS or self.command == "HEAD"
        # The answer's own framing replaces the application's; a bodiless one keeps its stated length.
        replaced = {"connection", "transfer-encoding"} if bodiless else {"connection", "transfer-encoding", "content-length"}
        for key, value in answer["headers"]:
            if key.lower() not in replaced:
                self.send_header(key, value)
        data = b"".join(written)
        if not bodiless:
            self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if not bodiless:
            self.wfile.write(data)
