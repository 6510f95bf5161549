"""Fault injection: make Lambda, S3, DynamoDB and Step Functions fail as they do on AWS, one test at a time.

    with aws.faults.lambda_throttled("NotifyUser", times=2) as fault:
        result = run(...)
    assert fault.hits == 2

Every method is a context manager: the fault is armed on entry and always removed on exit, so
nothing leaks into the next test. A fault fails the first ``times`` calls that match it (every
matching call when ``times`` is None), then lets calls through. Calls match by service, operation
and a substring of the function, bucket or table name or state machine ARN; ``matching`` narrows
a fault further to calls whose request body (Lambda, DynamoDB, Step Functions) or object key (S3)
contains that text, which keeps a fault on one execution when others share the emulator.

API errors are answered at the HTTP level, before moto sees the request, exactly as the service
would answer them, so every caller reacts as on AWS: a handler's boto3 retries a throttled S3 call
by itself, and the Step Functions engine (which never retries) names the error as AWS does
(``Lambda.TooManyRequestsException``, ``DynamoDB.ProvisionedThroughputExceededException``...).
A Lambda timeout happens in the Lambda runtime instead: the invocation lasts the function's
configured timeout in simulated time and ends in ``Sandbox.Timedout``.
"""

from __future__ import annotations

import contextlib
import functools
import http
import io
import json
import re
import socket
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import parse_qsl, unquote

WsgiApp = Callable[[dict, Callable[..., Any]], Iterable[bytes]]
Armed = contextlib.AbstractContextManager["Fault"]

_CREDENTIAL_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/[^/]+/(?P<service>[^/]+)/aws4_request")
_LAMBDA_INVOKE = re.compile(r"^/2015-03-31/functions/(?P<function>[^/]+)/invocations/?$")


@dataclass(eq=False)
class Fault:
    """One armed fault and what it did."""

    service: str  # "lambda", "s3", "dynamodb" or "states"
    operation: str  # the API operation, e.g. "Invoke", "GetObject", "GetItem", "StartExecution"
    resource: str | None  # substring of the function, bucket or table name or state machine ARN; None: any
    matching: str | None  # substring of the request body (Lambda, DynamoDB, Step Functions) or the object key (S3)
    times: int | None  # calls to fail; None: every matching call
    answer: WsgiApp | None = None  # how an HTTP fault answers; None for a Lambda timeout
    run_handler: bool = False  # let the handler finish first, then time out (or answer the error)
    hits: int = 0  # calls this fault failed
    failed: list[str] = field(default_factory=list)  # what each failed call named (function, key...)

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.hits >= self.times

    def applies(self, operation: str, resource: str, text: Callable[[], str]) -> bool:
        if self.exhausted or operation != self.operation:
            return False
        if self.resource is not None and self.resource not in resource:
            return False
        return self.matching is None or self.matching in text()


@dataclass(frozen=True)
class _Request:
    service: str
    operation: str
    resource: str  # function, bucket or table name, or state machine ARN ("" when the call names none)
    key: str  # S3 object key ("" for bucket operations and other services)


class Faults:
    """The faults armed in one LocalAws (``aws.faults``); consulted by its HTTP server and Lambda runtime."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    # -- Lambda --------------------------------------------------------------------------------
    def lambda_throttled(self, function: str, *, times: int | None = 1, matching: str | None = None) -> Armed:
        """Invoke answers 429 TooManyRequestsException (Step Functions: ``Lambda.TooManyRequestsException``)."""
        body = {
            "Type": "User",
            "message": "Rate Exceeded.",
            "Reason": "ReservedFunctionConcurrentInvocationLimitExceeded",
        }
        return self.lambda_error(
            function, status=429, code="TooManyRequestsException", body=body, times=times, matching=matching
        )

    def lambda_service_error(
        self, function: str, *, times: int | None = 1, matching: str | None = None, run_handler: bool = False
    ) -> Armed:
        """Invoke answers 500 ServiceException (Step Functions: ``Lambda.ServiceException``).

        With ``run_handler`` the invocation runs to the end first, side effects included, and only
        its answer is lost: what a retry of a function that did its work has to survive.
        """
        body = {"Type": "Service", "message": "An internal error occurred in the Lambda service (injected fault)."}
        return self.lambda_error(
            function, status=500, code="ServiceException", body=body, times=times, matching=matching,
            run_handler=run_handler,
        )

    def lambda_error(
        self,
        function: str,
        *,
        status: int,
        code: str,
        body: dict | None = None,
        times: int | None = 1,
        matching: str | None = None,
        run_handler: bool = False,
    ) -> Armed:
        """Invoke answers ``status`` with error ``code``: any Lambda API error, modelled or not."""
        body = body or {"Type": "Service", "message": f"{code} (injected fault)"}
        headers = {"x-amzn-ErrorType": code, **({"Retry-After": "1"} if status == 429 else {})}
        answer = _json_error(status, code, body, headers)
        return self._armed(
            Fault("lambda", "Invoke", function, matching, times, answer=answer, run_handler=run_handler)
        )

    def lambda_disconnected(self, function: str, *, times: int | None = 1, matching: str | None = None) -> Armed:
        """Invoke's connection is closed before any answer (Step Functions: ``Lambda.SdkClientException``)."""
        return self._armed(Fault("lambda", "Invoke", function, matching, times, answer=_drop_connection))

    def lambda_timed_out(
        self,
        function: str,
        *,
        times: int | None = 1,
        matching: str | None = None,
        run_handler: bool = False,
    ) -> Armed:
        """The invocation runs for the function's whole timeout and fails with ``Sandbox.Timedout``.

        By default the handler never gets to run (a hung dependency at start-up); with
        ``run_handler`` it runs to the end, side effects included, and its answer is lost (a
        handler that did its work and then hung), which is what idempotency has to survive.
        """
        return self._armed(Fault("lambda", "Timeout", function, matching, times, run_handler=run_handler))

    # -- S3 and DynamoDB -----------------------------------------------------------------------
    def s3_throttled(
        self,
        operation: str,
        *,
        bucket: str | None = None,
        times: int | None = 1,
        matching: str | None = None,
    ) -> Armed:
        """The S3 ``operation`` (e.g. "GetObject", "PutObject") answers 503 SlowDown."""
        _check_operation("s3", operation)
        return self._armed(Fault("s3", operation, bucket, matching, times, answer=_s3_slow_down))

    def dynamodb_throttled(
        self,
        operation: str,
        *,
        table: str | None = None,
        times: int | None = 1,
        matching: str | None = None,
        error: str = "ProvisionedThroughputExceededException",
    ) -> Armed:
        """The DynamoDB ``operation`` answers 400 ``error``.

        ``error`` is ProvisionedThroughputExceededException (a table's capacity) or
        ThrottlingException (control-plane and on-demand rate limits).
        """
        _check_operation("dynamodb", operation)
        if error not in _DYNAMODB_THROTTLES:
            raise ValueError(f"error must be one of {', '.join(_DYNAMODB_THROTTLES)}, not {error!r}")
        namespace, message = _DYNAMODB_THROTTLES[error]
        answer = _json_error(400, error, {"__type": f"{namespace}#{error}", "message": message}, {})
        return self._armed(Fault("dynamodb", operation, table, matching, times, answer=answer))

    # -- Step Functions ------------------------------------------------------------------------
    def stepfunctions_throttled(
        self,
        operation: str,
        *,
        machine: str | None = None,
        times: int | None = 1,
        matching: str | None = None,
    ) -> Armed:
        """The Step Functions ``operation`` (e.g. "StartExecution") answers 400 ThrottlingException.

        What the API answers a caller over its rate (the Step Functions API Reference's common
        errors; its quotas are token buckets per account). ``machine`` is a substring of the state
        machine's (or execution's) ARN; ``matching`` of the request, e.g. an execution's input.
        """
        _check_operation("stepfunctions", operation)
        # awsJson1_0: the error's shape name in __type (clients read what follows any namespace#).
        body = {"__type": "ThrottlingException", "message": "Rate exceeded"}
        answer = _json_error(400, "ThrottlingException", body, {})
        return self._armed(Fault("states", operation, machine, matching, times, answer=answer))

    # -- state ---------------------------------------------------------------------------------
    @property
    def armed(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    @contextlib.contextmanager
    def _armed(self, fault: Fault) -> Iterator[Fault]:
        with self._lock:
            self._faults.append(fault)
        try:
            yield fault
        finally:
            with self._lock:
                if fault in self._faults:
                    self._faults.remove(fault)

    def _take(self, service: str, operation: str, resource: str, text: Callable[[], str], label: str) -> Fault | None:
        """The first armed fault for this call, with the call counted against it; None to let it through."""
        with self._lock:
            for fault in self._faults:
                if fault.service == service and fault.applies(operation, resource, text):
                    fault.hits += 1
                    fault.failed.append(label)
                    return fault
        return None

    # -- what the runtime and the HTTP server ask --------------------------------------------------
    def take_lambda_timeout(self, function_name: str, payload: bytes) -> Fault | None:
        """Called by the Lambda runtime for every invocation: the timeout fault it must act out, if any."""
        if not self._faults:
            return None
        text = lambda: payload.decode("utf-8", "replace")  # noqa: E731
        return self._take("lambda", "Timeout", function_name, text, function_name)

    def wsgi(self, app: WsgiApp) -> WsgiApp:
        """Wrap a WSGI app so armed HTTP faults answer matching requests instead of it."""

        def faulty_app(environ: dict, start_response: Callable[..., Any]) -> Iterable[bytes]:
            if self._faults:
                fault = self._fault_for(environ)
                if fault is not None and fault.answer is not None:
                    if fault.run_handler:  # the call happens; only its answer is replaced
                        _read_body(environ)
                        list(app({**environ, "wsgi.input": io.BytesIO(environ["emulator.faults.body"])}, _discard))
                    return fault.answer(environ, start_response)
            return app(environ, start_response)

        return faulty_app

    def _fault_for(self, environ: dict) -> Fault | None:
        services = {fault.service for fault in self.armed if fault.answer is not None}
        request = _identify(environ, services)
        if request is None:
            return None
        if request.service == "s3":
            text = lambda: request.key  # noqa: E731
        else:
            text = functools.cache(lambda: _read_body(environ).decode("utf-8", "replace"))
        return self._take(request.service, request.operation, request.resource, text, request.key or request.resource)


# ------------------------------------------------------------------------------------------------
# Recognising requests
# ------------------------------------------------------------------------------------------------
def _identify(environ: dict, services: set[str]) -> _Request | None:
    # The service is in the SigV4 credential scope (header, or query for presigned URLs).
    signature = environ.get("HTTP_AUTHORIZATION", "") or unquote(environ.get("QUERY_STRING", ""))
    scope = _CREDENTIAL_SCOPE.search(signature)
    service = scope["service"] if scope else None
    if service not in services:
        return None
    method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "/")
    if service == "lambda":
        invoke = _LAMBDA_INVOKE.match(path)
        if method != "POST" or invoke is None:
            return None
        return _Request("lambda", "Invoke", _function_name(unquote(invoke["function"])), "")
    if service in ("dynamodb", "states"):  # JSON protocol: the operation in X-Amz-Target, the resource in the body
        operation = environ.get("HTTP_X_AMZ_TARGET", "").rpartition(".")[2]
        try:
            params = json.loads(_read_body(environ) or b"{}")
        except ValueError:
            params = {}
        if service == "states":
            resource = params.get("stateMachineArn") or params.get("executionArn") or ""
        else:
            resource = params.get("TableName") or params.get("TableArn", "").rpartition("/")[2]
        return _Request(service, operation, resource, "")
    bucket, _, key = path.lstrip("/").partition("/")
    query = dict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
    operation = s3_operation(method, bucket, key, query, _headers(environ))
    return _Request("s3", operation, bucket, key) if operation else None


def _function_name(reference: str) -> str:
    """Invoke's FunctionName may be a name, a partial ARN or an ARN, with a qualifier."""
    if "function:" in reference:
        return reference.split("function:", 1)[1].split(":", 1)[0]
    return reference.split(":", 1)[0]


def _headers(environ: dict) -> dict[str, str]:
    return {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}


def _read_body(environ: dict) -> bytes:
    """The request body, read once and put back so the app still reads it."""
    if "emulator.faults.body" not in environ:
        stream = environ["wsgi.input"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = stream.read(length) if length else stream.read() if environ.get("wsgi.input_terminated") else b""
        environ["wsgi.input"] = io.BytesIO(body)
        environ["emulator.faults.body"] = body
    return environ["emulator.faults.body"]


@functools.cache
def _s3_routes() -> list[tuple[str, bool, bool, dict[str, str], frozenset[str], bool, str]]:
    """S3 operations as botocore models them: method, bucket?, key?, query, required headers, general?, name."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("s3")
    routes = []
    for name in model.operation_names:
        operation = model.operation_model(name)
        path, _, query = operation.http["requestUri"].partition("?")
        params = dict(parse_qsl(query, keep_blank_values=True))
        params.pop("x-id", None)  # botocore's own marker, never sent
        shape = operation.input_shape
        required = [shape.members[m].serialization for m in (shape.required_members if shape is not None else [])]
        params.update({s["name"]: "" for s in required if s.get("location") == "querystring"})
        headers = frozenset(s["name"].lower() for s in required if s.get("location") == "header")
        # An operation only S3 Express has (ListDirectoryBuckets) shares its path with a general one.
        general = not name.endswith("DirectoryBuckets")
        routes.append((operation.http["method"], "{Bucket}" in path, "{Key+}" in path, params, headers, general, name))
    return routes


def s3_operation(method: str, bucket: str, key: str, query: dict[str, str], headers: dict[str, str]) -> str | None:
    """The S3 operation a path-style request is, by botocore's model; None when nothing fits."""
    candidates = [
        (len(params), len(required), general, name)
        for route_method, has_bucket, has_key, params, required, general, name in _s3_routes()
        if route_method == method
        and has_bucket == bool(bucket)
        and has_key == bool(key)
        and all(p in query and (not v or query[p] == v) for p, v in params.items())
        and required <= headers.keys()
    ]
    return max(candidates)[-1] if candidates else None


@functools.cache
def _operations(service: str) -> frozenset[str]:
    import botocore.session

    return frozenset(botocore.session.get_session().get_service_model(service).operation_names)


def _check_operation(service: str, operation: str) -> None:
    if operation not in _operations(service):
        raise ValueError(f"{service} has no operation {operation!r} (use the API name, e.g. GetObject)")


# ------------------------------------------------------------------------------------------------
# Answers, as each service sends them
# ------------------------------------------------------------------------------------------------
_DYNAMODB_THROTTLES = {
    "ProvisionedThroughputExceededException": (
        "com.amazonaws.dynamodb.v20120810",
        "The level of configured provisioned throughput for the table was exceeded. "
        "Consider increasing your provisioning level with the UpdateTable API.",
    ),
    "ThrottlingException": ("com.amazon.coral.availability", "Rate of requests exceeds the allowed throughput."),
}


def _status_line(status: int) -> str:
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} Error"


def _json_error(status: int, code: str, body: dict, headers: dict[str, str]) -> WsgiApp:
    def answer(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
        _read_body(environ)  # an unread body would reach the client as a reset instead of this answer
        payload = json.dumps(body).encode()
        start_response(
            _status_line(status),
            [
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(payload))),
                ("x-amzn-RequestId", str(uuid.uuid4())),
                *headers.items(),
            ],
        )
        return [payload]

    return answer


def _s3_slow_down(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
    request_id = uuid.uuid4().hex[:16].upper()
    body = (
        b""
        if environ["REQUEST_METHOD"] == "HEAD"
        else (
            '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
            "<Message>Please reduce your request rate.</Message>"
            f"<RequestId>{request_id}</RequestId><HostId>injected-fault</HostId></Error>"
        ).encode()
    )
    _read_body(environ)
    start_response(
        _status_line(503),
        [
            ("Content-Type", "application/xml"),
            ("Content-Length", str(len(body))),
            ("x-amz-request-id", request_id),
            ("x-amz-id-2", "injected-fault"),
        ],
    )
    return [body]


def _discard(*_args: Any, **_kwargs: Any) -> Callable[[bytes], None]:
    """A start_response for an answer nobody will read."""
    return lambda _data: None


def _drop_connection(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
    _read_body(environ)
    connection = environ.get("werkzeug.socket")
    if connection is None:
        raise RuntimeError("lambda_disconnected needs werkzeug's development server")
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
    # Nothing can be answered on a closed connection; werkzeug treats the failed write as the
    # client having gone away.
    raise ConnectionResetError("connection closed by an injected fault")
