"""Changes to moto that make the deployed app behave as it does on AWS, each with the reason.

Every patch here corrects a difference between moto 5.2.5 and documented AWS behaviour that the
app depends on (see ../shared/notes/moto-engine.md); tests/test_emulator_fidelity.py states the
AWS behaviour each one restores.
"""

from __future__ import annotations

import datetime as _datetime
import importlib
import json
import pkgutil
import threading
import time as _time
import types
import uuid
from typing import Any, Callable

from emulator.clock import TICKET_HEADER, BusyThread, SimClock, SimEvent

MOTO_VERSION = "5.2.5"


# ------------------------------------------------------------------------------------------------
# Simulated time inside the Step Functions engine
# ------------------------------------------------------------------------------------------------
class _ClockModule(types.SimpleNamespace):
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
    time_shim = _ClockModule(_time, time=clock.now, sleep=clock.sleep)
    datetime_shim = _ClockModule(_datetime, datetime=sim_datetime)
    threading_shim = _ClockModule(threading, Event=SimEvent, Thread=BusyThread)
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

    _patch_program_timeout(clock)
    _patch_wait_timestamp_utc(clock)
    _patch_progress_reports(clock)
    _patch_engine_calls_hand_over(clock)


def _patch_program_timeout(clock: SimClock) -> None:
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


def _patch_wait_timestamp_utc(clock: SimClock) -> None:
    """AWS reads a Wait Timestamp as UTC ('Z'); moto subtracts a naive local now()."""
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function import (
        timestamp as ts_module,
    )

    def get_wait_seconds(self: Any, env: Any) -> int:
        self.string.eval(env=env)
        timestamp_str: str = env.stack.pop()
        timestamp = self._from_timestamp_string(timestamp=timestamp_str)
        if timestamp is None:
            raise ts_module.FailureEventException(self._create_failure_event(env, timestamp_str))
        target = timestamp.replace(tzinfo=_datetime.timezone.utc).timestamp()
        return int(target - clock.now())

    ts_module.Timestamp._get_wait_seconds = get_wait_seconds


def _patch_progress_reports(clock: SimClock) -> None:
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


def _patch_engine_calls_hand_over(clock: SimClock) -> None:
    """An AWS call from the engine hands the calling thread's busy token over to the request.

    The token stays held until the response is read, except while the server waits on the clock
    for it (a synchronous Lambda handler's sleep), so the clock neither jumps while a request or
    its response is in transit nor stays still while the handler sleeps.
    """
    import sys

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
        # once. (moto ignores state_credentials, the execution's role, too.)
        from moto.settings import moto_server_port

        key = (region, service, str(moto_server_port()))
        with clients_lock:
            if key not in clients:
                clients[key] = _handing_over(original_factory(region, service))
            return clients[key]

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

    for module in [boto_client_module, *(sys.modules[name] for name in _modules_importing(boto_client_module, "boto_client_for", original_factory))]:
        module.boto_client_for = boto_client_for


# ------------------------------------------------------------------------------------------------
# Step Functions fidelity
# ------------------------------------------------------------------------------------------------
def install_stepfunctions_fidelity(on_status_change: Callable[..., None]) -> None:
    from moto.stepfunctions import models as sfn_models
    from moto.stepfunctions import responses as sfn_responses
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped
    from moto.stepfunctions.parser.asl.utils import json_path
    from moto.stepfunctions.parser.backend import execution as execution_module
    from moto.stepfunctions.parser.models import (
        StepFunctionsParserBackend,
        stepfunctions_parser_backends,
    )

    # CloudFormation creates state machines in moto's plain backend, which never executes them.
    sfn_models.stepfunctions_backends = stepfunctions_parser_backends

    # AWS: a JSONPath filter that matches nothing yields []; moto raises States.Runtime.
    original_extract = json_path.extract_json

    def extract_json(path: str, data: Any) -> Any:
        try:
            return original_extract(path, data)
        except json_path.NoSuchJsonPathError:
            if "[?(" in path:
                return []
            raise

    json_path.extract_json = extract_json
    for module_name in _modules_importing(json_path, "extract_json", original_extract):
        setattr(importlib.import_module(module_name), "extract_json", extract_json)

    # AWS: StartExecution without a name gets a UUID; moto names every one "None" and collides.
    # AWS refuses input that is not JSON with InvalidExecutionInput (moto answers an error with no
    # code) and input over 262,144 UTF-8 bytes with ValidationException (moto accepts it and the
    # execution fails later with States.DataLimitExceeded).
    original_start = StepFunctionsParserBackend.start_execution

    def start_execution(self: Any, state_machine_arn: str, name: str | None = None, execution_input: str | None = None, *args: Any, **kwargs: Any) -> Any:
        if execution_input is not None:
            _check_execution_input(execution_input)
        return original_start(self, state_machine_arn, name or str(uuid.uuid4()), execution_input, *args, **kwargs)

    StepFunctionsParserBackend.start_execution = start_execution

    # AWS: DescribeExecution output is always a JSON text (a string output is quoted; null is
    # "null"), and TIMED_OUT executions have a stopDate too.
    def describe_execution(self: Any) -> Any:
        arn = self._get_param("executionArn")
        execution = self.stepfunction_backend.describe_execution(arn)
        response = {
            "executionArn": arn,
            "input": execution.execution_input,
            "name": execution.name,
            "startDate": execution.start_date,
            "stateMachineArn": execution.state_machine_arn,
            "status": execution.status,
        }
        if execution.status != "RUNNING" and execution.stop_date is not None:
            response["stopDate"] = execution.stop_date
        if execution.status == "SUCCEEDED":
            response["output"] = json.dumps(execution.output, separators=(",", ":"))
            response["outputDetails"] = execution.output_details
        if execution.error is not None:
            response["error"] = execution.error
        if execution.cause is not None:
            response["cause"] = execution.cause
        return sfn_responses.ActionResult(response)

    sfn_responses.StepFunctionResponse.describe_execution = describe_execution

    # AWS: StopExecution's error and cause are the aborted execution's error and cause; moto
    # stops every execution with empty ones.
    def stop_execution(self: Any) -> Any:
        arn = self._get_param("executionArn")
        execution = self.stepfunction_backend.describe_execution(arn)
        if execution.status == "RUNNING":
            execution.stop(
                stop_date=_datetime.datetime.now(_datetime.timezone.utc),
                error=self._get_param("error"),
                cause=self._get_param("cause"),
            )
        return sfn_responses.ActionResult({"stopDate": execution.stop_date or _datetime.datetime.now(_datetime.timezone.utc)})

    sfn_responses.StepFunctionResponse.stop_execution = stop_execution

    # AWS emits "Step Functions Execution Status Change" events on start and on every end.
    comm = execution_module.BaseExecutionWorkerCommunication
    original_terminated = comm.terminated

    def terminated(self: Any) -> None:
        original_terminated(self)
        state = self.execution.exec_worker.env.program_state()
        if isinstance(state, ProgramStopped):
            self.execution.error, self.execution.cause = state.error, state.cause
        on_status_change(self.execution)

    comm.terminated = terminated
    original_exec_start = execution_module.Execution.start

    def exec_start(self: Any) -> None:
        original_exec_start(self)
        # A short machine may already have ended: this event reports the start, whatever happened since.
        on_status_change(self, "RUNNING")

    execution_module.Execution.start = exec_start
    _patch_history_limit()


# AWS: "The execution reached the maximum number of history events (25000)." ends it FAILED with
# States.Runtime; that failure is event 25,000.
HISTORY_EVENT_LIMIT = 25_000
HISTORY_LIMIT_CAUSE = f"The execution reached the maximum number of history events ({HISTORY_EVENT_LIMIT})."


def _patch_history_limit() -> None:
    """Executions past 25,000 history events fail as on AWS; moto lets them run on."""
    from moto.stepfunctions.parser.api import ExecutionFailedEventDetails
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager

    original_init = Environment.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        # Frames swap this manager for their execution's; a Distributed Map child makes its own.
        self.event_manager.execution_env = self

    Environment.__init__ = init
    original_add_event = EventManager.add_event

    def add_event(self: Any, context: Any, event_type: Any, *args: Any, **kwargs: Any) -> int:
        env = getattr(self, "execution_env", None)
        if (
            env is not None
            and not str(getattr(event_type, "value", event_type)).startswith("Execution")
            and len(self._history_event_list) >= HISTORY_EVENT_LIMIT - 1
        ):
            # The event that would pass the limit is not recorded; the execution fails instead.
            env.set_error(ExecutionFailedEventDetails(error="States.Runtime", cause=HISTORY_LIMIT_CAUSE))
            return context.last_published_event_id
        return original_add_event(self, context, event_type, *args, **kwargs)

    EventManager.add_event = add_event

    _patch_callback_tasks()


def _patch_callback_tasks() -> None:
    """Task tokens (``.waitForTaskToken``) as AWS documents them."""
    from moto.stepfunctions import responses as sfn_responses
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
        StatesErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task import (
        StateTask,
    )
    from moto.stepfunctions.parser.asl.eval.callback.callback import (
        CallbackEndpoint,
        HeartbeatTimeoutError,
    )

    # AWS: SendTaskFailure's cause becomes the task's (and the execution's) cause; moto dropped it.
    def send_task_failure(self: Any) -> Any:
        self.stepfunction_backend.send_task_failure(
            self._get_param("taskToken"), error=self._get_param("error"), cause=self._get_param("cause")
        )
        return sfn_responses.EmptyResult()

    sfn_responses.StepFunctionResponse.send_task_failure = send_task_failure

    # AWS: a token is valid from the moment its task starts. moto set the heartbeat timer up only
    # once the task's invoke had returned: a heartbeat sent before that got InvalidToken, and a
    # result sent before that was missed, so the task still waited HeartbeatSeconds and timed out.
    original_setup = CallbackEndpoint.setup_heartbeat_endpoint

    def setup_heartbeat_endpoint(self: Any, heartbeat_seconds: int) -> Any:
        endpoint = original_setup(self, heartbeat_seconds)
        if self.get_outcome() is not None:
            endpoint.notify()
        return endpoint

    def notify_heartbeat(self: Any) -> bool:
        if self._heartbeat_endpoint is not None:
            self._heartbeat_endpoint.notify()
        return True

    CallbackEndpoint.setup_heartbeat_endpoint = setup_heartbeat_endpoint
    CallbackEndpoint.notify_heartbeat = notify_heartbeat

    # AWS: a task that misses HeartbeatSeconds fails with States.HeartbeatTimeout, which a Retry or
    # Catch on States.HeartbeatTimeout or on States.Timeout matches; moto reported States.Timeout.
    class HeartbeatTimeoutName(StatesErrorName):
        def __init__(self) -> None:
            super().__init__(typ=StatesErrorNameType.StatesHeartbeatTimeout)

        def matches(self, error_name: str | None) -> bool:
            return error_name in (self.error_name, StatesErrorNameType.StatesTimeout.to_name())

    original_from_error = StateTask._from_error

    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        failure = original_from_error(self, env, ex)
        if isinstance(ex, HeartbeatTimeoutError):  # a TimeoutError: moto made it a TaskTimedOut event
            failure.error_name = HeartbeatTimeoutName()
            failure.event_details["taskTimedOutEventDetails"]["error"] = failure.error_name.error_name
        return failure

    StateTask._from_error = from_error

    # AWS: SendTask{Success,Failure,Heartbeat} finds its token whatever else is running. moto
    # searched every RUNNING execution's engine environment, and an execution that had only just
    # started had none yet (None): the call failed with a 500 AttributeError, so under load a
    # runner's heartbeat was lost and its task timed out. Executions with no environment hold no
    # token yet; the token search skips them.
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    searching_tokens = threading.local()
    original_get_executions = StepFunctionsParserBackend._get_executions

    def get_executions(self: Any, *args: Any, **kwargs: Any) -> Any:
        executions = original_get_executions(self, *args, **kwargs)
        if getattr(searching_tokens, "active", False):
            executions = [e for e in executions if getattr(e.exec_worker, "env", None) is not None]
        return executions

    StepFunctionsParserBackend._get_executions = get_executions

    def searching(original: Callable[..., Any]) -> Callable[..., Any]:
        def send(self: Any, *args: Any, **kwargs: Any) -> Any:
            searching_tokens.active = True
            try:
                return original(self, *args, **kwargs)
            finally:
                searching_tokens.active = False

        return send

    for name in ("send_task_heartbeat", "send_task_success", "send_task_failure"):
        setattr(StepFunctionsParserBackend, name, searching(getattr(StepFunctionsParserBackend, name)))


MAX_EXECUTION_INPUT_BYTES = 262_144  # StartExecution's documented length constraint on input


def _check_execution_input(execution_input: str) -> None:
    from moto.stepfunctions.exceptions import InvalidExecutionInput, ValidationException

    size = len(execution_input.encode("utf-8"))
    if size > MAX_EXECUTION_INPUT_BYTES:
        raise ValidationException(
            "1 validation error detected: Value at 'input' failed to satisfy constraint: "
            f"Member must have length less than or equal to {MAX_EXECUTION_INPUT_BYTES}"
        )
    try:
        json.loads(execution_input)
    except ValueError as error:
        raise InvalidExecutionInput(f"Invalid State Machine Execution Input: '{error}'") from None


def _modules_importing(module: types.ModuleType, name: str, value: Any) -> list[str]:
    import sys

    return [
        mod_name
        for mod_name, mod in list(sys.modules.items())
        if mod_name.startswith("moto.stepfunctions") and mod is not module and getattr(mod, name, None) is value
    ]


# ------------------------------------------------------------------------------------------------
# Lambda
# ------------------------------------------------------------------------------------------------
class _ManagedLayer:
    """An AWS-managed layer (Powertools): known by ARN, its packages installed beside the emulator."""

    def __init__(self, arn: str) -> None:
        self.arn = arn
        self.code_size = 0
        self.code_bytes = b""


def _header(headers: Any, name: str) -> str | None:
    if not headers:
        return None
    value = headers.get(name) if hasattr(headers, "get") else None
    if value is None:
        for key, candidate in dict(headers).items():
            if key.lower() == name:
                return candidate
    return value


def install_lambda_runtime(runtime: Any) -> None:
    from moto.awslambda.models import LambdaBackend, LambdaFunction

    original_layer_lookup = LambdaBackend.layers_versions_by_arn

    def layers_versions_by_arn(self: Any, arn: str) -> Any:
        found = original_layer_lookup(self, arn)
        if found is None and ":017000801446:layer:AWSLambdaPowertoolsPython" in arn:
            return _ManagedLayer(arn)
        return found

    LambdaBackend.layers_versions_by_arn = layers_versions_by_arn

    def invoke(self: Any, body: Any, request_headers: Any, response_headers: dict) -> bytes:
        invocation_type = _header(request_headers, "x-amz-invocation-type") or "RequestResponse"
        if invocation_type == "DryRun":
            return b""
        payload = body.encode() if isinstance(body, str) else (body or b"{}")
        result = runtime.invoke(self, payload, asynchronous=invocation_type == "Event")
        if result is None:
            return b""
        if result.errored:
            response_headers["x-amz-function-error"] = "Unhandled"
        return result.payload

    LambdaFunction.invoke = invoke


def install_lambda_invocation_type() -> None:
    """AWS honours InvocationType in the lambda:invoke integration; moto filters it out.

    An ``Event`` invocation (as with ``.waitForTaskToken``) must return at once so the task waits
    for its callback while the function runs.
    """
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_lambda,
    )

    state_task_service_lambda._SUPPORTED_API_PARAM_BINDINGS["invoke"].add("InvocationType")


def install_lambda_task_error_names() -> None:
    """Name lambda:invoke API failures as AWS does (its Java SDK's exception classes).

    A modelled Lambda error code keeps its name (``Lambda.TooManyRequestsException``,
    ``Lambda.ServiceException``); any other code is ``Lambda.AWSLambdaException``, and a call
    that got no answer at all (connection closed or refused) is ``Lambda.SdkClientException``.
    moto named them ``Lambda.<whatever code came back>`` and ``States.Runtime``.
    """
    import botocore.session
    from botocore.exceptions import BotoCoreError
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
        CustomErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_lambda import (
        StateTaskServiceLambda,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    modelled = {shape.name for shape in botocore.session.get_session().get_service_model("lambda").error_shapes}
    original_client_error = StateTaskServiceLambda._error_cause_from_client_error
    original_from_error = StateTaskServiceLambda._from_error

    def error_cause_from_client_error(client_error: Any) -> tuple[str, str]:
        error, cause = original_client_error(client_error)
        if client_error.response["Error"]["Code"] not in modelled:
            error = "Lambda.AWSLambdaException"
        return error, cause

    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        if not isinstance(ex, BotoCoreError):
            return original_from_error(self, env, ex)
        error = "Lambda.SdkClientException"
        return FailureEvent(
            env=env,
            error_name=CustomErrorName(error),
            event_type=HistoryEventType.TaskFailed,
            event_details=EventDetails(
                taskFailedEventDetails=TaskFailedEventDetails(
                    error=error,
                    cause=f"Unable to execute HTTP request: {ex}",
                    resource=self._get_sfn_resource(),
                    resourceType=self._get_sfn_resource_type(),
                )
            ),
        )

    StateTaskServiceLambda._error_cause_from_client_error = staticmethod(error_cause_from_client_error)
    StateTaskServiceLambda._from_error = from_error


# ------------------------------------------------------------------------------------------------
# DynamoDB
# ------------------------------------------------------------------------------------------------
# How long a table export takes. AWS takes minutes even for a tiny table; moto finishes at once.
DYNAMODB_EXPORT_SECONDS = 240


def install_dynamodb_exports(clock: SimClock) -> None:
    """Table exports as AWS runs them: named under their table, and taking time."""
    from moto.dynamodb.models.table_export import TableExport

    original_init = TableExport.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        # AWS: <table ARN>/export/<id>, which IAM policies scope DescribeExport by; moto nested
        # the whole table ARN after "table/" and said "import".
        self.arn = f"{self.table.table_arn}/export/{uuid.uuid4().hex}"
        self._emulator_done_at = clock.now() + DYNAMODB_EXPORT_SECONDS

    # The export's status is IN_PROGRESS until DYNAMODB_EXPORT_SECONDS of simulated time have
    # passed, then whatever moto's export (done at once) ended with.
    def get_status(self: Any) -> str:
        if clock.now() < getattr(self, "_emulator_done_at", float("inf")):
            return "IN_PROGRESS"
        return self._emulator_status

    def set_status(self: Any, value: str) -> None:
        self._emulator_status = value

    TableExport.__init__ = __init__
    TableExport.status = property(get_status, set_status)


# ------------------------------------------------------------------------------------------------
# CloudFormation (what `cdk deploy` needs)
# ------------------------------------------------------------------------------------------------
def install_cloudformation_fidelity() -> None:
    from moto.cloudformation import parsing as cfn_parsing
    from moto.cloudformation import responses as cfn_responses

    import emulator.cfn_models  # noqa: F401 - registers the extra resource models

    cfn_parsing.get_model_list.cache_clear()
    cfn_parsing.get_model_map.cache_clear()
    cfn_parsing.get_name_type_map.cache_clear()
    from moto.cloudformation.models import CloudFormationBackend
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.table import Table

    # `cdk deploy` passes a TemplateURL on the endpoint (http://127.0.0.1:PORT/bucket/key); moto
    # reads path-style URLs only for "localhost".
    original_from_url = cfn_responses.get_stack_from_s3_url

    def get_stack_from_s3_url(template_url: str, account_id: str, partition: str) -> str:
        return original_from_url(template_url.replace("://127.0.0.1:", "://localhost:", 1), account_id, partition)

    cfn_responses.get_stack_from_s3_url = get_stack_from_s3_url

    # `cdk deploy` uses change sets; moto's change-set path never publishes Outputs or Exports,
    # and resolves Fn::ImportValue against an empty export list.
    original_create_change_set = CloudFormationBackend.create_change_set

    def create_change_set(self: Any, *args: Any, **kwargs: Any) -> Any:
        change_set_id, stack_id = original_create_change_set(self, *args, **kwargs)
        stack = self.stacks[stack_id]
        stack.cross_stack_resources = self.exports
        stack.resource_map.cross_stack_resources = self.exports
        return change_set_id, stack_id

    CloudFormationBackend.create_change_set = create_change_set
    original_execute = CloudFormationBackend.execute_change_set

    def execute_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
        # `cdk deploy` names every stack's change set alike; moto picks one by name alone.
        change_set = self.change_sets.get(change_set_name) or next(
            (
                cs
                for cs in reversed(list(self.change_sets.values()))
                if cs.change_set_name == change_set_name and stack_name in (None, cs.stack_name, cs.stack_id)
            ),
            None,
        )
        if change_set is None:
            return original_execute(self, change_set_name, stack_name)
        original_execute(self, change_set.change_set_id, stack_name)
        stack = self.stacks[change_set.stack_id]
        for export in stack.exports:
            self.exports.pop(export.name, None)
        stack._parse_template()
        stack.description = stack.template_dict.get("Description")
        stack.output_map = stack._create_output_map()
        self._validate_export_uniqueness(stack)
        for export in stack.exports:
            self.exports[export.name] = export

    CloudFormationBackend.execute_change_set = execute_change_set

    # AWS::DynamoDB::Table PointInTimeRecoverySpecification is ignored by moto's CloudFormation.
    original_table_create = Table.create_from_cloudformation_json.__func__

    def table_create(cls: Any, resource_name: str, cloudformation_json: dict, account_id: str, region_name: str, **kwargs: Any) -> Any:
        table = original_table_create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
        spec = cloudformation_json.get("Properties", {}).get("PointInTimeRecoverySpecification") or {}
        if str(spec.get("PointInTimeRecoveryEnabled")).lower() == "true":
            dynamodb_backends[account_id][region_name].update_continuous_backups(
                table.name, {"PointInTimeRecoveryEnabled": True}
            )
        return table

    Table.create_from_cloudformation_json = classmethod(table_create)

    # AWS::Lambda::Function Layers are dropped by moto's CloudFormation: every function whose
    # code imports from a layer (the shared patterns_common package) failed to import. A Ref to
    # a layer of the same stack resolves to moto's LayerVersion model, not its ARN.
    from moto.awslambda.models import LambdaFunction

    original_function_create = LambdaFunction.create_from_cloudformation_json.__func__

    def function_create(cls: Any, resource_name: str, cloudformation_json: dict, *args: Any, **kwargs: Any) -> Any:
        fn = original_function_create(cls, resource_name, cloudformation_json, *args, **kwargs)
        properties = cloudformation_json.get("Properties", {})
        if properties.get("Layers"):
            fn.layers = fn._get_layers_data([getattr(layer, "arn", layer) for layer in properties["Layers"]])
        if properties.get("TracingConfig"):  # dropped too
            fn.tracing_config = properties["TracingConfig"]
        return fn

    LambdaFunction.create_from_cloudformation_json = classmethod(function_create)

    # AWS::KMS::Key Tags are {Key, Value} in CloudFormation; moto hands them to KMS's tagger,
    # which expects {TagKey, TagValue}, and the whole stack fails.
    from moto.kms.models import Key

    original_key_create = Key.create_from_cloudformation_json.__func__

    def key_create(cls: Any, resource_name: str, cloudformation_json: dict, *args: Any, **kwargs: Any) -> Any:
        properties = cloudformation_json.get("Properties", {})
        if properties.get("Tags"):
            properties = {**properties, "Tags": [{"TagKey": t["Key"], "TagValue": t["Value"]} for t in properties["Tags"]]}
            cloudformation_json = {**cloudformation_json, "Properties": properties}
        return original_key_create(cls, resource_name, cloudformation_json, *args, **kwargs)

    Key.create_from_cloudformation_json = classmethod(key_create)
