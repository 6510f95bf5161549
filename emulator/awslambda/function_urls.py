"""Lambda function URLs on loopback: an HTTP listener per URL that invokes the function's real code.

moto stores a function URL's configuration and makes up an ``https://<url-id>.lambda-url...``
address that answers nowhere. Here each function URL gets its own port on 127.0.0.1 (so the path a
client asks for is the path the function sees, as on AWS) and each request becomes the documented
payload format 2.0 event; the function's answer becomes the HTTP response, with Lambda's inference
for answers without a ``statusCode``
(https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html).

Plain HTTP, not HTTPS: the listener is reachable from this machine only, where browsers treat
http://127.0.0.1 as a secure context, and curl or a browser need no certificate to trust.
"""

from __future__ import annotations

import base64
import datetime as _datetime
import json
import secrets
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qsl

from emulator.clock import SimClock

# The synchronous invocation payload quota, request and response alike (Lambda quotas page).
MAX_PAYLOAD_BYTES = 6 * 1024 * 1024
_TOO_LARGE = json.dumps({"Message": f"Request must be smaller than {MAX_PAYLOAD_BYTES} bytes for the InvokeFunction operation"}).encode()
# What a function URL answers when the function is throttled ("Function URLs ... 429").
_THROTTLED = json.dumps({"Message": "Rate Exceeded."}).encode()
# What AWS answers when the function's resource-based policy lets nobody invoke it through its URL.
FORBIDDEN = ("Forbidden. For troubleshooting Function URL authorization issues, see: "
             "https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html")
# Request bodies Lambda passes as text; any other content type (form posts included) arrives base64.
_TEXT_TYPES = ("application/json", "application/javascript", "application/xml", "application/yaml")


def is_text(content_type: str | None) -> bool:
    media = (content_type or "").split(";")[0].strip().lower()
    return media.startswith("text/") or media in _TEXT_TYPES or media.endswith(("+json", "+xml"))


def request_event(*, method: str, raw_path: str, headers: list[tuple[str, str]], body: bytes, url_id: str,
                  account_id: str, source_ip: str, protocol: str, now: float, request_id: str) -> dict:
    """The payload format 2.0 event Lambda hands the function for one HTTP request."""
    path, _, query = raw_path.partition("?")
    joined: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        name = name.lower()
        if name == "cookie":  # cookies have their own field, one entry per cookie
            cookies += [part.strip() for part in value.split(";") if part.strip()]
            continue
        joined[name] = f"{joined[name]},{value}" if name in joined else value
    parameters: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        parameters[name] = f"{parameters[name]},{value}" if name in parameters else value
    at = _datetime.datetime.fromtimestamp(now, _datetime.timezone.utc)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path or "/",
        "rawQueryString": query,
        "headers": joined,
        "requestContext": {
            "accountId": account_id,
            "apiId": url_id,
            "domainName": joined.get("host", "127.0.0.1"),
            "domainPrefix": url_id,
            "http": {
                "method": method,
                "path": path or "/",
                "protocol": protocol,
                "sourceIp": source_ip,
                "userAgent": joined.get("user-agent", ""),
            },
            "requestId": request_id,
            "routeKey": "$default",
            "stage": "$default",
            "time": at.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    if parameters:
        event["queryStringParameters"] = parameters
    if body:
        if is_text(joined.get("content-type")):
            event["body"] = body.decode("utf-8", errors="replace")
        else:
            event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode(), True
    return event


def http_response(payload: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    """(status, headers, body) for what the function returned, as Lambda maps it.

    A JSON object with a ``statusCode`` is a response; anything else valid JSON is the body of a
    200 ``application/json`` response, as it came back (a string keeps its quotes).
    """
    try:
        answer = json.loads(payload) if payload else None
    except ValueError:
        return 502, [("content-type", "application/json")], b'{"Message":null}'
    if not isinstance(answer, dict) or "statusCode" not in answer:
        return 200, [("content-type", "application/json")], payload
    headers = [(str(name).lower(), str(value)) for name, value in (answer.get("headers") or {}).items()]
    if not any(name == "content-type" for name, _ in headers):
        headers.append(("content-type", "application/json"))
    headers += [("set-cookie", str(cookie)) for cookie in answer.get("cookies") or []]
    body = answer.get("body")
    if body is None:
        data = b""
    elif answer.get("isBase64Encoded"):
        data = base64.b64decode(body)
    else:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
    return int(answer["statusCode"]), headers, data


def _allows_public_url_invocation(fn: Any) -> bool:
    """Whether the function's policy lets anyone (``*``) invoke it through a NONE-auth URL.

    Since October 2025 a function URL needs both ``lambda:InvokeFunctionUrl`` and
    ``lambda:InvokeFunction`` for the caller (https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html).
    """
    granted = set()
    for statement in getattr(fn.policy, "statements", []):
        principal = statement.get("Principal")
        if statement.get("Effect", "Allow") == "Allow" and principal in ("*", {"AWS": "*"}):
            actions = statement.get("Action")
            granted.update(actions if isinstance(actions, list) else [actions])
    return {"lambda:InvokeFunctionUrl", "lambda:InvokeFunction"} <= granted


class FunctionUrls:
    """The function URLs of one LocalAws: a listener per URL, closed with the emulator.

    ``invoke(fn, payload)`` runs the function synchronously and returns the runtime's InvokeResult;
    ``find(function_arn)`` returns moto's function, or None once it is deleted.
    """

    def __init__(self, clock: SimClock, invoke: Callable[[Any, bytes], Any], find: Callable[[str], Any]) -> None:
        self._clock = clock
        self._invoke = invoke
        self._find = find
        self._lock = threading.Lock()
        self._servers: dict[str, ThreadingHTTPServer] = {}  # by URL

    def open(self, fn: Any) -> str:
        """A new listener for ``fn``'s URL; returns the URL (ending with "/")."""
        url_id = secrets.token_hex(16)  # 32 characters, as AWS's <url-id>
        urls = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_one_request(self) -> None:  # every method goes to the function
                self.raw_requestline = self.rfile.readline(65537)
                if not self.raw_requestline:
                    self.close_connection = True
                    return
                if not self.parse_request():
                    return
                urls._serve(self, fn.function_arn, url_id)
                self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                pass

        server = _Listener(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        url = _url(server.server_address[1])
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                         name=f"function-url-{fn.function_name}", daemon=True).start()
        with self._lock:
            self._servers[url] = server
        return url

    def close_all(self) -> None:
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.shutdown()
            server.server_close()

    @property
    def urls(self) -> list[str]:
        with self._lock:
            return list(self._servers)

    def _serve(self, request: BaseHTTPRequestHandler, function_arn: str, url_id: str) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        if length > MAX_PAYLOAD_BYTES:
            while length > 0:  # read and drop it, so the client hears the answer
                length -= len(request.rfile.read(min(length, 1 << 20)) or b"\0" * length)
            return _reply(request, 413, [("content-type", "application/json")], _TOO_LARGE)
        body = request.rfile.read(length) if length else b""
        fn = self._find(function_arn)
        own = fn is not None and fn.url_config is not None and fn.url_config.url == _url(request.server.server_address[1])
        if not own:  # the URL (or its function) was deleted
            return _reply(request, 404, [("content-type", "application/json")], b'{"Message":null}')
        if fn.url_config.config.get("AuthType") != "NONE" or not _allows_public_url_invocation(fn):
            # AWS_IAM URLs need SigV4 signatures, which the emulator does not check: refused, not let through.
            return _reply(request, 403, [("content-type", "application/json")], json.dumps({"Message": FORBIDDEN}).encode())
        port = str(request.server.server_address[1])
        # What Lambda's front end adds to every request it passes on.
        added = [("x-forwarded-for", request.client_address[0]), ("x-forwarded-proto", "http"),
                 ("x-forwarded-port", port), ("x-amzn-trace-id", f"Root=1-{int(self._clock.now()):08x}-{secrets.token_hex(12)}")]
        event = request_event(
            method=request.command, raw_path=request.path, headers=[*request.headers.items(), *added], body=body,
            url_id=url_id, account_id=function_arn.split(":")[4], source_ip=request.client_address[0],
            protocol=request.request_version, now=self._clock.now(), request_id=str(uuid.uuid4()),
        )
        payload = json.dumps(event).encode()
        if len(payload) > MAX_PAYLOAD_BYTES:
            return _reply(request, 413, [("content-type", "application/json")], _TOO_LARGE)
        result = self._invoke(fn, payload)
        if result.throttled is not None:  # the function's or the account's concurrency is all in use
            return _reply(request, 429, [("content-type", "application/json")], _THROTTLED)
        if result.errored or len(result.payload) > MAX_PAYLOAD_BYTES:
            return _reply(request, 502, [("content-type", "text/plain")], b"Internal Server Error")
        status, headers, data = http_response(result.payload)
        _reply(request, status, headers, b"" if request.command == "HEAD" else data, length=len(data))


class _Listener(ThreadingHTTPServer):
    # A function URL takes a burst of clients at once (200 people pressing a button); the standard
    # library's backlog of 5 pending connections would reset the rest, which AWS does not do.
    request_queue_size = 256


def _url(port: int) -> str:
    return f"http://127.0.0.1:{port}/"


def _reply(request: BaseHTTPRequestHandler, status: int, headers: list[tuple[str, str]], data: bytes,
           length: int | None = None) -> None:
    try:
        request.send_response(status)
        for name, value in headers:
            request.send_header(name, value)
        request.send_header("x-amzn-requestid", str(uuid.uuid4()))
        request.send_header("content-length", str(len(data) if length is None else length))
        if request.close_connection:
            request.send_header("connection", "close")
        request.end_headers()
        request.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client went away
