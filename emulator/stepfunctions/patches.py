"""Step Functions API and engine fidelity: executions, history, task tokens as AWS documents them."""

from __future__ import annotations

import datetime as _datetime
import functools
import importlib
import json
import re
import threading
import uuid
from typing import Any, Callable

from emulator.cloudformation.property_names import api_names
from emulator.patches._moto import modules_importing


def install_executing_backend() -> None:
    """State machines created by CloudFormation execute: moto put them in a backend that never runs them."""
    from moto.stepfunctions import models as sfn_models
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    sfn_models.stepfunctions_backends = stepfunctions_parser_backends


def install_empty_filter_result() -> None:
    """AWS: a JSONPath filter that matches nothing yields []; moto raises States.Runtime."""
    from moto.stepfunctions.parser.asl.utils import json_path

    original_extract = json_path.extract_json

    def extract_json(path: str, data: Any) -> Any:
        try:
            return original_extract(path, data)
        except json_path.NoSuchJsonPathError:
            if "[?(" in path:
                return []
            raise

    json_path.extract_json = extract_json
    for module_name in modules_importing(json_path, "extract_json", original_extract):
        setattr(importlib.import_module(module_name), "extract_json", extract_json)


def install_start_execution_checks() -> None:
    """StartExecution names, input checks as AWS documents them.

    AWS: StartExecution without a name gets a UUID; moto names every one "None" and collides.
    AWS refuses input that is not JSON with InvalidExecutionInput (moto answers an error with no
    code) and input over 262,144 UTF-8 bytes with ValidationException (moto accepts it and the
    execution fails later with States.DataLimitExceeded).
    """
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original_start = StepFunctionsParserBackend.start_execution

    def start_execution(self: Any, state_machine_arn: str, name: str | None = None, execution_input: str | None = None, *args: Any, **kwargs: Any) -> Any:
        if execution_input is not None:
            _check_execution_input(execution_input)
        return original_start(self, state_machine_arn, name or str(uuid.uuid4()), execution_input, *args, **kwargs)

    StepFunctionsParserBackend.start_execution = start_execution


def install_describe_execution() -> None:
    """AWS: DescribeExecution output is always a JSON text (a string output is quoted; null is
    "null"), TIMED_OUT executions have a stopDate too, and ``redriveCount`` is 0 until the
    execution is redriven; ``redriveStatus`` says whether it can be (``redriveStatusReason`` why
    not) and a redriven execution has its last ``redriveDate``."""
    from moto.stepfunctions import responses as sfn_responses

    from emulator.stepfunctions.redrive import redrive_status

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
            "redriveCount": getattr(execution, "redrive_count", 0),
        }
        response["redriveStatus"], reason = redrive_status(execution)
        if reason is not None:
            response["redriveStatusReason"] = reason
        if getattr(execution, "redrive_date", None) is not None:
            response["redriveDate"] = execution.redrive_date
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


def install_stop_execution() -> None:
    """AWS: StopExecution's error and cause are the aborted execution's error and cause; moto
    stops every execution with empty ones."""
    from moto.stepfunctions import responses as sfn_responses

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


def install_status_change_events(on_status_change: Callable[..., None]) -> None:
    """AWS emits "Step Functions Execution Status Change" events on start and on every end."""
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped
    from moto.stepfunctions.parser.backend import execution as execution_module

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


# AWS: "The execution reached the maximum number of history events (25000)." ends it FAILED with
# States.Runtime; that failure is event 25,000.
HISTORY_EVENT_LIMIT = 25_000
HISTORY_LIMIT_CAUSE = f"The execution reached the maximum number of history events ({HISTORY_EVENT_LIMIT})."


def install_history_limit() -> None:
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



def install_callback_tasks() -> None:
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


def aws_timestamp(moment: _datetime.datetime | str) -> str:
    """A time as the context object shows it: ISO 8601, UTC, milliseconds, ``Z``."""
    if isinstance(moment, str):
        moment = _datetime.datetime.fromisoformat(moment.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_datetime.timezone.utc)
    moment = moment.astimezone(_datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def install_context_object() -> None:
    """The context object (``$$``, ``$states.context``) as AWS documents it.

    AWS: ``Execution.StartTime`` and ``State.EnteredTime`` are strings such as
    "2019-03-26T20:14:13.192Z"; ``Execution.RedriveCount`` is 0 until the execution is redriven;
    an inline Map item's ``Map.Item.Source`` is "STATE_DATA". ``State.RetryCount`` is only in the
    states that can retry (Task, Map, Parallel), as moto has it: AWS's records of a Pass state's
    ``$$.State`` hold only Name and EnteredTime.
    moto put a datetime object in StartTime (an output holding ``$$`` then failed DescribeExecution
    with HTTP 500, "Object of type datetime is not JSON serializable"), wrote EnteredTime with
    microseconds and "+00:00", and had no RedriveCount.
    https://docs.aws.amazon.com/step-functions/latest/dg/input-output-contextobject.html
    """
    from moto.stepfunctions.parser.asl.component.state import state as state_module
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    original_environment = ExecutionWorker._get_evaluation_environment

    def get_evaluation_environment(self: Any) -> Any:
        env = original_environment(self)
        execution = env.states.context_object.context_object_data["Execution"]
        execution["StartTime"] = aws_timestamp(execution["StartTime"])
        execution.setdefault("RedriveCount", 0)
        return env

    ExecutionWorker._get_evaluation_environment = get_evaluation_environment
    original_state_data = state_module.StateData

    def state_data(**fields: Any) -> Any:
        fields["EnteredTime"] = aws_timestamp(fields["EnteredTime"])
        return original_state_data(**fields)

    state_module.StateData = state_data

    # AWS: Map.Item.Source says where an item came from: "STATE_DATA" for items of the state input.
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import iteration_worker

    original_item_data = iteration_worker.ItemData

    def item_data(**fields: Any) -> Any:
        return original_item_data(**fields, Source="STATE_DATA")

    iteration_worker.ItemData = item_data


# GetExecutionHistory: "maxResults ... The default is 100 and the maximum is 1000."
HISTORY_PAGE_DEFAULT, HISTORY_PAGE_MAX = 100, 1000


def install_history_paging() -> None:
    """AWS: GetExecutionHistory returns at most ``maxResults`` events (default 100, at most 1000),
    oldest first unless ``reverseOrder``, with a ``nextToken`` for the rest; moto returned every
    event in one unordered page and ignored all three.
    https://docs.aws.amazon.com/step-functions/latest/apireference/API_GetExecutionHistory.html
    """
    from moto.stepfunctions import responses as sfn_responses
    from moto.stepfunctions.exceptions import InvalidToken

    serialize_event = history_event_serializer()

    def get_execution_history(self: Any) -> Any:
        execution = self.stepfunction_backend.describe_execution(self._get_param("executionArn"))
        size = min(self._get_param("maxResults") or HISTORY_PAGE_DEFAULT, HISTORY_PAGE_MAX)
        token = self._get_param("nextToken")
        try:
            start = int(token) if token else 0
        except ValueError:
            raise InvalidToken(f"'{token}'") from None
        events, total = _history_page(execution, start, size, reverse=bool(self._get_param("reverseOrder")),
                                      serialize=serialize_event)
        page: dict[str, Any] = {"events": events}
        if start + size < total:
            page["nextToken"] = str(start + size)
        return json.dumps(page), {"Content-Type": "application/x-amz-json-1.0"}

    sfn_responses.StepFunctionResponse.get_execution_history = get_execution_history


def history_event_serializer() -> Callable[[dict], dict]:
    """A history event as GetExecutionHistory's JSON body holds it, from the walk of its shape moto's
    response serializer makes at every answer, worked out once (moto's took 11 ms a page: most of
    the cost of reading a history). As moto writes it: a member the shape does not name, or that is
    None, is left out; the timestamp is epoch seconds to the millisecond; the rest is as it is."""
    from moto.core.serialize import TimestampSerializer
    from moto.core.utils import get_service_model

    unix = TimestampSerializer.TIMESTAMP_FORMAT_UNIX
    timestamps = TimestampSerializer(unix)

    def compiled(shape: Any) -> Callable[[Any], Any] | None:
        if shape.type_name == "structure":
            members = {name: compiled(member) for name, member in shape.members.items()}
            return lambda value: {
                name: item if members[name] is None else members[name](item)
                for name, item in value.items() if name in members and item is not None
            }
        if shape.type_name == "list":
            member = compiled(shape.member)
            return None if member is None else lambda value: [member(item) for item in value]
        if shape.type_name == "timestamp":
            return lambda value: timestamps._convert_timestamp_to_str(value, unix)
        return None  # a string, number or boolean

    # The model moto's serializer walks, loaded once per process (a new botocore session would parse it again).
    output = get_service_model("stepfunctions").operation_model("GetExecutionHistory").output_shape
    serializer = compiled(output.members["events"].member)
    assert serializer is not None
    return serializer


def _history_page(execution: Any, start: int, size: int, *, reverse: bool,
                  serialize: Callable[[dict], dict]) -> tuple[list[dict], int]:
    """Events ``start`` to ``start + size`` of the execution's history (oldest first unless ``reverse``),
    each serialized while the engine cannot append, and how many it holds. moto's own read deep-copied
    the whole history for every page: reading a finished 25,000-event history a thousand at a time
    copied 625,000 events."""
    env = execution.exec_worker.env
    if env is None:  # the execution has not started yet
        return [], 0
    manager = env.event_manager
    with manager._mutex:  # the engine appends under it
        events = manager._history_event_list  # oldest first: the engine numbers events as it records them
        total = len(events)
        if reverse:
            chosen = events[max(total - start - size, 0) : max(total - start, 0)][::-1]
        else:
            chosen = events[start : start + size]
        return [serialize(event) for event in chosen], total


def install_definition_string_escapes() -> None:
    """AWS reads a definition as JSON: ``"Mar\\u00eda"`` is the string "María" wherever it stands.
    moto's parser kept the escapes of most string fields (Assign constants, Result, state names,
    error names...) as raw text, so a definition serialized with ``json.dumps`` defaults, as boto3
    users do, assigned "Mar\\u00eda".
    """
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    original = Preprocessor._inner_string_of

    def inner_string_of(parser_rule_context: Any) -> str | None:
        text = original(parser_rule_context)
        if text is None or "\\" not in text:
            return text
        return json.loads(f'"{text}"')

    Preprocessor._inner_string_of = staticmethod(inner_string_of)


# A quoted key in brackets: ['...'] or ["..."], a backslash escaping the character after it.
_BRACKET_KEY = re.compile(r"""\[\s*(['"])((?:\\.|(?!\1)[^\\])*)\1\s*\]""")


def install_jsonpath_bracket_keys() -> None:
    """AWS reads a quoted key in brackets as Jayway JsonPath does: a backslash before the quote that
    delimits the key stands for that quote, and every other backslash is part of the key, so
    ``$['Test\\""Name"']`` reads the key ``Test\\""Name"`` (AWS's recorded executions). moto's
    jsonpath-ng took any backslash as an escape and looked for ``Test""Name"``.
    https://docs.aws.amazon.com/step-functions/latest/dg/amazon-states-language-paths.html
    """
    from moto.stepfunctions.parser.asl.utils import json_path

    original = json_path.extract_json

    def as_jsonpath_ng_reads_it(match: re.Match) -> str:
        quote, raw = match[1], match[2]
        key = raw.replace("\\" + quote, quote)
        return "[" + quote + key.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote + "]"

    def extract_json(path: str, data: Any) -> Any:
        if "\\" not in path:
            return original(path, data)
        try:
            return original(_BRACKET_KEY.sub(as_jsonpath_ng_reads_it, path), data)
        except json_path.NoSuchJsonPathError:
            raise json_path.NoSuchJsonPathError(json_path=path, data=data) from None

    json_path.extract_json = extract_json
    for module_name in modules_importing(json_path, "extract_json", original):
        setattr(importlib.import_module(module_name), "extract_json", extract_json)


def install_query_language_scopes_per_parse() -> None:
    """Each parse of a definition keeps its own stack of query-language scopes.

    moto's ``Preprocessor`` keeps that stack in a list on the class, shared by every parse in the
    process: a definition refused mid-parse (a ``Parameters`` field in a JSONata state, say) leaves its
    scopes on it, and every definition parsed after it in the process is refused too, as declaring a
    field of the wrong query language; two definitions parsed at once (a CreateStateMachine beside an
    execution's start) push and pop on each other's scopes.
    """
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    original = Preprocessor.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self._query_language_per_scope = []

    Preprocessor.__init__ = __init__


def install_parse_once_per_definition() -> None:
    """Speed, not behaviour: a definition's text is parsed once, not at every StartExecution.

    moto runs the ANTLR parser over the whole definition for every execution (about 40 ms for the
    alert machine, most of a start's cost: a thousand starts took 45 s of CPU). The parse tree is
    only read afterwards, so it is kept per definition text; each execution still gets evaluation
    components of its own, built from the tree, so no state passes from one execution to another.
    A definition that does not parse raises as before and is not kept.

    Building the components reads each node's text (ANTLR's ``getText``, which joins its
    descendants' text anew at every call): a kept tree answers it from text joined once, which
    took the alert machine's build from 27 to 12 ms of CPU.
    """
    from antlr4.ParserRuleContext import ParserRuleContext
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    original = AmazonStateLanguageParser.parse

    def text_joined_once(node: Any) -> str:
        if not isinstance(node, ParserRuleContext):
            return node.getText()  # a token's own text
        text = "".join(text_joined_once(child) for child in node.children or ())
        node.getText = text.__str__  # the tree is never changed once parsed
        return text

    def parsed(definition: str) -> Any:
        tree = original(definition)[1]
        text_joined_once(tree)
        return tree

    parse_tree = functools.lru_cache(maxsize=64)(parsed)

    def parse(definition: str) -> tuple[Any, Any]:
        tree = parse_tree(definition)
        return Preprocessor().visit(tree), tree

    AmazonStateLanguageParser.parse = staticmethod(parse)


def install_jsonpath_parse_once() -> None:
    """Speed, not behaviour: each JSONPath text is parsed once, not at every evaluation.

    moto parses a path every time a state reads or writes it (``ResultPath``, ``InputPath``, a
    ``.$`` parameter...), and jsonpath-ng builds a new LALR parser for each parse: about 0.4 ms, most
    of a Pass state's cost (a 25,000-event execution of Pass states took 5.7 s of CPU, 0.8 s without). A parsed path is a
    tree jsonpath-ng never changes after building it, so one per text serves every execution and
    thread; a path that does not parse raises as before and is not kept.
    """
    import jsonpath_ng
    import jsonpath_ng.ext

    for module, cached in ((jsonpath_ng, functools.lru_cache(maxsize=4096)(jsonpath_ng.parse)),
                           (jsonpath_ng.ext, functools.lru_cache(maxsize=4096)(jsonpath_ng.ext.parse))):
        for module_name in modules_importing(module, "parse", module.parse):
            setattr(importlib.import_module(module_name), "parse", cached)


def install_execution_logging() -> None:
    """AWS: a state machine with a ``LoggingConfiguration`` (from CloudFormation too) writes the
    history events its level selects to its log group, one JSON message per event, without
    input and output unless ``includeExecutionData``. moto's CloudFormation model dropped the
    property, no execution opened a logging session, and its log events lacked a message."""
    from moto.logs.models import logs_backends
    from moto.stepfunctions import models as sfn_models
    from moto.stepfunctions.parser.asl.eval.event import logging as sfn_logging
    from moto.stepfunctions.parser.backend import execution as execution_module

    def create_from_cloudformation_json(
        cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> Any:
        properties = cloudformation_json["Properties"]
        logging_configuration = properties.get("LoggingConfiguration")
        return sfn_models.stepfunctions_backends[account_id][region_name].create_state_machine(
            properties.get("StateMachineName", resource_name),
            properties.get("DefinitionString", ""),
            properties.get("RoleArn", ""),
            tags=sfn_models.cfn_to_api_tags(properties.get("Tags", [])),
            loggingConfiguration=api_names(logging_configuration) if logging_configuration else None,
        )

    sfn_models.StateMachine.create_from_cloudformation_json = classmethod(create_from_cloudformation_json)

    original_init = execution_module.Execution.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        configuration = getattr(self.state_machine, "loggingConfiguration", None) or {}
        if self._cloud_watch_logging_session is None and configuration.get("level", "OFF") != "OFF":
            configuration = {"includeExecutionData": False, **configuration}
            parsed = sfn_logging.CloudWatchLoggingConfiguration.from_logging_configuration(
                state_machine_arn=self.state_machine.arn, logging_configuration=configuration
            )
            if parsed is not None:
                self._cloud_watch_logging_session = sfn_logging.CloudWatchLoggingSession(
                    execution_arn=self.exec_arn, configuration=parsed
                )

    execution_module.Execution.__init__ = init

    def publish_history_log(self: Any, history_log: Any) -> None:
        config = self.configuration
        group = logs_backends[config.log_account_id][config.log_region].groups.get(config.log_group_name)
        if group is None:  # AWS drops what it cannot deliver; the execution goes on
            return
        if config.log_stream_name not in group.streams:
            group.create_log_stream(config.log_stream_name)
        when = history_log["event_timestamp"]
        if isinstance(when, str):
            when = _datetime.datetime.fromisoformat(when) if not when.isdigit() else int(when)
        timestamp = when if isinstance(when, int) else int(when.timestamp() * 1000)
        message = json.dumps({**history_log, "event_timestamp": str(timestamp)}, default=str)
        group.put_log_events(config.log_stream_name, [{"timestamp": timestamp, "message": message}])

    sfn_logging.CloudWatchLoggingSession.publish_history_log = publish_history_log


def install_list_executions_paging() -> None:
    """AWS: a ListExecutions ``nextToken`` fetches the next page "with all other arguments unchanged"
    and stays valid for 24 hours, however the executions change meanwhile
    (https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html). moto's
    token names the execution that heads the next page and is refused ("Invalid Token: Resource not
    found!") once that execution leaves the list: paging through RUNNING executions while they end
    failed at random. Here the token holds that execution's place in the order (newest start first,
    then ARN), and the next page starts at the first execution listed now that is not before it.
    """
    import base64
    import datetime as _datetime
    import json

    from moto.stepfunctions.exceptions import InvalidToken
    from moto.stepfunctions.models import StepFunctionBackend

    # The listing before moto's paging (the redrive filter's, installed first, over moto's own)
    listed = StepFunctionBackend.list_executions.__wrapped__

    def place(execution: Any) -> tuple:
        return execution.start_date, execution.execution_arn

    def list_executions(self: Any, state_machine_arn: str, status_filter: str | None = None,
                        max_results: int | None = None, next_token: str | None = None) -> tuple[list, str | None]:
        executions = sorted(listed(self, state_machine_arn, status_filter), key=place, reverse=True)
        start = 0
        if next_token:
            try:
                token = json.loads(base64.urlsafe_b64decode(next_token.encode()))
                after = (_datetime.datetime.fromisoformat(token["start"]), token["arn"])
            except (ValueError, TypeError, KeyError):
                raise InvalidToken(f"'{next_token}'") from None
            if token.get("listing") != [state_machine_arn, status_filter]:
                raise InvalidToken("the token is for another listing") from None
            start = next((i for i, execution in enumerate(executions) if place(execution) <= after), len(executions))
        end = start + (max_results or 100)
        if end >= len(executions):
            return executions[start:], None
        heading = executions[end]
        token = {"listing": [state_machine_arn, status_filter], "start": heading.start_date.isoformat(),
                 "arn": heading.execution_arn}
        return executions[start:end], base64.urlsafe_b64encode(json.dumps(token).encode()).decode()

    list_executions.__wrapped__ = listed
    StepFunctionBackend.list_executions = list_executions
