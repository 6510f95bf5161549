"""Mocked service integrations, in Step Functions Local's mock configuration format.

A mock configuration file names test cases per state machine; each maps Task states to mocked
responses, which give a ``Return`` (the task's result) or a ``Throw`` (its error and cause) per
invocation: ``"0"``, ``"1-2"``... An execution started on ``<state machine ARN>#<test case>`` runs
its mocked states without calling their service; every other state calls it as usual.
https://docs.aws.amazon.com/step-functions/latest/dg/sfn-local-mock-cfg-file.html
https://docs.aws.amazon.com/step-functions/latest/dg/sfn-local-test-sm-exec.html

moto vendors LocalStack's engine hooks for this but loads no file (its loader returns None), takes
no ``#`` in StartExecution, and numbers a state's invocations by its RetryCount, so a state entered
again (a poll loop, a Map iteration) replayed response "0". Step Functions Local keeps one count per
state per execution, advanced by every invocation, retries included: that count is used here.
"""

from __future__ import annotations

import copy
import importlib
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from moto.core.exceptions import AWSError

from emulator.patches._moto import error_name, modules_importing

# Step Functions Local reads the file named by this variable when it starts.
MOCK_CONFIG_VARIABLE = "SFN_MOCK_CONFIG"
_INVOCATIONS = re.compile(r"^(\d+)(?:-(\d+))?$")


class MockConfigError(ValueError):
    """The mock configuration file cannot be used; the message says where and why."""


class MockTestCaseNotFound(AWSError):
    """StartExecution named a test case the loaded mock configuration does not define."""

    TYPE = "ValidationException"
    STATUS = 400


@dataclass(frozen=True)
class MockedResponse:
    """One invocation's answer: ``result`` for a Return, ``error`` and ``cause`` for a Throw."""

    result: Any = None
    error: str | None = None
    cause: str | None = None


class MockTestCase:
    """One execution's mocks: the responses per state, and how many each state has used."""

    def __init__(self, machine: str, name: str, responses: dict[str, tuple[str, list[MockedResponse]]]) -> None:
        self.machine, self.name = machine, name
        self._responses = responses  # state name -> (mocked response name, one answer per invocation)
        self._used: dict[str, int] = {}
        self._lock = threading.Lock()  # Map iterations and Parallel branches invoke at once

    def mocks(self, state: str | None) -> bool:
        return state in self._responses

    def next_response(self, state: str) -> MockedResponse:
        """The answer to ``state``'s next invocation in this execution."""
        with self._lock:
            invocation = self._used.get(state, 0)
            self._used[state] = invocation + 1
        name, answers = self._responses[state]
        if invocation >= len(answers):
            raise MissingMockedResponse(
                f"Test case '{self.name}' mocks state '{state}' with '{name}', which has no response for "
                f"invocation {invocation} (it defines invocations 0-{len(answers) - 1}); "
                "every invocation of a mocked state, retries included, needs one."
            )
        return answers[invocation]


class MissingMockedResponse(Exception):
    """A mocked state was invoked more often than its mocked response has answers for."""


class MockConfig:
    """A validated mock configuration: test cases by state machine name."""

    def __init__(self, document: Any, source: str = "the mock configuration") -> None:
        self.source = source
        self._responses = _responses(document, source)
        self._machines = _machines(document, source, set(self._responses))
        self._aliases: dict[str, str] = {}

    @classmethod
    def load(cls, path: str | Path) -> "MockConfig":
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise MockConfigError(f"cannot read the mock configuration file {path}: {error.strerror or error}") from None
        try:
            document = json.loads(text)
        except ValueError as error:
            raise MockConfigError(f"{path} is not JSON: {error}") from None
        return cls(document, str(path))

    def naming(self, aliases: dict[str, str]) -> "MockConfig":
        """This configuration, also finding ``aliases`` (deployed name -> name used in the file).

        CloudFormation names the app's machines ``<stack>-<logical id>-<random>``; the file may use
        the names `python -m emulator run` takes instead (alert, poller...).
        """
        named = copy.copy(self)
        named._aliases = {**self._aliases, **aliases}
        return named

    def test_cases(self) -> list[str]:
        """``machine#case`` for every test case, as StartExecution's suffix selects them."""
        return [f"{machine}#{case}" for machine, cases in self._machines.items() for case in cases]

    def unknown_machines(self, deployed: Iterable[str]) -> list[str]:
        """The state machine names in the file that name none of ``deployed`` (nor an alias)."""
        known = set(deployed) | set(self._aliases.values())
        return [machine for machine in self._machines if machine not in known]

    def test_case(self, machine_name: str, case: str, state_names: set[str]) -> MockTestCase:
        """A fresh ``case`` of ``machine_name`` for one execution whose definition has ``state_names``."""
        key = machine_name if machine_name in self._machines else self._aliases.get(machine_name)
        cases = self._machines.get(key) if key else None
        if cases is None or case not in cases:
            defined = ", ".join(sorted(cases)) if cases else "none"
            shown = machine_name if key in (None, machine_name) else f"{machine_name} ({key})"
            raise MockTestCaseNotFound(
                f"Test case '{case}' is not defined for state machine '{shown}' in {self.source} "
                f"(its test cases: {defined})."
            )
        states = cases[case]
        unknown = sorted(set(states) - state_names)
        if unknown:
            raise MockTestCaseNotFound(
                f"Test case '{case}' of '{key}' in {self.source} mocks states the state machine does not "
                f"have: {', '.join(unknown)}."
            )
        return MockTestCase(key, case, {state: (name, self._responses[name]) for state, name in states.items()})


def _object(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise MockConfigError(f"{where} must be a JSON object, got {json.dumps(value)[:80]}")
    return value


def _only(value: dict, fields: tuple[str, ...], where: str) -> None:
    unknown = [key for key in value if key not in fields]
    if unknown:
        raise MockConfigError(f"{where} has unknown field(s) {', '.join(unknown)}: its fields are {' and '.join(fields)}")


def _responses(document: Any, source: str) -> dict[str, list[MockedResponse]]:
    top = _object(document, source)
    _only(top, ("StateMachines", "MockedResponses"), source)
    responses = {}
    for name, by_invocation in _object(top.get("MockedResponses", {}), f"{source}: MockedResponses").items():
        where = f"{source}: MockedResponses.{name}"
        responses[name] = _answers(_object(by_invocation, where), where)
    return responses


def _answers(by_invocation: dict, where: str) -> list[MockedResponse]:
    """One answer per invocation from ``{"0": ..., "1-2": ...}``: ranges inclusive, from 0, no gap."""
    ranges = []
    for key, answer in by_invocation.items():
        match = _INVOCATIONS.match(key.strip())
        first, last = (int(match[1]), int(match[2] or match[1])) if match else (None, None)
        if first is None or last < first:
            raise MockConfigError(f'{where}: "{key}" is not an invocation number ("0") or range ("1-2")')
        ranges.append((first, last, key, answer))
    if not ranges:
        raise MockConfigError(f"{where} defines no invocation: give at least \"0\"")
    answers: list[MockedResponse] = []
    for first, last, key, answer in sorted(ranges):
        if first != len(answers):
            raise MockConfigError(
                f'{where}: invocations must be numbered from 0 without gaps or overlaps; "{key}" starts at '
                f"{first}, the next undefined invocation is {len(answers)}"
            )
        answers.extend([_answer(answer, f'{where}."{key}"')] * (last - first + 1))
    return answers


def _answer(answer: Any, where: str) -> MockedResponse:
    answer = _object(answer, where)
    if len(answer) != 1 or next(iter(answer)) not in ("Return", "Throw"):
        raise MockConfigError(f"{where} must have exactly one field, Return or Throw; it has {', '.join(answer) or 'none'}")
    if "Return" in answer:
        return MockedResponse(result=answer["Return"])
    throw = _object(answer["Throw"], f"{where}.Throw")
    _only(throw, ("Error", "Cause"), f"{where}.Throw")
    for field in ("Error", "Cause"):
        if not isinstance(throw.get(field), str):
            raise MockConfigError(f"{where}.Throw needs {field} as a string")
    return MockedResponse(error=throw["Error"], cause=throw["Cause"])


def _machines(document: dict, source: str, responses: set[str]) -> dict[str, dict[str, dict[str, str]]]:
    machines = {}
    for machine, config in _object(document.get("StateMachines", {}), f"{source}: StateMachines").items():
        where = f"{source}: StateMachines.{machine}"
        config = _object(config, where)
        _only(config, ("TestCases",), where)
        cases = {}
        for case, states in _object(config.get("TestCases", {}), f"{where}.TestCases").items():
            case_where = f"{where}.TestCases.{case}"
            if not case or "#" in case:
                raise MockConfigError(f"{case_where}: a test case name must be non-empty and without '#'")
            for state, response in _object(states, case_where).items():
                if response not in responses:
                    known = ", ".join(sorted(responses)) or "none"
                    raise MockConfigError(
                        f'{case_where}: state "{state}" uses mocked response {json.dumps(response)}, which '
                        f"MockedResponses does not define (it defines: {known})"
                    )
            cases[case] = dict(states)
        machines[machine] = cases
    return machines


def state_names(definition: dict) -> set[str]:
    """Every state name of a definition, nested Map and Parallel states included."""
    names: set[str] = set()
    for name, state in definition.get("States", {}).items():
        names.add(name)
        for inner in (state.get("ItemProcessor"), state.get("Iterator"), *state.get("Branches", [])):
            if isinstance(inner, dict):
                names |= state_names(inner)
    return names


_starting = threading.local()  # the test case of the execution StartExecution is creating


def install_mocked_integrations(config: Callable[[], MockConfig | None]) -> None:
    """StartExecution on ``<state machine ARN>#<test case>`` runs that test case of ``config()``.

    AWS documents this for Step Functions Local: the execution's ARN and DescribeExecution are the
    usual ones (no ``#``); a mocked Task never calls its service; a mocked ``.waitForTaskToken``
    task still gets its task token and ends with the mocked response instead of waiting for one;
    an invocation the mocked response has no answer for fails the execution.
    """
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import mock_eval_utils
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.backend.execution import Execution
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original_start = StepFunctionsParserBackend.start_execution

    def start_execution(self: Any, state_machine_arn: str, *args: Any, **kwargs: Any) -> Any:
        arn, hash_, case = state_machine_arn.partition("#")
        if not hash_:
            return original_start(self, state_machine_arn, *args, **kwargs)
        loaded = config()
        if loaded is None:
            raise MockTestCaseNotFound(
                f"StartExecution names test case '{case}', but no mock configuration is loaded: set "
                f"{MOCK_CONFIG_VARIABLE} to the file before `python -m emulator serve` starts."
            )
        machine = self.describe_state_machine(arn)
        _starting.test_case = loaded.test_case(machine.name, case, state_names(json.loads(machine.definition)))
        try:
            return original_start(self, arn, *args, **kwargs)
        finally:
            _starting.test_case = None

    StepFunctionsParserBackend.start_execution = start_execution

    original_worker = Execution._get_start_execution_worker

    def get_start_execution_worker(self: Any) -> Any:
        worker = original_worker(self)
        # Set by StartExecution in this thread; a redrive reuses the worker's (see redrive.py).
        worker._mock_test_case = getattr(_starting, "test_case", None)
        return worker

    Execution._get_start_execution_worker = get_start_execution_worker

    def is_mocked_mode(self: Any) -> bool:
        return self.mock_test_case is not None and self.mock_test_case.mocks(self.next_state_name)

    def get_current_mocked_response(self: Any) -> MockedResponse:
        try:
            return self.mock_test_case.next_response(self.next_state_name)
        except MissingMockedResponse as missing:
            return MockedResponse(error="States.Runtime", cause=str(missing))

    Environment.is_mocked_mode = is_mocked_mode
    Environment.get_current_mocked_response = get_current_mocked_response

    original_eval = mock_eval_utils.eval_mocked_response

    def eval_mocked_response(env: Any, mocked_response: MockedResponse) -> None:
        if mocked_response.error is None:
            env.stack.append(copy.deepcopy(mocked_response.result))
            return
        # A Throw is the task's failure: Retry and Catch see its Error, States.* names included.
        raise FailureEventException(
            failure_event=FailureEvent(
                env=env,
                error_name=error_name(mocked_response.error),
                event_type=HistoryEventType.TaskFailed,
                event_details=EventDetails(
                    taskFailedEventDetails=TaskFailedEventDetails(error=mocked_response.error, cause=mocked_response.cause)
                ),
            )
        )

    for module_name in modules_importing(mock_eval_utils, "eval_mocked_response", original_eval):
        setattr(importlib.import_module(module_name), "eval_mocked_response", eval_mocked_response)

    # A failure the engine raised (a mocked Throw, or a States.* error) is the task's failure as it
    # is. moto's DynamoDB task (and its Glue and Batch tasks) mapped every exception that is not a
    # service's ClientError to its generic error ("DynamoDB.AmazonDynamoDBException", no cause), so
    # a mocked DynamoDB.ThrottlingException reached no Retry written for it.
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task import StateTask

    # The factory imports every kind of task, so each is a subclass by now.
    importlib.import_module("moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_factory")

    def keeping_engine_failures(from_error: Callable[..., Any]) -> Callable[..., Any]:
        def _from_error(self: Any, env: Any, ex: Exception) -> Any:
            if isinstance(ex, FailureEventException):
                return ex.failure_event
            return from_error(self, env, ex)

        return _from_error

    tasks, seen = [StateTask], set()
    while tasks:
        task = tasks.pop()
        if task in seen:
            continue
        seen.add(task)
        tasks.extend(task.__subclasses__())
        if "_from_error" in vars(task):
            task._from_error = keeping_engine_failures(vars(task)["_from_error"])
