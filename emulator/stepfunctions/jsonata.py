"""JSONata and workflow variables in the Step Functions engine.

moto vendors LocalStack's interpreter, which parses JSONata (``"QueryLanguage": "JSONata"``,
``{% ... %}``) and variables (``Assign``, ``$name``) but ships no evaluator: its
``eval_jsonata_expression`` calls ``None``. Every JSONata expression, and every JSONPath-mode read of
a variable, failed with ``States.Runtime`` "TypeError('NoneType' object is not callable)".

The evaluator here is jsonata-python (a port of jsonata-java, itself a port of the reference
jsonata-js 2.0 with its test suite), run in-process: an expression is parsed once per process
and evaluated with ``$states``, the variables in scope and Step Functions' own functions as
bindings, instead of LocalStack's approach of pasting every value into the expression's source text.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import random
import time as _time
import uuid
from typing import Any

from jsonata import jexception, timebox
from jsonata import jsonata as jsonata_module
from jsonata.utils import Utils

from emulator.clock import SimClock
from emulator.stepfunctions.engine_clock import ClockModule

Jsonata = jsonata_module.Jsonata

# AWS: "Step Functions supports JSONata 2.0 with the following additions: $partition, $range,
# $hash, $random (with an optional seed), $uuid and $parse; $eval is not supported."
# https://docs.aws.amazon.com/step-functions/latest/dg/transforming-data.html
HASH_ALGORITHMS = {"MD5": "md5", "SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512"}


class QueryEvaluationError(Exception):
    """A Step Functions function refused its arguments (or $eval was called): the expression fails."""


def _partition(array: Any, size: Any) -> list:
    items, size = _plain(array), _plain(size)
    if not isinstance(items, list) or not isinstance(size, (int, float)) or size < 1:
        raise QueryEvaluationError("$partition expects an array and a chunk size of at least 1")
    size = int(size)
    return [items[i : i + size] for i in range(0, len(items), size)]


def _range(start: Any, end: Any, step: Any = 1) -> Any:
    if not all(isinstance(v, (int, float)) for v in (start, end, step)) or step == 0:
        raise QueryEvaluationError("$range expects numbers and a non-zero step")
    values, value = [], start
    while (step > 0 and value <= end) or (step < 0 and value >= end):
        values.append(value)
        value += step
    # As on AWS, and as a JSONata sequence of one: a range of one number is that number.
    return values[0] if len(values) == 1 else values


def _hash(value: Any, algorithm: Any) -> str:
    if algorithm not in HASH_ALGORITHMS:
        raise QueryEvaluationError(f"$hash algorithm must be one of {', '.join(HASH_ALGORITHMS)}, got {algorithm!r}")
    text = value if isinstance(value, str) else json.dumps(_plain(value), separators=(",", ":"))
    return hashlib.new(HASH_ALGORITHMS[algorithm], text.encode("utf-8")).hexdigest()


def _random(seed: Any = None) -> float:
    return random.Random(seed).random() if seed is not None else random.random()


def _parse(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError) as error:
        raise QueryEvaluationError(f"$parse could not parse {text!r}: {error}") from None


def _eval_is_not_supported(*_: Any) -> Any:
    raise QueryEvaluationError("The JSONata function $eval is not supported by Step Functions; use $parse")


STEP_FUNCTIONS_FUNCTIONS = {
    "partition": Jsonata.JLambda(_partition),
    "range": Jsonata.JLambda(_range),
    "hash": Jsonata.JLambda(_hash),
    "random": Jsonata.JLambda(_random),
    "uuid": Jsonata.JLambda(lambda: str(uuid.uuid4())),
    "parse": Jsonata.JLambda(_parse),
    "eval": Jsonata.JLambda(_eval_is_not_supported),
}

_UNDEFINED = object()


@functools.lru_cache(maxsize=4096)
def _parsed(expression: str) -> Any:
    """``expression`` parsed, once for every engine thread (an execution runs on threads of its own, so
    a cache per thread parsed it again in nearly every execution: 3% of an emulator's CPU). Evaluation
    never changes the parse tree; what it does change on the object (the ``$now()`` timestamp) it
    changes on a shallow copy per evaluation, as jsonata-python's own ``get_per_thread_instance``
    copies it. A text that does not parse raises here each time, and is not kept."""
    parsed = Jsonata(expression)
    parsed.set_output_convert_nulls(False)
    return parsed


def _plain(value: Any) -> Any:
    """A JSONata value as plain JSON data (a copy); functions are refused.

    Inside a result, None is a JSON null from the data (JSONata omits undefined members itself).
    """
    if value is Utils.NULL_VALUE:
        return None
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise QueryEvaluationError("returned an unsupported result type")


def evaluate(expression: str, bindings: dict[str, Any]) -> Any:
    """Evaluate ``expression`` with ``bindings`` (names without ``$``); undefined is ``_UNDEFINED``."""
    try:
        compiled = copy.copy(_parsed(expression))
        # jsonata-python reads $now()/$millis() from the thread's "current" expression.
        Jsonata.CURRENT.jsonata = compiled
        result = compiled.evaluate(None, {**STEP_FUNCTIONS_FUNCTIONS, **bindings})
    except jexception.JException as error:
        raise QueryEvaluationError(f"{error.error}: {error}") from None
    if result is None:
        return _UNDEFINED
    return _plain(result)


def install_jsonata_clock(clock: SimClock) -> None:
    """$now() and $millis() read the simulated clock, as every other time in an execution does."""
    timebox.time = ClockModule(_time, time=clock.now)


FIELD_PATH = "_emulator_field_path"  # the fields being evaluated, on the engine's Environment


def install_field_paths() -> None:
    """Name the field a failing expression was written in as AWS does: ``Output/a/b[0]``,
    ``Arguments/Input/pushLocation``, ``Assign/x``, ``Condition``, ``Items``, ``Seconds``...

    moto records only the class name of the last component it evaluated.
    """
    from moto.stepfunctions.parser.asl.component.common.assign.assign_decl import AssignDecl
    from moto.stepfunctions.parser.asl.component.common.assign.assign_template_binding import AssignTemplateBinding
    from moto.stepfunctions.parser.asl.component.common.jsonata.jsonata_template_binding import JSONataTemplateBinding
    from moto.stepfunctions.parser.asl.component.common.jsonata.jsonata_template_value_array import (
        JSONataTemplateValueArray,
    )
    from moto.stepfunctions.parser.asl.component.common.outputdecl import Output
    from moto.stepfunctions.parser.asl.component.common.parargs import (
        ArgumentsJSONataTemplateValueObject,
        ArgumentsStringJSONata,
    )
    from moto.stepfunctions.parser.asl.component.common.timeouts.heartbeat import HeartbeatSecondsJSONata
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import TimeoutSecondsJSONata
    from moto.stepfunctions.parser.asl.component.state.choice.comparison.comparison import ConditionStringJSONata
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.items.items import ItemsJSONata
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.max_concurrency import MaxConcurrencyJSONata
    from moto.stepfunctions.parser.asl.component.state.fail.cause_decl import Cause
    from moto.stepfunctions.parser.asl.component.state.fail.error_decl import Error
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.seconds import SecondsJSONata
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import Timestamp

    def naming(cls: type, segment: Any) -> None:
        original = cls.eval

        def eval_(self: Any, env: Any) -> None:
            path = getattr(env, FIELD_PATH, None)
            if path is None:
                path = []
                setattr(env, FIELD_PATH, path)
            name = segment(self) if callable(segment) else segment
            path.append(f"/{name}" if path else name)
            try:
                original(self, env)
            finally:
                path.pop()

        cls.eval = eval_

    for cls, name in [
        (Output, "Output"),
        (ArgumentsJSONataTemplateValueObject, "Arguments"),
        (ArgumentsStringJSONata, "Arguments"),
        (AssignDecl, "Assign"),
        (ConditionStringJSONata, "Condition"),
        (ItemsJSONata, "Items"),
        (SecondsJSONata, "Seconds"),
        (Timestamp, "Timestamp"),
        (Error, "Error"),
        (Cause, "Cause"),
        (TimeoutSecondsJSONata, "TimeoutSeconds"),
        (HeartbeatSecondsJSONata, "HeartbeatSeconds"),
        (MaxConcurrencyJSONata, "MaxConcurrency"),
    ]:
        naming(cls, name)
    naming(JSONataTemplateBinding, lambda binding: binding.identifier)
    naming(AssignTemplateBinding, lambda binding: binding.identifier)

    def array_eval_body(self: Any, env: Any) -> None:
        path = getattr(env, FIELD_PATH, [])
        values = []
        for index, value in enumerate(self.values):
            path.append(f"[{index}]")
            try:
                value.eval(env)
            finally:
                path.pop()
            values.append(env.stack.pop())
        env.stack.append(values)

    JSONataTemplateValueArray._eval_body = array_eval_body


def fail(env: Any, expression: str, problem: str) -> None:
    """Fail the running state with ``States.QueryEvaluationError``, as AWS words it."""
    field = "".join(getattr(env, FIELD_PATH, None) or [])
    where = f" specified for the field '{field}'" if field else ""
    raise evaluation_failed(env, f"The JSONata expression '{expression}'{where} {problem}")


def unexpected_type(expected: str, value: Any) -> str:
    """How AWS says an expression's result is not of the type its field takes."""
    kind = "boolean" if isinstance(value, bool) else {str: "string", list: "array", dict: "object"}.get(
        type(value), "null" if value is None else "number"
    )
    return f"returned an unexpected result type. Expected '{expected}', but was '{kind}' for value: {compact(value)}"


def compact(value: Any) -> str:
    """JSON as AWS quotes a value in a cause: no spaces."""
    return json.dumps(value, separators=(",", ":"))


def evaluation_failed(env: Any, cause: str) -> Any:
    """The exception that fails the running state with ``States.QueryEvaluationError`` and ``cause``,
    its EvaluationFailed event recorded."""
    from moto.stepfunctions.parser.api import EvaluationFailedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    error_name = StatesErrorName(typ=StatesErrorNameType.StatesQueryEvaluationError)
    failure = FailureEvent(
        env=env,
        error_name=error_name,
        event_type=HistoryEventType.EvaluationFailed,
        event_details=EventDetails(
            evaluationFailedEventDetails=EvaluationFailedEventDetails(
                error=error_name.error_name,
                cause=cause,
            )
        ),
    )
    exception = FailureEventException(failure_event=failure)
    env.event_manager.add_event(
        context=env.event_history_context,
        event_type=HistoryEventType.EvaluationFailed,
        event_details=EventDetails(evaluationFailedEventDetails=exception.get_evaluation_failed_event_details()),
    )
    return exception


def install_jsonata_evaluator() -> None:
    """Evaluate JSONata expressions and JSONPath-mode variable reads, as AWS does.

    AWS: a JSONata expression that fails, or returns nothing, fails the state with
    ``States.QueryEvaluationError``, which Retry and Catch can match; the cause names the expression
    and the field ("The JSONata expression '$states.input.absent' specified for the field
    'Output/v' returned nothing (undefined).").
    """
    from moto.stepfunctions.parser.asl.component.common.query_language import QueryLanguageMode
    from moto.stepfunctions.parser.asl.component.common.string.string_expression import (
        StringJSONata,
        StringVariableSample,
    )

    def variables_in_scope(env: Any) -> dict[str, Any]:
        # AWS: a variable assigned null reads back as null. JSONata takes a None binding for an
        # undefined one, which failed as "returned nothing (undefined)".
        store = env.variable_store
        return {name: Utils.NULL_VALUE if value is None else value for name, value in {**store._outer_scope, **store._inner_scope}.items()}

    def run(env: Any, expression: str, bindings: dict[str, Any]) -> Any:
        try:
            result = evaluate(expression, bindings)
        except QueryEvaluationError as error:
            # AWS: "... threw an error during evaluation. T1006: Attempted to invoke a non-function"
            fail(env, expression, f"threw an error during evaluation. {error}")
        if result is _UNDEFINED:
            fail(env, expression, "returned nothing (undefined).")
        return result

    def jsonata_eval_body(self: Any, env: Any) -> None:
        env.stack.append(run(env, self.expression, {**variables_in_scope(env), "states": dict(env.states._states_data)}))

    def variable_sample_eval_body(self: Any, env: Any) -> None:
        bindings = variables_in_scope(env)
        if self.query_language_mode == QueryLanguageMode.JSONata:
            bindings["states"] = dict(env.states._states_data)
        env.stack.append(run(env, self.expression, bindings))

    StringJSONata._eval_body = jsonata_eval_body
    StringVariableSample._eval_body = variable_sample_eval_body


def install_integer_fields() -> None:
    """AWS: a JSONata expression in a field that takes a whole number (Wait ``Seconds``,
    ``TimeoutSeconds``, ``HeartbeatSeconds``, ``MaxConcurrency``) that returns anything else fails
    the state with ``States.QueryEvaluationError``; moto called ``int()`` on it, so "10" waited ten
    seconds and "ten" failed as States.Runtime.
    https://docs.aws.amazon.com/step-functions/latest/dg/transforming-data.html
    """
    from moto.stepfunctions.parser.asl.component.common.timeouts.heartbeat import HeartbeatSecondsJSONata
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import TimeoutSecondsJSONata
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.max_concurrency import MaxConcurrencyJSONata
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.seconds import SecondsJSONata

    def whole_number(self: Any, env: Any) -> int:
        self.string_jsonata.eval(env=env)
        value = env.stack.pop()
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
            fail(env, self.string_jsonata.expression, unexpected_type("integer", value))
        return int(value)

    SecondsJSONata._get_wait_seconds = whole_number
    TimeoutSecondsJSONata._eval_seconds = whole_number
    HeartbeatSecondsJSONata._eval_seconds = whole_number
    MaxConcurrencyJSONata._eval_max_concurrency = whole_number


def install_jsonata_wait_timestamp() -> None:
    """AWS: a JSONata Wait ``Timestamp`` that is not an ISO-8601 extended offset date-time fails the
    state with ``States.QueryEvaluationError``, "The Timestamp field cannot be parsed as an ISO-8601
    extended offset date-time format string: <value>"; moto failed it with States.Runtime and the
    TimestampPath wording.
    https://docs.aws.amazon.com/step-functions/latest/dg/state-wait.html
    """
    from moto.stepfunctions.parser.asl.component.common.string.string_expression import StringJSONata
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import Timestamp

    original = Timestamp._create_failure_event

    def create_failure_event(self: Any, env: Any, timestamp: Any) -> Any:
        if not isinstance(self.string, StringJSONata):
            return original(self, env, timestamp)
        shown = timestamp if isinstance(timestamp, str) else json.dumps(timestamp, separators=(",", ":"))
        cause = f"The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format string: {shown}"
        return evaluation_failed(env, cause).failure_event

    Timestamp._create_failure_event = create_failure_event


def install_jsonata_map_items() -> None:
    """AWS: a JSONata Map whose ``Items`` expression returns anything but an array fails the state
    with ``States.QueryEvaluationError``, "The JSONata expression '<expression>' specified for the
    field 'Items' returned an unexpected result type. Expected 'array', but was '<type>' for value:
    <value>" (AWS's recorded executions); moto worded strings and values it had no type for otherwise,
    and recorded no EvaluationFailed event. (A Map with no ``Items`` words it otherwise: states.py.)
    https://docs.aws.amazon.com/step-functions/latest/dg/state-map-inline.html
    """
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.items.items import ItemsJSONata

    def eval_body(self: Any, env: Any) -> None:
        self.string_jsonata.eval(env=env)
        items = env.stack[-1]
        if not isinstance(items, list):
            raise evaluation_failed(env, f"The JSONata expression '{self.string_jsonata.expression}' specified for the "
                                    f"field 'Items' {unexpected_type('array', items)}")

    ItemsJSONata._eval_body = eval_body
