"""Simulated time inside the Step Functions engine: Waits, back-off, timeouts and timestamps."""

from __future__ import annotations

import datetime as _datetime
import importlib
import pkgutil
import threading
import time as _time
import types
from typing import Any, Callable

import boto3

from emulator.clock import TICKET_HEADER, BusyThread, SimClock, SimEvent
from emulator.patches._moto import modules_importing


class ClockModule(types.SimpleNamespace):
    """Stands in for a module (``time``/``datetime``/``threading``) in one engine module."""

    def __init__(self, real: types.ModuleType, **overrides: Any) -> None:
        super().__init__(**overrides)
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _sim_datetime_class(clock: SimClock) -> type:
    class SimDateTime(_datetime.datetime):
        @classmethod
        def now(cls, tz=None):  # noqa: ANN001
            return _datetime.datetime.fromtimestamp(clock.now(), tz)

        @classmethod
        def utcnow(cls):
            return _datetime.datetime.fromtimestamp(clock.now(), _datetime.timezone.utc).replace(tzinfo=None)

    return SimDateTime




def install_engine_clock(clock: SimClock) -> None:
    """Route every clock read, sleep and timed wait of the engine through ``clock``.

    Covers Wait states (Seconds/Timestamp and their paths), Retry back-off, task and heartbeat
    timeouts, callback waits, the machine's TimeoutSeconds, and all history/describe timestamps.
    Engine threads are BusyThreads: while one works the clock does not jump, however slowly a
    loaded machine runs it (waiting for quiet alone let a descheduled engine thread's task reach
    its TimeoutSeconds, or the execution its own, in simulated time).
    """
    import moto.stepfunctions.parser as parser_pkg

    SimEvent.clock = clock
    sim_datetime = _sim_datetime_class(clock)
    time_shim = ClockModule(_time, time=clock.now, sleep=clock.sleep)
    datetime_shim = ClockModule(_datetime, datetime=sim_datetime)
    threading_shim = ClockModule(threading, Event=SimEvent, Thread=BusyThread)
    modules = [importlib.import_module("moto.stepfunctions.models"), importlib.import_module("moto.stepfunctions.responses")]
    for info in pkgutil.walk_packages(parser_pkg.__path__, parser_pkg.__name__ + "."):
        if ".antlr." in info.name or info.name.endswith(".antlr"):
            continue
        try:
            modules.append(importlib.import_module(info.name))
        except ImportError:  # a few vendored LocalStack modules import things moto does not ship
            continue
    for module in modules:
        for name, value in list(vars(module).items()):
            if value is _time:
                setattr(module, name, time_shim)
            elif value is _datetime:
                setattr(module, name, datetime_shim)
            elif value is _datetime.datetime:
                setattr(module, name, sim_datetime)
            elif value is threading:
                setattr(module, name, threading_shim)
            elif value is threading.Event:
                setattr(module, name, SimEvent)
            elif value is threading.Thread:
                setattr(module, name, BusyThread)


def install_program_timeout(clock: SimClock) -> None:
    """The machine-level TimeoutSeconds: moto joins the worker thread with a real-time timeout."""
    from moto.stepfunctions.parser.asl.component.program import (
        program as program_module,
    )
    from moto.stepfunctions.parser.asl.component.program.program import Program

    parent_eval = Program.__mro__[1].eval

    def eval_(self: Program, env: Any) -> None:
        timeout = self.timeout_seconds.timeout_seconds if self.timeout_seconds else None
        env.next_state_name = self.start_at.start_at_name
        finished = SimEvent()

        def run() -> None:
            try:
                parent_eval(self, env)
            finally:
                finished.set()

        worker = BusyThread(target=run, daemon=True)
        program_module.TMP_THREADS.append(worker)
        worker.start()
        if not clock.wait(finished, timeout):
            env.set_timed_out()

    Program.eval = eval_


def install_wait_timestamp_utc(clock: SimClock) -> None:
    """AWS reads a Wait Timestamp as UTC ('Z') and ends the Wait at it, to the second (it truncates
    milliseconds: https://docs.aws.amazon.com/step-functions/latest/dg/state-wait.html). moto
    subtracted a naive local now(), and waited the whole seconds left from now: up to a second short."""
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function import (
        timestamp as ts_module,
    )

    def eval_body(self: Any, env: Any) -> None:
        self.string.eval(env=env)
        timestamp_str: str = env.stack.pop()
        timestamp = self._from_timestamp_string(timestamp=timestamp_str)  # milliseconds truncated
        if timestamp is None:
            raise ts_module.FailureEventException(self._create_failure_event(env, timestamp_str))
        until = timestamp.replace(tzinfo=_datetime.timezone.utc).timestamp()
        # The event is set when the execution stops; any other wake-up waits on.
        while env.is_running() and (left := until - clock.now()) > 0:
            env.program_state_event.wait(left)

    ts_module.Timestamp._eval_body = eval_body


def install_progress_reports(clock: SimClock) -> None:
    """Each history event is engine progress: the clock waits for quiet before it jumps."""
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager

    original = EventManager.add_event

    def add_event(self: Any, *args: Any, **kwargs: Any) -> int:
        clock.touch()
        try:
            return original(self, *args, **kwargs)
        finally:
            clock.touch()

    EventManager.add_event = add_event


def install_engine_calls_hand_over(clock: SimClock, credentials: Callable[[str], dict[str, str] | None]) -> None:
    """An AWS call from the engine hands the calling thread's busy token over to the request, and is
    made as the execution's role: ``credentials(role ARN)`` (None: moto's own dummy keys).

    The token stays held until the response is read, except while the server waits on the clock
    for it (a synchronous Lambda handler's sleep), so the clock neither jumps while a request or
    its response is in transit nor stays still while the handler sleeps.
    """
    from moto.stepfunctions.parser.asl.utils import boto_client as boto_client_module

    local = threading.local()
    original_factory = boto_client_module.boto_client_for

    def add_ticket(request: Any, **_: Any) -> None:
        request.headers[TICKET_HEADER] = local.ticket

    clients: dict[tuple[str, str, str], Any] = {}
    clients_lock = threading.Lock()

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        # AWS: a Map's iterations call services independently. moto built a client per task call
        # from boto3's shared default session, which is not thread-safe: concurrent iterations
        # failed at random with States.Runtime. Clients are thread-safe once built; build each
        # once per role. AWS: the integration acts as the execution's role (or the state's
        # Credentials.RoleArn); moto signed every call with dummy keys.
        from moto.settings import moto_server_port

        role_arn = getattr(state_credentials, "role_arn", None)
        key = (region, service, str(moto_server_port()), role_arn)
        with clients_lock:
            if key not in clients:
                keys = credentials(role_arn) if role_arn else None
                clients[key] = _handing_over(original_factory(region, service) if keys is None else _client_as(region, service, keys))
            return clients[key]

    def _client_as(region: str, service: str, keys: dict[str, str]) -> Any:
        from moto.settings import moto_server_port

        model = original_factory(region, service)  # moto's settings, with the role's keys instead of dummy ones
        return boto3.client(
            service, region_name=region, endpoint_url=f"http://localhost:{moto_server_port()}", config=model.meta.config,
            aws_access_key_id=keys["AWS_ACCESS_KEY_ID"], aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=keys["AWS_SESSION_TOKEN"],
        )

    def _handing_over(client: Any) -> Any:
        make_api_call = client._make_api_call

        def handing_over(operation_name: str, api_params: dict) -> Any:
            ticket = local.ticket = clock.hand_over()
            try:
                with clock.idle():
                    return make_api_call(operation_name, api_params)
            finally:
                clock.redeem(ticket)

        client._make_api_call = handing_over
        client.meta.events.register("before-send", add_ticket)
        return client

    for module in [boto_client_module, *(importlib.import_module(name) for name in modules_importing(boto_client_module, "boto_client_for", original_factory))]:
        module.boto_client_for = boto_client_for



def _simulated_utcnow() -> _datetime.datetime:
    # Runs as moto.core.utils.utcnow, with that module's globals (see install_service_clock).
    return _emulator_datetime.datetime.fromtimestamp(  # noqa: F821
        _emulator_now(), _emulator_datetime.timezone.utc  # noqa: F821
    ).replace(tzinfo=None)


def install_service_clock(clock: SimClock) -> None:
    """Every service stamps times from the one simulated clock, as AWS services share one time.

    moto's services read ``moto.core.utils.utcnow`` (S3 LastModified, DynamoDB, SQS, Logs...), in
    real time: after a few simulated Waits an execution's timestamps ran hours ahead of the objects
    it wrote. The function's code is swapped in place, so every module that imported it, now or
    later, reads the simulated clock. The HTTP ``Date`` header stays real: the CDK CLI corrects its
    own clock by it, and a skewed one slows every deploy.
    """
    import moto.core.responses as core_responses
    import moto.core.utils as core_utils

    real_utcnow = types.FunctionType(
        core_utils.utcnow.__code__, core_utils.utcnow.__globals__, "utcnow", closure=core_utils.utcnow.__closure__
    )
    core_responses.utcnow = real_utcnow
    core_utils._emulator_now = clock.now
    core_utils._emulator_datetime = _datetime
    core_utils.utcnow.__code__ = _simulated_utcnow.__code__
