"""LocalAws: moto as an HTTP endpoint on 127.0.0.1, with the project's fixes, Lambda runtime and clock."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import boto3
from botocore.config import Config

from emulator import ACCOUNT_ID, REGION, patches
from emulator.awslambda.concurrency import (
    DEFAULT_ACCOUNT_CONCURRENCY,
    MINIMUM_UNRESERVED,
    Concurrency,
    configured_quota,
)
from emulator.awslambda.function_urls import FunctionUrls
from emulator.awslambda.runtime import LambdaRuntime
from emulator.clock import CLOCK_PATH, TICKET_HEADER, SimClock
from emulator.cloudcontrol import TARGET_PREFIX as CLOUDCONTROL_TARGET
from emulator.cloudcontrol import CloudControl
from emulator.cloudformation import custom_resources
from emulator.cloudwatch.service import CloudWatch
from emulator.events import EventRouter
from emulator.faults import Faults
from emulator.iam import deliveries as iam_deliveries
from emulator.iam import enforced_by_default as iam_enforced_by_default
from emulator.iam import enforcement as iam_enforcement
from emulator.iam.enforcement import Iam
from emulator.scheduler import Scheduler
from emulator.sms import TARGET_PREFIX as SMS_TARGET
from emulator.sms import SmsVoice
from emulator.stepfunctions.mocks import MockConfig

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "emulator",
    "AWS_SECRET_ACCESS_KEY": "emulator",
    "AWS_SESSION_TOKEN": "emulator",
}


class _Current:
    """What the process-wide moto patches call into: the running LocalAws's parts."""

    runtime: LambdaRuntime | None = None
    router: EventRouter | None = None
    function_urls: FunctionUrls | None = None
    cloudwatch: CloudWatch | None = None
    mock_config: MockConfig | None = None
    iam: Iam | None = None
    concurrency: Concurrency | None = None
    aws: "LocalAws | None" = None

    def email_sandbox(self) -> bool:
        return self.aws is None or self.aws.email_sandbox

    def account_concurrency(self) -> int:
        return self.concurrency.quota if self.concurrency is not None else DEFAULT_ACCOUNT_CONCURRENCY

    def invoke(self, fn: Any, payload: bytes, asynchronous: bool, trace_id: str | None = None) -> Any:
        if self.runtime is None:
            raise RuntimeError("No LocalAws is running in this process")
        return self.runtime.invoke(fn, payload, asynchronous, trace_id)

    def open_function_url(self, fn: Any) -> str:
        if self.function_urls is None:
            raise RuntimeError("No LocalAws is running in this process")
        return self.function_urls.open(fn)

    def status_changed(self, execution: Any, status: str | None = None) -> None:
        if self.cloudwatch is not None:
            self.cloudwatch.on_execution_status(execution, status)
        if self.router is not None:
            self.router.on_execution_status(execution, status)

    def alarm_changed(self, alarm: Any, previous: Any) -> None:
        if self.cloudwatch is not None:
            self.cloudwatch.state_changed(alarm, previous)


_current = _Current()


class ApiCalls:
    """The API requests the endpoint received, by operation: what the benchmark and tests count.

    Operations are told apart for the JSON-protocol services, whose requests name theirs in the
    X-Amz-Target header (DynamoDB, Step Functions, SQS...). A request an injected fault answers
    counts too: its caller made the call.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def record(self, environ: dict) -> None:
        target = environ.get("HTTP_X_AMZ_TARGET")
        if target:
            with self._lock:
                self._counts[target.rpartition(".")[2]] += 1

    @contextlib.contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        """Filled on exit with the calls made during the block, whoever made them."""
        with self._lock:
            before = self._counts.copy()
        made: Counter[str] = Counter()
        try:
            yield made
        finally:
            with self._lock:
                made.update(self._counts - before)
_install_lock = threading.Lock()
_clock: SimClock | None = None


def _install_patches_once() -> SimClock:
    global _clock
    with _install_lock:
        if _clock is None:
            clock = SimClock()
            patches.install_all(
                clock, lambda_runtime=_current, on_status_change=_current.status_changed,
                on_alarm_change=_current.alarm_changed, mock_config=lambda: _current.mock_config,
                account_concurrency=_current.account_concurrency,
                iam=lambda: _current.iam, email_sandbox=_current.email_sandbox,
            )
            _clock = clock
        return _clock


class LocalAws:
    """A local AWS endpoint. Use as a context manager, or call ``start()`` and ``stop()``."""

    def __init__(self, workdir: Path | None = None, auto_schedules: bool = False, mock_config: MockConfig | None = None,
                 account_concurrency: int | None = None, enforce_iam: bool | None = None) -> None:
        """``account_concurrency``: the account's Lambda concurrency quota (default: EMULATOR_ACCOUNT_CONCURRENCY,
        else 1,000; a new account has 10). ``enforce_iam``: whether IAM is enforced (default: EMULATOR_IAM, else on)."""
        self._own_workdir = workdir is None
        self.account_concurrency = account_concurrency if account_concurrency is not None else configured_quota()
        # The role sessions handlers and executions act as; None: IAM not enforced (docs/emulator.md).
        self.iam = Iam() if (iam_enforced_by_default() if enforce_iam is None else enforce_iam) else None
        self.mock_config = mock_config  # Step Functions Local's mock configuration: see use_mock_config
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="local-aws-"))
        self.auto_schedules = auto_schedules
        self.faults = Faults()  # switched on per test: see emulator/faults.py
        self.api_calls = ApiCalls()
        self.endpoint_url = ""
        self.clock: SimClock
        self.runtime: LambdaRuntime
        self.router: EventRouter
        self.scheduler: Scheduler
        self.cloudcontrol: CloudControl
        self.function_urls: FunctionUrls
        self.sms: SmsVoice
        # SES's sandbox, on as for a new account: mail goes to verified addresses only (emulator/ses).
        self.email_sandbox = True
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._session = boto3.session.Session()
        self._clients: dict[tuple[str, str], Any] = {}
        self._clients_lock = threading.Lock()

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> "LocalAws":
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.core.config import default_user_config
        from moto.core.models import botocore_stubber
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        from emulator.keep_alive import KeepAliveRequestHandler

        if botocore_stubber.enabled:
            raise RuntimeError("moto's mock_aws is active in this process; LocalAws needs real HTTP clients")
        if DEFAULT_ACCOUNT_ID != ACCOUNT_ID:
            raise RuntimeError(f"moto's default account is {DEFAULT_ACCOUNT_ID}, expected {ACCOUNT_ID}")
        if _current.runtime is not None:
            raise RuntimeError("Another LocalAws is already running in this process")
        default_user_config.setdefault("stepfunctions", {})["execute_state_machine"] = True
        self.clock = _install_patches_once()

        def backend_app(service: str) -> Any:
            # Speed, not behaviour: moto turns Flask's debug mode on for its server, where Flask builds a
            # new class for every request's form data (to word a developer's mistake better), about 1%
            # of an emulator shard's busy time (py-spy). Off, an unexpected error is still a 500 with
            # its traceback logged.
            app = create_backend_app(service)
            app.debug = False
            return app

        moto_app = self.faults.wsgi(iam_enforcement.wsgi(DomainDispatcherApplication(backend_app)))
        clock = self.clock

        ticket_key = "HTTP_" + TICKET_HEADER.upper().replace("-", "_")

        def app(environ: dict, start_response: Any) -> list[bytes]:
            if environ.get("PATH_INFO", "").startswith(CLOCK_PATH):
                return self.clock_endpoint(environ, start_response, environ["PATH_INFO"][len(CLOCK_PATH):].strip("/"))
            if environ.get("PATH_INFO", "").startswith(custom_resources.RESPONSE_PATH):  # a presigned S3 URL on AWS
                with clock.busy():
                    return custom_resources.requests.wsgi(environ, start_response)
            self.api_calls.record(environ)
            # A request being served is work: the simulated clock does not jump meanwhile. A ticket
            # the caller handed over with the request keeps it still until the response is read,
            # except while this thread waits on the clock (a Lambda handler's sleep).
            with clock.busy(), clock.carrying(environ.get(ticket_key)):
                if environ.get("HTTP_X_AMZ_TARGET", "").startswith(CLOUDCONTROL_TARGET):  # a service moto lacks
                    return self.cloudcontrol.wsgi(environ, start_response)
                if environ.get("HTTP_X_AMZ_TARGET", "").startswith(SMS_TARGET):  # End User Messaging: moto lacks it too
                    return self.sms.wsgi(environ, start_response)
                body = list(moto_app(environ, start_response))
            if environ.get("HTTP_X_AMZ_TARGET", "").endswith(".StartExecution") and environ.get("HTTP_X_AMZN_TRACE_ID"):
                self.router.traced_start(environ["HTTP_X_AMZN_TRACE_ID"], b"".join(body))
            return body

        self._server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=KeepAliveRequestHandler)
        port = self._server.server_address[1]
        self.endpoint_url = f"http://127.0.0.1:{port}"
        self.cloudcontrol = CloudControl(self.client, REGION, self.clock.now)
        self.sms = SmsVoice(self.clock, ACCOUNT_ID, REGION, self._publish, lambda environ, operation, body: iam_enforcement.refusal(
            self.iam, environ, "sms-voice", operation, body, REGION, ACCOUNT_ID))
        # moto's Step Functions engine calls services through this port.
        os.environ["MOTO_PORT"] = str(port)
        self._thread = threading.Thread(target=self._server.serve_forever, name="local-aws", daemon=True)
        self._thread.start()

        self.router = EventRouter(self.clock, ACCOUNT_ID, REGION, auto_schedules=self.auto_schedules,
                                  refused=iam_deliveries.refused if self.iam is not None else None)
        self.cloudwatch = CloudWatch(self.clock, self.router, ACCOUNT_ID, REGION)
        from moto.awslambda.models import lambda_backends

        self.concurrency = Concurrency(self.account_concurrency, lambda: lambda_backends[ACCOUNT_ID][REGION].list_functions())
        self.runtime = LambdaRuntime(self.clock, self.endpoint_url, self.workdir, self._resolve_layer, self.faults,
                                     account_id=ACCOUNT_ID, region=REGION, on_output=self.cloudwatch.read_function_log, concurrency=self.concurrency,
                                     credentials=self._function_credentials)
        self.function_urls = FunctionUrls(self.clock, lambda fn, payload: self.runtime.invoke(fn, payload, False),
                                          _find_function)
        _current.runtime, _current.router = self.runtime, self.router
        self.scheduler = Scheduler(self.clock, ACCOUNT_ID, REGION, lambda fn, payload: self.runtime.invoke(fn, payload, True),
                                   auto_schedules=self.auto_schedules)
        custom_resources.requests.endpoint_url = self.endpoint_url
        custom_resources.requests.invoke = lambda fn, payload: self.runtime.invoke(fn, payload, True)
        _current.function_urls, _current.cloudwatch = self.function_urls, self.cloudwatch
        _current.mock_config, _current.concurrency = self.mock_config, self.concurrency
        _current.iam, _current.aws = self.iam, self
        return self

    def _publish(self, topic_arn: str, message: str, source_arn: str, role_arn: str | None) -> str:
        """Publish to an SNS topic as End User Messaging does, for ``source_arn`` (its phone number), as
        ``role_arn`` or by the topic's policy; the message id. PermissionError: IAM refuses it."""
        from moto.sns.models import sns_backends

        reason = iam_deliveries.publish_refused(topic_arn, "sms-voice.amazonaws.com", source_arn, role_arn) if self.iam else None
        if reason is not None:
            raise PermissionError(reason)
        region, account = topic_arn.split(":")[3:5]
        with self.clock.busy():
            return sns_backends[account][region].publish(message, arn=topic_arn)

    def _function_credentials(self, fn: Any) -> dict[str, str]:
        """What a function's handler calls with: its role's session, named after the function, as
        Lambda gives it; the administrator's keys when IAM is not enforced."""
        if self.iam is None:
            return dict(CREDENTIALS)
        return self.iam.credentials(fn.role, fn.function_name)

    def use_mock_config(self, config: MockConfig | None) -> None:
        """Test cases that StartExecution selects with ``<state machine ARN>#<test case>`` from now on
        (None: none). Executions already running keep the test case they started with."""
        self.mock_config = config
        if self._server is not None:
            _current.mock_config = config

    @contextlib.contextmanager
    def account_concurrency_quota(self, quota: int) -> Iterator[None]:
        """The account at a concurrency quota of ``quota`` meanwhile (10: a new account's), as if it
        had been deployed with it (``account_concurrency``), then back: one deployment serves the
        tests of both. Refused when the reservations would leave fewer unreserved than Lambda keeps
        (an app that reserves nothing deploys alike at any quota)."""
        concurrency = self.concurrency
        reserved = concurrency.quota - concurrency.unreserved()
        if quota - reserved < min(MINIMUM_UNRESERVED, quota):
            raise ValueError(f"the functions reserve {reserved} of the account's concurrency: a quota of {quota} cannot hold them")
        before, concurrency.quota, self.account_concurrency = concurrency.quota, quota, quota
        try:
            yield
        finally:
            concurrency.quota, self.account_concurrency = before, before

    def stop(self) -> None:
        self.faults.clear()
        self.abort_running_executions()
        _current.runtime, _current.router, _current.function_urls, _current.cloudwatch = None, None, None, None
        _current.mock_config, _current.concurrency, _current.iam, _current.aws = None, None, None, None
        if hasattr(self, "function_urls"):
            self.function_urls.close_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        with self._clients_lock:
            self._clients.clear()
        if hasattr(self, "router"):
            self.router.stop()
        if hasattr(self, "scheduler"):
            self.scheduler.stop()
        if hasattr(self, "cloudwatch"):
            self.cloudwatch.stop()
        if hasattr(self, "runtime"):
            self.runtime.close()
        from moto.core.base_backend import BackendDict

        BackendDict.reset()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "LocalAws":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def abort_running_executions(self) -> int:
        """Stop executions still running, so none outlives the endpoint it calls."""
        from moto.stepfunctions.parser.models import stepfunctions_parser_backends

        sfn = self.client("stepfunctions")
        stopped = 0
        for machine in stepfunctions_parser_backends[ACCOUNT_ID][REGION].state_machines:
            for execution in list(machine.executions):
                if execution.status == "RUNNING":
                    sfn.stop_execution(executionArn=execution.execution_arn, cause="Local AWS shutting down")
                    stopped += 1
        return stopped

    # -- the clock, for a person --------------------------------------------------------------------
    def clock_status(self) -> dict:
        """The simulated clock as `python -m emulator clock status` and the console show it."""
        now = self.clock.now()
        wakeups = [at for at in self.clock.pending_wakeups() if at != float("inf")]
        # What is due already is firing or waking now (an advance returns once it has): only what is
        # still to come is "next", so nothing shows as due in the past ("in -27.0 s").
        upcoming = [at for at in wakeups if at > now]
        return {
            "now": now,
            "speed": self.clock.speed,
            "paused": self.clock.paused,
            "next_wakeup": upcoming[0] if upcoming else None,
            "waiting": len(wakeups),
            "schedules": [{"rule": rule, "at": at} for rule, at in self.router.next_firings() if at > now],
            # EventBridge Scheduler's: every enabled schedule with a firing to come, fired on the clock or not
            "scheduler": [entry for entry in self.scheduler.armed() if entry["next"] > now],
        }

    def control_clock(self, action: str, body: dict) -> dict:
        """Pause, resume, advance ``{"seconds": N}`` or set ``{"speed": "instant" | F}``; the new status."""
        if action == "pause":
            self.clock.pause()
        elif action == "resume":
            self.clock.resume()
        elif action == "advance":
            try:
                seconds = float(body.get("seconds"))
            except (TypeError, ValueError):
                raise ValueError(f"advance needs a number of seconds, got {body.get('seconds')!r}") from None
            self.clock.advance(seconds)
        elif action == "speed":
            self.clock.set_speed(body.get("speed"))
        else:
            raise LookupError(f"no clock action {action!r}: pause, resume, advance or speed")
        return self.clock_status()

    def clock_endpoint(self, environ: dict, start_response: Any, action: str) -> list[bytes]:
        """WSGI: GET the status, POST an action with a JSON body; errors as {"error": message}."""
        from werkzeug.wrappers import Request, Response

        request = Request(environ)
        try:
            if request.method == "GET" and not action:
                status, body = 200, self.clock_status()
            elif request.method == "POST" and action:
                payload = request.get_json(force=True, silent=True) if request.get_data() else {}
                if not isinstance(payload, dict):
                    raise ValueError("the request body must be a JSON object")
                status, body = 200, self.control_clock(action, payload)
            else:
                status, body = 405, {"error": "GET the clock, or POST pause, resume, advance or speed"}
        except LookupError as exc:
            status, body = 404, {"error": str(exc.args[0])}
        except ValueError as exc:
            status, body = 400, {"error": str(exc)}
        return Response(json.dumps(body), status=status, mimetype="application/json")(environ, start_response)

    # -- clients ----------------------------------------------------------------------------------
    @property
    def environment(self) -> dict[str, str]:
        """Environment for a process (AWS CLI, cdk, boto3) that should talk to this endpoint."""
        return {
            **CREDENTIALS,
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "CDK_DEFAULT_ACCOUNT": ACCOUNT_ID,
            "CDK_DEFAULT_REGION": REGION,
            # TestState is host-prefixed ("sync-"): sync-127.0.0.1 does not resolve. The AWS CLI and
            # SDKs leave the prefix off with this set (SDKs and Tools Reference Guide, "Host prefix injection").
            "AWS_DISABLE_HOST_PREFIX_INJECTION": "true",
        }

    def client(self, service: str) -> Any:
        """This endpoint's client for ``service``, made once and shared by every caller and thread.

        A botocore client is thread-safe once made (boto3's guide, "Multithreading or multiprocessing
        with clients"), and making one costs more than most calls: the alarm storm's test spent a fifth
        of its busy time making the clients it used once. Made on a session of the emulator's own,
        under a lock, since a session is not thread-safe.
        """
        key = (service, self.endpoint_url)
        with self._clients_lock:
            if key not in self._clients:
                self._clients[key] = self._session.client(
                    service,
                    endpoint_url=self.endpoint_url,
                    region_name=REGION,
                    aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                    aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                    aws_session_token=CREDENTIALS["AWS_SESSION_TOKEN"],
                    # as many connections as the tests' and tools' thread pools run calls at once
                    config=Config(retries={"max_attempts": 2, "mode": "standard"}, read_timeout=900,
                                  max_pool_connections=50),
                )
            return self._clients[key]

    def stack_outputs(self) -> dict[str, dict[str, str]]:
        cfn = self.client("cloudformation")
        result: dict[str, dict[str, str]] = {}
        for stack in cfn.describe_stacks()["Stacks"]:
            if stack["StackName"] == "CDKToolkit":
                continue
            result[stack["StackName"]] = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
        return result

    # -- internals --------------------------------------------------------------------------------
    @staticmethod
    def _resolve_layer(layer_arn: str) -> Any:
        from moto.awslambda.models import lambda_backends

        parts = layer_arn.split(":")
        return lambda_backends[parts[4]][parts[3]].layers_versions_by_arn(layer_arn)


def _find_function(arn: str) -> Any:
    """moto's function with this ARN, or None once it is deleted."""
    from moto.awslambda.exceptions import UnknownFunctionException
    from moto.awslambda.models import lambda_backends

    region, account = arn.split(":")[3:5]
    try:
        return lambda_backends[account][region].get_function(arn)
    except UnknownFunctionException:
        return None


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)
