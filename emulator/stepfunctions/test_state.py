"""The TestState API: run one state of a definition and report what it did, as AWS does.

moto answers TestState with 404 "Not yet implemented". It vendors LocalStack's first TestState
(one state; no mocks, no ``stateName``, no Retry/Catch outcomes), whose parser turns nested states
into test programs too, so Map and Parallel could not be parsed. Here the state is parsed as part of
a machine, by the same parser executions use, and evaluated in an environment of its own: Retry and
Catch decide the status instead of sleeping and looping, and a mock stands in for the service call.
https://docs.aws.amazon.com/step-functions/latest/apireference/API_TestState.html
https://docs.aws.amazon.com/step-functions/latest/dg/test-state-isolation.html
"""

from __future__ import annotations

import copy
import datetime as _datetime
import json
import uuid
from typing import Any

from moto.core.exceptions import AWSError

from emulator import ACCOUNT_ID, REGION
from emulator.clock import SimEvent
from emulator.patches._moto import error_name
from emulator.stepfunctions.patches import aws_timestamp

DEFAULT_ROLE_ARN = f"arn:aws:iam::{ACCOUNT_ID}:role/TestStateRole"


class InvalidDefinition(AWSError):
    TYPE = "InvalidDefinition"
    STATUS = 400


class InvalidExecutionInput(AWSError):
    TYPE = "InvalidExecutionInput"
    STATUS = 400


class ValidationException(AWSError):
    TYPE = "ValidationException"
    STATUS = 400


class _Retriable(Exception):
    """The state failed with an error a Retrier would retry: AWS reports it instead of retrying."""

    def __init__(self, retry_index: int, backoff_seconds: int) -> None:
        super().__init__(retry_index, backoff_seconds)
        self.retry_index, self.backoff_seconds = retry_index, backoff_seconds


def _json_param(text: str | None, name: str, error: type[AWSError], default: Any = None) -> Any:
    if text is None:
        return default
    try:
        return json.loads(text)
    except ValueError:
        raise error(f"Invalid JSON in '{name}': {text[:200]}") from None


def _as_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _machine_and_state(definition: dict, state_name: str | None) -> tuple[dict, str]:
    """The machine to parse and the name of the state under test in it."""
    if state_name is not None:
        if state_name not in definition.get("States", {}):
            raise ValidationException(f"State '{state_name}' is not defined in the state machine definition.")
        return definition, state_name
    if "States" in definition:
        raise ValidationException("stateName is required when the definition is a state machine.")
    # A lone state: wrapped as the only state of a machine, under the name AWS's console uses.
    return {"StartAt": "TestState", "States": {"TestState": definition}}, "TestState"


def _parse_state(machine: dict, state_name: str) -> Any:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser, ASLParserException

    try:
        program, _ = AmazonStateLanguageParser.parse(json.dumps(machine))
    except ASLParserException as error:
        raise InvalidDefinition(f"Invalid State Machine Definition: '{error}'") from None
    except Exception as error:  # the preprocessor refuses bad field values with plain exceptions
        raise InvalidDefinition(f"Invalid State Machine Definition: '{error}'") from None
    return program.states.states[state_name]


def _record(component: Any, inspection: dict, key: str) -> None:
    """Record the value ``component`` leaves on the stack under ``key`` of the inspection data."""
    if component is None:
        return
    original = component._eval_body

    def eval_body(env: Any) -> None:
        original(env)
        inspection[key] = _as_json(env.stack[-1])

    component._eval_body = eval_body


def _instrument(state: Any, inspection: dict) -> None:
    from moto.stepfunctions.parser.asl.component.common.parargs import Arguments

    # Task, Map and Parallel states keep Parameters (or Arguments) as parargs; a Pass state as parameters.
    parargs = getattr(state, "parargs", None) or getattr(state, "parameters", None)
    _record(parargs, inspection, "afterArguments" if isinstance(parargs, Arguments) else "afterParameters")
    _record(getattr(state, "result", None), inspection, "result")  # a Pass state's Result
    if state._is_language_query_jsonpath():  # JSONata states have none of these fields
        _record(state.input_path, inspection, "afterInputPath")
        _record(getattr(state, "result_selector", None), inspection, "afterResultSelector")
        _record(getattr(state, "result_path", None), inspection, "afterResultPath")


def _mocked_execution(state: Any, mock: dict, inspection: dict) -> Any:
    """The state's work with the service call replaced by the mock's result or error."""
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
        StateTaskService,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    def mocked(env: Any) -> None:
        if "errorOutput" in mock:
            error = mock["errorOutput"].get("error", "")
            raise FailureEventException(
                failure_event=FailureEvent(
                    env=env,
                    error_name=error_name(error),
                    event_type=HistoryEventType.TaskFailed,
                    event_details=EventDetails(
                        taskFailedEventDetails=TaskFailedEventDetails(error=error, cause=mock["errorOutput"].get("cause", ""))
                    ),
                )
            )
        env.stack.append(_json_param(mock.get("result"), "mock.result", ValidationException))

    if isinstance(state, StateTaskService):
        # A service task evaluates its Parameters/Arguments first, so they show in the inspection data.
        def eval_service_task(env: Any, **_: Any) -> None:
            mocked(env)

        state._eval_service_task = eval_service_task
        original = state._eval_execution
    else:
        # Map, Parallel and a Task naming a function ARN: the mock is the whole state's work.
        original = mocked

    def eval_execution(env: Any) -> None:
        original(env)
        inspection["result"] = _as_json(env.stack[-1])

    return eval_execution


def _decide_failures(state: Any, retry_count: int, caught: dict) -> None:
    """Replace the Retry loop of ``state``: an error a Retrier matches with attempts left raises
    _Retriable; a Catcher that matches ends the state with its output and Next (``caught``)."""
    from moto.stepfunctions.parser.asl.component.common.catch.catch_outcome import CatchOutcome
    from moto.stepfunctions.parser.asl.component.common.catch.catcher_outcome import CatcherOutcomeCaught
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEventException

    def eval_state(env: Any) -> None:
        env.states.context_object.context_object_data["State"]["RetryCount"] = retry_count
        try:
            state._evaluate_with_timeout(env)
            return
        except Exception as ex:  # as the engine does: every error becomes a failure event
            failure_event = state._from_error(env=env, ex=ex)
        error_output = state._construct_error_output_value(failure_event=failure_event)
        env.states.set_error_output(error_output)
        env.states.set_result(error_output)
        caught["error"], caught["cause"] = error_output["Error"], error_output["Cause"]
        for index, retrier in enumerate(state.retry.retriers if state.retry else []):
            env.stack.append(failure_event.error_name)
            retrier.error_equals.eval(env)
            if env.stack.pop():
                # The first Retrier that matches decides; once its attempts are spent, Catch does.
                if retry_count < retrier.max_attempts.attempts:
                    interval = retrier.interval_seconds.seconds * retrier.backoff_rate.rate**retry_count
                    raise _Retriable(index, int(min(interval, retrier.max_delay_seconds.max_delays_seconds)))
                break
        env.stack.append(failure_event)
        for index, catcher in enumerate(state.catch.catchers if state.catch else []):
            catcher.eval(env)
            if isinstance(env.stack.pop(), CatcherOutcomeCaught):
                caught["catchIndex"] = index
                env.stack.append(CatchOutcome.Caught)  # the state's own output processing is skipped
                return
        env.stack.pop()
        raise FailureEventException(failure_event=failure_event)

    state._eval_state = eval_state


def _environment(state_name: str, input_value: Any, variables: dict, context: dict, role_arn: str) -> Any:
    from moto.stepfunctions.parser.api import StateMachineType
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.evaluation_details import AWSExecutionDetails
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext
    from moto.stepfunctions.parser.asl.eval.states import ContextObjectData, ExecutionData, StateMachineData

    name = f"TestState-{uuid.uuid4()}"
    machine_arn = f"arn:aws:states:{REGION}:{ACCOUNT_ID}:stateMachine:{name}"
    now = _datetime.datetime.fromtimestamp(SimEvent.clock.now(), _datetime.timezone.utc)
    execution = ExecutionData(
        Id=f"arn:aws:states:{REGION}:{ACCOUNT_ID}:execution:{name}:{name}",
        Input=copy.deepcopy(input_value),
        Name=name,
        RoleArn=role_arn,
        StartTime=aws_timestamp(now),
        RedriveCount=0,
    )
    # AWS: "context" replaces fields of the context object the state reads ($$ / $states.context).
    execution.update(context.get("Execution", {}))
    data = ContextObjectData(Execution=execution, StateMachine=StateMachineData(Id=machine_arn, Name=name))
    for key, value in context.items():
        if key != "Execution":
            data[key] = value
    env = Environment(
        aws_execution_details=AWSExecutionDetails(account=ACCOUNT_ID, region=REGION, role_arn=role_arn),
        execution_type=StateMachineType.STANDARD,
        context=data,
        event_history_context=EventHistoryContext.of_program_start(),
        cloud_watch_logging_session=None,
        activity_store={},
    )
    env.states.reset(input_value=input_value)
    for variable, value in variables.items():
        env.variable_store.set(variable, value)
    env.next_state_name = state_name
    return env


def run_test_state(request: dict) -> dict:
    """TestState's answer to ``request`` (the API's request fields)."""
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEventException
    from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded

    definition = _json_param(request.get("definition"), "definition", InvalidDefinition)
    if not isinstance(definition, dict):
        raise InvalidDefinition("Invalid State Machine Definition: the definition is not a JSON object")
    machine, state_name = _machine_and_state(definition, request.get("stateName"))
    state = _parse_state(machine, state_name)
    input_value = _json_param(request.get("input"), "input", InvalidExecutionInput, default={})
    variables = _json_param(request.get("variables"), "variables", ValidationException, default={})
    context = _json_param(request.get("context"), "context", ValidationException, default={})
    configuration = request.get("stateConfiguration") or {}
    mock = request.get("mock")

    inspection: dict[str, Any] = {"input": _as_json(input_value)}
    _instrument(state, inspection)
    caught: dict[str, Any] = {}
    if isinstance(state, ExecutionState):
        if mock is not None:
            state._eval_execution = _mocked_execution(state, mock, inspection)
        _decide_failures(state, configuration.get("retrierRetryCount", 0), caught)
    elif mock is not None:
        raise ValidationException(f"A mock can only be given for a Task, Map or Parallel state, not '{machine['States'][state_name]['Type']}'.")

    env = _environment(state_name, input_value, variables, context, request.get("roleArn") or DEFAULT_ROLE_ARN)
    response: dict[str, Any] = {}
    try:
        state.eval(env)
    except _Retriable as retriable:
        response.update(status="RETRIABLE", nextState=state_name, error=caught["error"], cause=caught["cause"])
        inspection["errorDetails"] = {
            "retryIndex": retriable.retry_index,
            "retryBackoffIntervalSeconds": retriable.backoff_seconds,
        }
    except FailureEventException as failure:
        details = failure.get_execution_failed_event_details() or {}
        response.update(status="FAILED", error=details.get("error", ""), cause=details.get("cause", ""))
    else:
        response["output"] = _as_json(env.states.get_input())
        if "catchIndex" in caught:
            response.update(status="CAUGHT_ERROR", error=caught["error"], cause=caught["cause"])
            inspection["errorDetails"] = {"catchIndex": caught["catchIndex"]}
        else:
            response["status"] = "SUCCEEDED"
        if not isinstance(env.program_state(), ProgramEnded):  # End and Succeed states have no next
            response["nextState"] = env.next_state_name
    scope = env.variable_store
    inspection["variables"] = _as_json({**scope._outer_scope, **scope._inner_scope})
    if request.get("inspectionLevel") in ("DEBUG", "TRACE"):
        response["inspectionData"] = inspection
    return response


def install_test_state() -> None:
    """AWS: TestState runs one state, given alone or as ``stateName`` of a whole definition, with
    ``input``, ``variables``, a ``context`` object and optionally a ``mock`` of its service call's
    result or error (Map and Parallel only with a mock), and answers with its ``output``,
    ``nextState``, ``error``/``cause`` and ``status``: SUCCEEDED; FAILED; RETRIABLE (a Retrier
    matches and has attempts left, counting ``stateConfiguration.retrierRetryCount`` already made:
    ``nextState`` is the state itself, ``inspectionData.errorDetails`` the retrier's index and
    back-off); CAUGHT_ERROR (a Catcher matched: its output and Next). DEBUG and TRACE add
    ``inspectionData``: the data after each processing step (InputPath, Parameters or Arguments,
    the result, ResultSelector, ResultPath) and the variables after the state.
    https://docs.aws.amazon.com/step-functions/latest/apireference/API_TestState.html
    """
    from moto.stepfunctions import responses as sfn_responses

    fields = ("definition", "roleArn", "input", "inspectionLevel", "revealSecrets", "variables", "stateName", "mock", "context", "stateConfiguration")

    def test_state(self: Any) -> Any:
        return sfn_responses.ActionResult(run_test_state({field: self._get_param(field) for field in fields}))

    sfn_responses.StepFunctionResponse.test_state = test_state
