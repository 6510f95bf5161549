"""The emulator runs the AWS Step Functions Developer Guide's examples with their documented results.

Each case is an example from a page of the guide (the JSONata and variables pages, intrinsic
functions, Choice, Map, Parallel, error handling, input and output processing, the Context object),
cites that page, and asserts the output or the error the page documents. The cases come from AWS's
documentation, not from what the emulator happens to do; where a page's example calls a Lambda
function, a Pass state produces the value the page says the function returns.

Every machine is created and every execution started at once, then each test waits for its own:
the whole table runs in a few seconds of wall time on the emulator the app is deployed into.
"""

from __future__ import annotations

import copy
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import botocore.parsers
import pytest
from botocore.exceptions import ClientError

from tests.emulator_helpers import create_function, unique

DG = "https://docs.aws.amazon.com/step-functions/latest/dg/"
API = "https://docs.aws.amazon.com/step-functions/latest/apireference/"
INTRINSICS = DG + "intrinsic-functions.html"
JSONATA = DG + "transforming-data.html"
VARIABLES = DG + "workflow-variables.html"
CONTEXT = DG + "input-output-contextobject.html"
CHOICE = DG + "state-choice.html"
MAP = DG + "state-map-inline.html"
DISTRIBUTED_MAP = DG + "state-map-distributed.html"
PARALLEL = DG + "state-parallel.html"
PASS = DG + "state-pass.html"
FAIL = DG + "state-fail.html"
WAIT = DG + "state-wait.html"
ERRORS = DG + "concepts-error-handling.html"
PARAMETERS = DG + "input-output-inputpath-params.html"
RESULT_PATH = DG + "input-output-resultpath.html"
PATHS_EXAMPLE = DG + "input-output-example.html"

UUID_V4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
# The Context object page shows "2019-03-26T20:14:13.192Z": UTC, at most milliseconds, "Z". Its note
# says trailing zeros of the fraction are dropped, so a reader must accept fewer digits.
AWS_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z")
UNSET = object()

PROBE_CODE = '''
class PriceUnavailable(Exception):
    pass

def lambda_handler(event, context):
    if event.get("fail"):
        raise PriceUnavailable("no price for " + event["product"])
    return {"current_price": 42}
'''


# -- Building small machines ----------------------------------------------------------------------
def chain(states: dict[str, dict], **top: Any) -> dict:
    """A definition whose states run in the order given: each gets Next (or End) unless it says."""
    names = list(states)
    wired = {}
    for name, following in zip(names, names[1:] + [None]):
        state = dict(states[name])
        if state["Type"] not in ("Choice", "Succeed", "Fail") and "Next" not in state and "End" not in state:
            state.update({"Next": following} if following else {"End": True})
        wired[name] = state
    return {"StartAt": names[0], "States": wired, **top}


def jsonata(states: dict[str, dict]) -> dict:
    return chain(states, QueryLanguage="JSONata")


def parameters(params: dict) -> dict:
    """A JSONPath machine of one Pass state whose output is ``params`` evaluated on the input."""
    return chain({"Select": {"Type": "Pass", "Parameters": params}})


def output(expression: Any, *, assign: dict | None = None) -> dict:
    """A JSONata machine: an optional Pass that assigns ``assign``, then a Pass whose Output is given."""
    states = {"Assign Variables": {"Type": "Pass", "Assign": assign}} if assign else {}
    return jsonata({**states, "Produce Output": {"Type": "Pass", "Output": expression}})


def inline(states: dict[str, dict], mode: str = "INLINE") -> dict:
    processor = chain(states)
    processor["ProcessorConfig"] = {"Mode": mode, **({"ExecutionType": "STANDARD"} if mode == "DISTRIBUTED" else {})}
    return processor


def end(result: Any) -> dict:
    """A state that ends the machine with ``result`` as its output (JSONPath)."""
    return {"Type": "Pass", "Result": result, "End": True}


# -- The table of documented examples ---------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    id: str
    url: str
    definition: dict
    input: Any = field(default_factory=dict)
    output: Any = UNSET
    error: str | None = None  # the execution's error
    cause: str | None = None  # a part of the execution's cause
    check: Callable[[Outcome], None] | None = None


@dataclass
class Outcome:
    status: str  # an execution status, or REFUSED when CreateStateMachine refused the definition
    output: Any
    error: str | None
    cause: str | None
    execution_arn: str | None
    execution_name: str | None
    machine_arn: str | None
    machine_name: str
    role_arn: str
    input: Any
    history: Callable[[], list[dict]]


def _states_entered(outcome: Outcome, state_type: str) -> int:
    return sum(1 for event in outcome.history() if event["type"] == f"{state_type}StateEntered")


def _check_uuid(key: str) -> Callable[[Outcome], None]:
    def check(outcome: Outcome) -> None:
        assert outcome.status == "SUCCEEDED", (outcome.error, outcome.cause)
        assert UUID_V4.fullmatch(outcome.output[key]), outcome.output

    return check


def _check_same_random(low: float, high: float) -> Callable[[Outcome], None]:
    def check(outcome: Outcome) -> None:
        assert outcome.status == "SUCCEEDED", (outcome.error, outcome.cause)
        values = outcome.output
        assert low <= values["unseeded"] < high
        assert values["seeded"] == values["sameSeed"] and low <= values["seeded"] < high

    return check


def _check_json_text(outcome: Outcome) -> None:
    # The page prints the text with escaped quotes; the text is the JSON of the object.
    assert outcome.status == "SUCCEEDED", (outcome.error, outcome.cause)
    assert isinstance(outcome.output["text"], str) and json.loads(outcome.output["text"]) == {"foo": "bar"}


def _check_math_random(outcome: Outcome) -> None:
    assert outcome.status == "SUCCEEDED", (outcome.error, outcome.cause)
    values = outcome.output
    assert isinstance(values["random"], int) and 1 <= values["random"] < 999  # start inclusive, end exclusive
    assert values["seeded"] == values["sameSeed"]


def _check_context(outcome: Outcome) -> None:
    assert outcome.status == "SUCCEEDED", (outcome.error, outcome.cause)
    execution, state, machine = outcome.output["Execution"], outcome.output["State"], outcome.output["StateMachine"]
    assert execution["Id"] == outcome.execution_arn
    assert execution["Name"] == outcome.execution_name
    assert execution["Input"] == outcome.input
    assert execution["RoleArn"] == outcome.role_arn
    assert execution["RedriveCount"] == 0
    assert "RedriveTime" not in execution  # "only available if you've redriven an execution"
    assert AWS_TIMESTAMP.fullmatch(execution["StartTime"]), execution["StartTime"]
    assert AWS_TIMESTAMP.fullmatch(state["EnteredTime"]), state["EnteredTime"]
    assert machine == {"Id": outcome.machine_arn, "Name": outcome.machine_name}
    # A Pass state cannot retry: AWS's records of its $$.State hold no RetryCount.
    assert sorted(state) == ["EnteredTime", "Name"] and state["Name"] == "Read Context"


def _check_assign_jsonpath(outcome: Outcome) -> None:
    assert outcome.status == "SUCCEEDED", (outcome.error, outcome.cause)
    values = outcome.output
    assert values["details"] == {"status": "SUCCESS", "lineItems": [{"product": "lamp"}, {"product": "desk"}]}
    assert (values["resultCode"], values["message"]) == (200, "Hello Akua")
    assert AWS_TIMESTAMP.fullmatch(values["startTime"]), values["startTime"]


def _check_refused_or_failed(outcome: Outcome) -> None:
    # The page says the definition cannot do this, not whether CreateStateMachine refuses it or the
    # execution fails: either, but never an execution that succeeds.
    assert outcome.status in ("REFUSED", "FAILED"), (outcome.status, outcome.output)


def _check_undefined_variable(outcome: Outcome) -> None:
    # Refused at creation, or failed as every undefined JSONata result fails (transforming-data.html).
    assert (outcome.status, outcome.error) in (("REFUSED", "InvalidDefinition"), ("FAILED", "States.QueryEvaluationError")), (
        outcome.status, outcome.error, outcome.output)


def _check_child_cannot_read_outer_variable(outcome: Outcome) -> None:
    # Refused at creation, or the child fails (an undefined JSONata result) and so does the Map, as
    # any failed child beyond ToleratedFailureCount/Percentage (0 by default) fails a Distributed Map
    # (state-map-distributed.html).
    assert (outcome.status, outcome.error) in (
        ("REFUSED", "InvalidDefinition"),
        ("FAILED", "States.ExceedToleratedFailureThreshold"),
    ), (outcome.status, outcome.error, outcome.output)


def _check_retried_twice(outcome: Outcome) -> None:
    assert outcome.status == "SUCCEEDED", (outcome.error, outcome.cause)
    assert outcome.output == {"foo": "bar", "error": {"Error": "ErrorA", "Cause": "Kaiju attack"}}
    assert _states_entered(outcome, "Fail") == 3  # the first attempt and MaxAttempts (2) retries


def _check_query_error_caught(outcome: Outcome) -> None:
    assert outcome.status == "SUCCEEDED", (outcome.error, outcome.cause)
    error = outcome.output["error"]
    assert error["Error"] == "States.QueryEvaluationError" and error["Cause"], error
    assert outcome.output["order"] == 7


PRODUCTS = [
    {"calories": 140, "flavour": "Cola", "name": "Product-1"},
    {"calories": 0, "flavour": "Cola", "name": "Product-2"},
    {"calories": 160, "flavour": "Orange", "name": "Product-3"},
    {"calories": 100, "flavour": "Orange", "name": "Product-4"},
    {"calories": 0, "flavour": "Lime", "name": "Product-5"},
]
NINE = [1, 2, 3, 4, 5, 6, 7, 8, 9]
SHIPMENT = {
    "ship-date": "2016-03-14T01:59:00Z",
    "detail": {
        "delivery-partner": "UQS",
        "shipped": [
            {"prod": "R31", "dest-code": 9511, "quantity": 1344},
            {"prod": "S39", "dest-code": 9511, "quantity": 40},
            {"prod": "R31", "dest-code": 9833, "quantity": 12},
            {"prod": "R40", "dest-code": 9860, "quantity": 887},
            {"prod": "R40", "dest-code": 9511, "quantity": 1220},
        ],
    },
}
PATHS_INPUT = {"comment": "An input comment.", "data": {"val1": 23, "val2": 17}, "extra": "foo",
               "lambda": {"who": "AWS Step Functions"}}
HELLO = "Hello, AWS Step Functions!"  # what the pages' HelloFunction returns for that input
RESULT_PATH_INPUT = {"comment": "This is a test of the input and output of a Task state.",
                     "details": "Default example", "who": "AWS Step Functions"}

CHOICE_STATE_X = chain({
    "ChoiceStateX": {
        "Type": "Choice",
        "Choices": [
            {"Not": {"Variable": "$.type", "StringEquals": "Private"}, "Next": "Public"},
            {"Variable": "$.value", "NumericEquals": 0, "Next": "ValueIsZero"},
            {"And": [{"Variable": "$.value", "NumericGreaterThanEquals": 20},
                     {"Variable": "$.value", "NumericLessThan": 30}], "Next": "ValueInTwenties"},
        ],
        "Default": "DefaultState",
    },
    "Public": end("Public"),
    "ValueIsZero": end("ValueIsZero"),
    "ValueInTwenties": end("ValueInTwenties"),
    "DefaultState": {"Type": "Fail", "Cause": "No Matches!"},
})


def _choice(rule: dict, **top: Any) -> dict:
    """One JSONPath Choice rule: "Matched" when it holds, "Default" when not."""
    return chain({
        "Check": {"Type": "Choice", "Choices": [{**rule, "Next": "Matched"}], "Default": "Default", **top},
        "Matched": end("Matched"),
        "Default": end("Default"),
    })


SCORE_CHOICE = jsonata({
    "Set Score": {"Type": "Pass", "Assign": {"score": "{% $states.input.score %}", "outputValue": "unset"}},
    "Rate Score": {
        "Type": "Choice",
        "Assign": {"outputValue": "{% 'default path taken' %}"},
        "Choices": [
            {"Condition": "{% $score > 90 %}", "Assign": {"outputValue": "{% 'high score' %}"}, "Next": "HighScoreState"},
            {"Condition": "{% $score > 50 %}", "Next": "MediumScoreState"},
        ],
        "Default": "LowScoreState",
    },
    "HighScoreState": {"Type": "Pass", "Output": {"state": "HighScoreState", "outputValue": "{% $outputValue %}"}, "End": True},
    "MediumScoreState": {"Type": "Pass", "Output": {"state": "MediumScoreState", "outputValue": "{% $outputValue %}"}, "End": True},
    "LowScoreState": {"Type": "Pass", "Output": {"state": "LowScoreState", "outputValue": "{% $outputValue %}"}, "End": True},
})

DISCOUNT_CHOICE = jsonata({
    "Pick Discount": {
        "Type": "Choice",
        "Choices": [
            {"Condition": "{% $states.input.category = 'premium' %}", "Next": "PremiumPath", "Assign": {"discount": 20}},
            {"Condition": "{% $states.input.category = 'standard' %}", "Next": "StandardPath", "Assign": {"discount": 5}},
        ],
        "Default": "DefaultPath",
        "Assign": {"discount": 0},
    },
    "PremiumPath": {"Type": "Pass", "Output": {"path": "PremiumPath", "discount": "{% $discount %}"}, "End": True},
    "StandardPath": {"Type": "Pass", "Output": {"path": "StandardPath", "discount": "{% $discount %}"}, "End": True},
    "DefaultPath": {"Type": "Pass", "Output": {"path": "DefaultPath", "discount": "{% $discount %}"}, "End": True},
})

# A JSONPath loop driven by variables: the rule compares "$i" with "$n" and counts with MathAdd.
COUNT_TO_N = chain({
    "Start Counting": {"Type": "Pass", "Assign": {"i": 0, "n.$": "$.n"}},
    "More To Count?": {
        "Type": "Choice",
        "Choices": [{"Variable": "$i", "NumericLessThanPath": "$n", "Next": "Count One"}],
        "Default": "Report Count",
    },
    "Count One": {"Type": "Pass", "Assign": {"i.$": "States.MathAdd($i, 1)"}, "Next": "More To Count?"},
    "Report Count": {"Type": "Pass", "Parameters": {"i.$": "$i", "n.$": "$n"}, "End": True},
})

FAILING_BRANCH = {"Branches": [chain({"Fail Branch": {"Type": "Fail", "Error": "ErrorA", "Cause": "Kaiju attack"}})]}
UNDEFINED_OUTPUT = {"Type": "Pass", "QueryLanguage": "JSONata", "Output": "{% $states.input.thisFieldDoesNotExist %}"}

CASES: list[Case] = [
    # -- Intrinsic functions (JSONPath) ------------------------------------------------------------
    Case("intrinsic-array", INTRINSICS, parameters({"BuildId.$": "States.Array($.Id)"}),
         {"Id": 123456}, {"BuildId": [123456]}),
    Case("intrinsic-array-partition", INTRINSICS, parameters({"inputArray.$": "States.ArrayPartition($.inputArray,4)"}),
         {"inputArray": NINE}, {"inputArray": [[1, 2, 3, 4], [5, 6, 7, 8], [9]]}),
    Case("intrinsic-array-contains", INTRINSICS, parameters({"contains.$": "States.ArrayContains($.inputArray, $.lookingFor)"}),
         {"inputArray": NINE, "lookingFor": 5}, {"contains": True}),
    Case("intrinsic-array-range", INTRINSICS, parameters({"array.$": "States.ArrayRange(1, 9, 2)"}),
         {}, {"array": [1, 3, 5, 7, 9]}),
    Case("intrinsic-array-get-item", INTRINSICS, parameters({"item.$": "States.ArrayGetItem($.inputArray, $.index)"}),
         {"inputArray": NINE, "index": 5}, {"item": 6}),
    Case("intrinsic-array-length", INTRINSICS, parameters({"length.$": "States.ArrayLength($.inputArray)"}),
         {"inputArray": NINE}, {"length": 9}),
    Case("intrinsic-array-unique", INTRINSICS, parameters({"array.$": "States.ArrayUnique($.inputArray)"}),
         {"inputArray": [1, 2, 3, 3, 3, 3, 3, 3, 4]}, {"array": [1, 2, 3, 4]}),
    Case("intrinsic-base64-encode", INTRINSICS, parameters({"base64.$": "States.Base64Encode($.input)"}),
         {"input": "Data to encode"}, {"base64": "RGF0YSB0byBlbmNvZGU="}),
    # The page prints "Decoded data", a slip: its own input is the encoding of "Data to encode".
    Case("intrinsic-base64-decode", INTRINSICS, parameters({"data.$": "States.Base64Decode($.base64)"}),
         {"base64": "RGF0YSB0byBlbmNvZGU="}, {"data": "Data to encode"}),
    # The page prints 39 hex digits (one dropped); this is the SHA-1 of "input data".
    Case("intrinsic-hash", INTRINSICS, parameters({"output.$": "States.Hash($.Data, $.Algorithm)"}),
         {"Data": "input data", "Algorithm": "SHA-1"}, {"output": "aaff4a450a104cd177d28d18d74485e8cae074b7"}),
    Case("intrinsic-json-merge-shallow", INTRINSICS, parameters({"output.$": "States.JsonMerge($.json1, $.json2, false)"}),
         {"json1": {"a": {"a1": 1, "a2": 2}, "b": 2}, "json2": {"a": {"a3": 1, "a4": 2}, "c": 3}},
         {"output": {"a": {"a3": 1, "a4": 2}, "b": 2, "c": 3}}),
    Case("intrinsic-string-to-json", INTRINSICS, parameters({"parsed.$": "States.StringToJson($.escapedJsonString)"}),
         {"escapedJsonString": '{"foo": "bar"}'}, {"parsed": {"foo": "bar"}}),
    Case("intrinsic-json-to-string", INTRINSICS, parameters({"text.$": "States.JsonToString($.unescapedJson)"}),
         {"unescapedJson": {"foo": "bar"}}, check=_check_json_text),
    Case("intrinsic-math-random", INTRINSICS,
         parameters({"random.$": "States.MathRandom($.start, $.end)",
                     "seeded.$": "States.MathRandom($.start, $.end, 7)", "sameSeed.$": "States.MathRandom($.start, $.end, 7)"}),
         {"start": 1, "end": 999}, check=_check_math_random),
    Case("intrinsic-math-add", INTRINSICS, parameters({"value1.$": "States.MathAdd($.value1, $.step)"}),
         {"value1": 111, "step": -1}, {"value1": 110}),
    Case("intrinsic-string-split", INTRINSICS, parameters({"array.$": "States.StringSplit($.inputString, $.splitter)"}),
         {"inputString": "1,2,3,4,5", "splitter": ","}, {"array": ["1", "2", "3", "4", "5"]}),
    Case("intrinsic-string-split-several-delimiters", INTRINSICS,
         parameters({"myStringArray.$": "States.StringSplit($.inputString, $.splitter)"}),
         {"inputString": "This.is+a,test=string", "splitter": ".+,="},
         {"myStringArray": ["This", "is", "a", "test", "string"]}),
    Case("intrinsic-uuid", INTRINSICS, parameters({"uuid.$": "States.UUID()"}), check=_check_uuid("uuid")),
    Case("intrinsic-format-literal-template", INTRINSICS,
         parameters({"greeting.$": "States.Format('Hello, my name is {}.', $.name)"}),
         {"name": "Arnav", "template": "Hello, my name is {}."}, {"greeting": "Hello, my name is Arnav."}),
    Case("intrinsic-format-template-from-input", INTRINSICS, parameters({"greeting.$": "States.Format($.template, $.name)"}),
         {"name": "Arnav", "template": "Hello, my name is {}."}, {"greeting": "Hello, my name is Arnav."}),
    # -- JSONata ----------------------------------------------------------------------------------
    Case("jsonata-input-and-output", JSONATA,
         jsonata({"Basic Input and Output": {"QueryLanguage": "JSONata", "Type": "Succeed", "Output": {
             "lastName": "{% 'Last=>' & $states.input.customer.lastName %}",
             "orderValue": "{% $states.input.order.total %}"}}}),
         {"customer": {"firstName": "Martha", "lastName": "Rivera"}, "order": {"items": 7, "total": 27.91}},
         {"lastName": "Last=>Rivera", "orderValue": 27.91}),
    Case("jsonata-filtering", JSONATA,
         jsonata({"FilterDietProducts": {"Type": "Pass", "Output": {"dietProducts": "{% $states.input.products[calories=0] %}"}}}),
         {"products": PRODUCTS}, {"dietProducts": [PRODUCTS[1], PRODUCTS[4]]}),
    Case("jsonata-converted-from-jsonpath", JSONATA,
         output({"static": "Hello", "title": "{% $states.input.title %}", "name": "{% $customerName %}",
                 "not-evaluated": "$customerName"}, assign={"customerName": "María"}),
         {"title": "Doctor"}, {"static": "Hello", "title": "Doctor", "name": "María", "not-evaluated": "$customerName"}),
    Case("jsonpath-original-of-the-conversion", JSONATA,
         chain({"Assign Variables": {"Type": "Pass", "Assign": {"customerName": "María"}},
                "Select": {"Type": "Pass", "Parameters": {"static": "Hello", "title.$": "$.title",
                                                          "name.$": "$customerName", "not-evaluated": "$customerName"}}}),
         {"title": "Doctor"}, {"static": "Hello", "title": "Doctor", "name": "María", "not-evaluated": "$customerName"}),
    Case("jsonata-state-level-query-language", JSONATA,
         chain({"Select": {"Type": "Pass", "Parameters": {"total.$": "$.order.total"}},
                "Double": {"Type": "Pass", "QueryLanguage": "JSONata", "Output": "{% $states.input.total * 2 %}"}}),
         {"order": {"total": 21}}, 42),
    Case("jsonata-partition", JSONATA, output("{% $arrayPartition %}",
                                              assign={"arrayPartition": "{% $partition([1,2,3,4], $states.input.chunkSize) %}"}),
         {"chunkSize": 3}, [[1, 2, 3], [4]]),
    Case("jsonata-range", JSONATA, output("{% $arrayRange %}", assign={"arrayRange": "{% $range(0, 10, 2) %}"}),
         {}, [0, 2, 4, 6, 8, 10]),
    Case("jsonata-hash", JSONATA,
         jsonata({"Pick Algorithm": {"Type": "Pass", "Assign": {"hashAlgorithmName": "SHA-1"}},
                  "Hash": {"Type": "Pass", "Assign": {"myHash": "{% $hash($states.input.content, $hashAlgorithmName) %}"}},
                  "Report": {"Type": "Pass", "Output": "{% $myHash %}"}}),
         {"content": "input data"}, "aaff4a450a104cd177d28d18d74485e8cae074b7"),
    Case("jsonata-random", JSONATA,
         output({"unseeded": "{% $random() %}", "seeded": "{% $random($states.input.seed) %}",
                 "sameSeed": "{% $random($states.input.seed) %}"}),
         {"seed": 42}, check=_check_same_random(0, 1)),
    Case("jsonata-uuid", JSONATA, output({"uniqueId": "{% $uuid() %}"}), check=_check_uuid("uniqueId")),
    Case("jsonata-parse", JSONATA, output({"deserializedPayload": "{% $parse($states.input.json_string) %}"}),
         {"json_string": '{"foo": "bar", "n": [1, 2]}'}, {"deserializedPayload": {"foo": "bar", "n": [1, 2]}}),
    Case("jsonata-map-items-with-expression", JSONATA,
         jsonata({"Assign Two": {"Type": "Pass", "Assign": {"two": 2}},
                  "Each Item": {"Type": "Map", "Items": [1, "{% $two %}", 3],
                                "ItemProcessor": inline({"Echo": {"Type": "Pass"}})}}),
         {}, [1, 2, 3]),
    Case("jsonata-undefined-result-is-query-evaluation-error", JSONATA,
         output("{% $data.thisFieldDoesNotExist %}", assign={"data": {"present": 1}}),
         error="States.QueryEvaluationError"),
    Case("jsonata-type-error-is-query-evaluation-error", JSONATA,
         output("{% $x + $y %}", assign={"x": "three", "y": 4}), error="States.QueryEvaluationError"),
    Case("jsonata-field-type-incompatibility-is-query-evaluation-error", JSONATA,
         jsonata({"Wait": {"Type": "Wait", "Seconds": "{% $states.input.timeout %}"}}),
         {"timeout": "ten"}, error="States.QueryEvaluationError"),
    Case("jsonata-query-evaluation-error-caught-by-parallel", JSONATA,
         jsonata({"Try": {"Type": "Parallel", "Branches": [jsonata({"Broken": UNDEFINED_OUTPUT})],
                          "Catch": [{"ErrorEquals": ["States.QueryEvaluationError"], "Next": "Recover",
                                     "Output": "{% $states.errorOutput.Error %}"}]},
                  "Recover": {"Type": "Pass", "End": True}}),
         {}, "States.QueryEvaluationError"),
    Case("jsonata-query-evaluation-error-caught-by-map", JSONATA,
         jsonata({"Each Item": {"Type": "Map", "Items": "{% $states.input.items %}",
                                "ItemProcessor": inline({"Broken": UNDEFINED_OUTPUT}),
                                "Catch": [{"ErrorEquals": ["States.QueryEvaluationError"], "Next": "Recover",
                                           "Output": {"error": "{% $states.errorOutput.Error %}"}}]},
                  "Recover": {"Type": "Pass", "End": True}}),
         {"items": [1, 2]}, {"error": "States.QueryEvaluationError"}),
    # -- Workflow variables -----------------------------------------------------------------------
    Case("variables-assign-evaluates-every-expression-first", VARIABLES,
         jsonata({"Starting Values": {"Type": "Pass", "Assign": {"x": 3, "a": 6}},
                  "Assign": {"Type": "Pass", "Assign": {"x": "{% $a %}", "nextX": "{% $x %}"}},
                  "Ending Values": {"Type": "Pass", "Output": {"x": "{% $x %}", "nextX": "{% $nextX %}"}}}),
         {}, {"x": 6, "nextX": 3}),
    # "If $x had not been previously assigned, the example would fail because $x would be undefined."
    Case("variables-assign-reading-an-unassigned-variable-fails", VARIABLES,
         jsonata({"Starting Values": {"Type": "Pass", "Assign": {"a": 6}},
                  "Assign": {"Type": "Pass", "Assign": {"x": "{% $a %}", "nextX": "{% $x %}"}}}),
         check=_check_undefined_variable),
    Case("variables-store-inputs", VARIABLES,
         jsonata({"Store inputs": {"Type": "Pass", "Assign": {"desiredPrice": "{% $states.input.desired_price %}",
                                                              "maximumWait": "{% $states.input.max_days %}"}},
                  "Read Them": {"Type": "Pass", "Output": ["{% $desiredPrice %}", "{% $maximumWait %}"]}}),
         {"desired_price": 19.99, "max_days": 5}, [19.99, 5]),
    Case("variables-assign-does-not-change-output", VARIABLES,
         jsonata({"Assign Only": {"Type": "Pass", "Assign": {"doubled": "{% $states.input.n * 2 %}"}}}),
         {"n": 4}, {"n": 4}),
    Case("variables-jsonpath-assign-example", VARIABLES,
         chain({"Meet Customer": {"Type": "Pass", "Assign": {"customer": {"name": "Akua"}}},
                "Assign": {"Type": "Pass", "Assign": {
                    "details": {"status": "SUCCESS", "lineItems.$": "$.order.items"},
                    "resultCode.$": "$.result.code",
                    "message.$": "States.Format('Hello {}', $customer.name)",
                    "startTime.$": "$$.Execution.StartTime"}},
                "Report": {"Type": "Pass", "Parameters": {"details.$": "$details", "resultCode.$": "$resultCode",
                                                          "message.$": "$message", "startTime.$": "$startTime"}}}),
         {"order": {"items": [{"product": "lamp"}, {"product": "desk"}]}, "result": {"code": 200}},
         check=_check_assign_jsonpath),
    Case("variables-jsonpath-assign-recursive-path", VARIABLES,
         chain({"Assign": {"Type": "Pass", "Assign": {"products.$": "$.order..product", "orderTotal.$": "$.order.total"}},
                "Report": {"Type": "Pass", "Parameters": {"products.$": "$products", "orderTotal.$": "$orderTotal"}}}),
         {"order": {"items": [{"product": "lamp"}, {"product": "desk"}], "total": 80}},
         {"products": ["lamp", "desk"], "orderTotal": 80}),
    Case("variables-jsonpath-pass-assign-reads-its-result", VARIABLES,
         chain({"Produce": {"Type": "Pass", "Result": {"code": 7}, "ResultPath": "$.produced", "Assign": {"code.$": "$.code"}},
                "Report": {"Type": "Pass", "Parameters": {"code.$": "$code"}}}),
         {"code": 1}, {"code": 7}),
    Case("variables-jsonpath-wait-assign-reads-effective-input", VARIABLES,
         chain({"Wait A Second": {"Type": "Wait", "Seconds": 1, "InputPath": "$.inner", "Assign": {"seen.$": "$.v"}},
                "Report": {"Type": "Pass", "Parameters": {"seen.$": "$seen"}}}),
         {"inner": {"v": "inner value"}, "v": "outer value"}, {"seen": "inner value"}),
    Case("variables-jsonata-wait-seconds-from-variable", JSONATA,
         jsonata({"Set Timeout": {"Type": "Pass", "Assign": {"timeout": 30}},
                  "Wait": {"Type": "Wait", "Seconds": "{% $timeout %}", "Assign": {"waited": "{% $timeout %}"}},
                  "Report": {"Type": "Pass", "Output": "{% $waited %}"}}),
         {}, 30),
    Case("variables-map-iterations-read-outer-variables", VARIABLES,
         jsonata({"Set Prefix": {"Type": "Pass", "Assign": {"prefix": "item-"}},
                  "Each Item": {"Type": "Map", "Items": "{% $states.input.items %}",
                                "ItemProcessor": inline({"Name It": {"Type": "Pass",
                                                                     "Output": "{% $prefix & $string($states.input) %}"}})}}),
         {"items": [1, 2]}, ["item-1", "item-2"]),
    Case("variables-parallel-branches-read-outer-variables", VARIABLES,
         jsonata({"Set Base": {"Type": "Pass", "Assign": {"base": 10}},
                  "Both": {"Type": "Parallel", "Branches": [
                      jsonata({"Add": {"Type": "Pass", "Output": "{% $base + 1 %}"}}),
                      jsonata({"Subtract": {"Type": "Pass", "Output": "{% $base - 1 %}"}})]}}),
         {}, [11, 9]),
    Case("variables-map-assign-from-result", VARIABLES,
         jsonata({"Each Item": {"Type": "Map", "Items": [1, 2], "ItemProcessor": inline({"Echo": {"Type": "Pass"}}),
                                "Assign": {"results": "{% $states.result %}"}, "Output": "done"},
                  "Report": {"Type": "Pass", "Output": "{% $results %}"}}),
         {}, [1, 2]),
    Case("variables-catch-assigns-in-outer-scope", VARIABLES,
         jsonata({"Try": {"Type": "Parallel", **FAILING_BRANCH,
                          "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Report",
                                     "Assign": {"failure": "{% $states.errorOutput %}"}}]},
                  "Report": {"Type": "Pass", "Output": "{% $failure %}"}}),
         {}, {"Error": "ErrorA", "Cause": "Kaiju attack"}),
    Case("variables-inner-scope-cannot-assign-an-outer-name", VARIABLES,
         jsonata({"Set Total": {"Type": "Pass", "Assign": {"total": 0}},
                  "Each Item": {"Type": "Map", "Items": [1, 2],
                                "ItemProcessor": inline({"Add": {"Type": "Pass", "Assign": {"total": "{% $total + 1 %}"}}})}}),
         check=_check_refused_or_failed),
    Case("variables-distributed-map-gets-outer-values-through-item-selector", DISTRIBUTED_MAP,
         jsonata({"Set Secret": {"Type": "Pass", "Assign": {"secret": "s3cr3t"}},
                  "Each Item": {"Type": "Map", "Items": [1, 2],
                                "ItemSelector": {"secret": "{% $secret %}", "item": "{% $states.context.Map.Item.Value %}"},
                                "ItemProcessor": inline({"Echo": {"Type": "Pass"}}, mode="DISTRIBUTED")}}),
         {}, [{"secret": "s3cr3t", "item": 1}, {"secret": "s3cr3t", "item": 2}]),
    Case("variables-distributed-map-child-sees-no-outer-variables", VARIABLES,
         jsonata({"Set Secret": {"Type": "Pass", "Assign": {"secret": "s3cr3t"}},
                  "Each Item": {"Type": "Map", "Items": [1],
                                "ItemProcessor": inline({"Read": {"Type": "Pass", "Output": "{% $secret %}"}},
                                                        mode="DISTRIBUTED")}}),
         check=_check_child_cannot_read_outer_variable),
    # -- Context object -----------------------------------------------------------------------------
    Case("context-object-fields-jsonpath", CONTEXT,
         chain({"Read Context": {"Type": "Pass", "Parameters": {
             "Execution.$": "$$.Execution", "State.$": "$$.State", "StateMachine.$": "$$.StateMachine"}}}),
         {"key": "value"}, check=_check_context),
    Case("context-object-fields-jsonata", CONTEXT,
         jsonata({"Read Context": {"Type": "Pass", "Output": {
             "Execution": "{% $states.context.Execution %}", "State": "{% $states.context.State %}",
             "StateMachine": "{% $states.context.StateMachine %}"}}}),
         {"key": "value"}, check=_check_context),
    Case("context-object-map-item-index-and-value", CONTEXT,
         chain({"ExampleMapState": {"Type": "Map", "ItemSelector": {"ContextIndex.$": "$$.Map.Item.Index",
                                                                     "ContextValue.$": "$$.Map.Item.Value"},
                                    "ItemProcessor": inline({"TestPass": {"Type": "Pass"}})}}),
         [{"who": "bob"}, {"who": "meg"}, {"who": "joe"}],
         [{"ContextIndex": 0, "ContextValue": {"who": "bob"}}, {"ContextIndex": 1, "ContextValue": {"who": "meg"}},
          {"ContextIndex": 2, "ContextValue": {"who": "joe"}}]),
    Case("context-object-map-item-jsonata", CONTEXT,
         jsonata({"ExampleMapState": {"Type": "Map", "ItemSelector": {
             "ContextIndex": "{% $states.context.Map.Item.Index %}", "ContextValue": "{% $states.context.Map.Item.Value %}",
             "ContextSource": "{% $states.context.Map.Item.Source %}"},
             "ItemProcessor": inline({"TestPass": {"Type": "Pass"}})}}),
         [{"who": "bob"}, {"who": "meg"}],
         [{"ContextIndex": 0, "ContextValue": {"who": "bob"}, "ContextSource": "STATE_DATA"},
          {"ContextIndex": 1, "ContextValue": {"who": "meg"}, "ContextSource": "STATE_DATA"}]),
    # -- Choice -----------------------------------------------------------------------------------
    Case("choice-value-in-twenties", CHOICE, CHOICE_STATE_X, {"type": "Private", "value": 22}, "ValueInTwenties"),
    Case("choice-not-private-is-public", CHOICE, CHOICE_STATE_X, {"type": "Public", "value": 22}, "Public"),
    Case("choice-value-is-zero", CHOICE, CHOICE_STATE_X, {"type": "Private", "value": 0}, "ValueIsZero"),
    Case("choice-no-match-takes-default", CHOICE, CHOICE_STATE_X, {"type": "Private", "value": 35}, cause="No Matches!"),
    Case("choice-no-match-without-default-fails", ERRORS,
         chain({"Check": {"Type": "Choice", "Choices": [{"Variable": "$.foo", "NumericEquals": 1, "Next": "Matched"}]},
                "Matched": end("Matched")}),
         {"foo": 2}, error="States.NoChoiceMatched"),
    Case("choice-is-present-guards-string-equals", CHOICE,
         _choice({"And": [{"Variable": "$.keyThatMightNotExist", "IsPresent": True},
                          {"Variable": "$.keyThatMightNotExist", "StringEquals": "foo"}]}),
         {}, "Default"),
    Case("choice-is-null", CHOICE, _choice({"Variable": "$.possiblyNullValue", "IsNull": True}),
         {"possiblyNullValue": None}, "Matched"),
    Case("choice-string-matches-wildcard", CHOICE, _choice({"Variable": "$.foo", "StringMatches": "log-*.txt"}),
         {"foo": "log-2016-03-14.txt"}, "Matched"),
    Case("choice-timestamp-equals", CHOICE, _choice({"Variable": "$.foo", "TimestampEquals": "2001-01-01T12:00:00Z"}),
         {"foo": "2001-01-01T12:00:00Z"}, "Matched"),
    Case("choice-string-equals-path", CHOICE, _choice({"Variable": "$.foo", "StringEqualsPath": "$.bar"}),
         {"foo": "same", "bar": "same"}, "Matched"),
    Case("choice-numeric-greater-than-path", CHOICE, _choice({"Variable": "$.rating", "NumericGreaterThanPath": "$.auditThreshold"}),
         {"rating": 53, "auditThreshold": 60}, "Default"),
    Case("choice-jsonata-condition-on-variable", CHOICE,
         jsonata({"Set Type": {"Type": "Pass", "Assign": {"type": "{% $states.input.type %}"}},
                  "Check": {"Type": "Choice", "Choices": [{"Condition": "{% $type = 'local' %}", "Next": "StringMatchState"}],
                            "Default": "Other"},
                  "StringMatchState": {"Type": "Pass", "Output": "StringMatchState", "End": True},
                  "Other": {"Type": "Pass", "Output": "Other", "End": True}}),
         {"type": "local"}, "StringMatchState"),
    Case("choice-jsonata-not-null-and-42", CHOICE,
         jsonata({"Set Value": {"Type": "Pass", "Assign": {"possiblyNullValue": "{% $states.input.value %}"}},
                  "Check": {"Type": "Choice", "Choices": [{
                      "Condition": "{% $possiblyNullValue != null and $possiblyNullValue = 42 %}", "Next": "NotNullAnd42"}],
                      "Default": "Other"},
                  "NotNullAnd42": {"Type": "Pass", "Output": "NotNullAnd42", "End": True},
                  "Other": {"Type": "Pass", "Output": "Other", "End": True}}),
         {"value": None}, "Other"),
    Case("choice-rule-assign-premium", CHOICE, DISCOUNT_CHOICE, {"category": "premium"},
         {"path": "PremiumPath", "discount": 20}),
    Case("choice-rule-assign-standard", CHOICE, DISCOUNT_CHOICE, {"category": "standard"},
         {"path": "StandardPath", "discount": 5}),
    Case("choice-state-assign-on-default", CHOICE, DISCOUNT_CHOICE, {"category": "basic"},
         {"path": "DefaultPath", "discount": 0}),
    Case("choice-assign-high-score", CHOICE, SCORE_CHOICE, {"score": 95},
         {"state": "HighScoreState", "outputValue": "high score"}),
    # "If a Choice Rule matches, Step Functions evaluates only that rule's Assign field and does not
    # evaluate the top-level Assign field" (section "Using Assign with Choice states").
    Case("choice-state-assign-skipped-when-a-rule-matches", CHOICE, SCORE_CHOICE, {"score": 60},
         {"state": "MediumScoreState", "outputValue": "unset"}),
    Case("choice-state-assign-when-no-rule-matches", CHOICE, SCORE_CHOICE, {"score": 10},
         {"state": "LowScoreState", "outputValue": "default path taken"}),
    Case("choice-jsonpath-rule-assign", VARIABLES,
         chain({"Check": {"Type": "Choice", "Choices": [
             {"Variable": "$.n", "NumericGreaterThan": 0, "Assign": {"sign": "positive"}, "Next": "Report"}],
             "Default": "Report"},
             "Report": {"Type": "Pass", "Parameters": {"sign.$": "$sign"}, "End": True}}),
         {"n": 5}, {"sign": "positive"}),
    Case("choice-variable-compared-with-path-variable", CHOICE, COUNT_TO_N, {"n": 3}, {"i": 3, "n": 3}),
    # -- Map --------------------------------------------------------------------------------------
    Case("map-item-selector-and-result-path", MAP,
         chain({"Validate-All": {"Type": "Map", "InputPath": "$.detail", "ItemsPath": "$.shipped", "MaxConcurrency": 0,
                                 "ItemSelector": {"parcel.$": "$$.Map.Item.Value", "courier.$": "$.delivery-partner"},
                                 "ItemProcessor": inline({"Validate": {"Type": "Pass"}}),
                                 "ResultPath": "$.detail.shipped"}}),
         SHIPMENT,
         {"ship-date": "2016-03-14T01:59:00Z",
          "detail": {"delivery-partner": "UQS",
                     "shipped": [{"parcel": item, "courier": "UQS"} for item in SHIPMENT["detail"]["shipped"]]}}),
    Case("map-max-concurrency-one-keeps-order", MAP,
         chain({"One At A Time": {"Type": "Map", "MaxConcurrency": 1, "ItemProcessor": inline({"Echo": {"Type": "Pass"}})}}),
         ["a", "b", "c", "d"], ["a", "b", "c", "d"]),
    # -- Parallel ---------------------------------------------------------------------------------
    Case("parallel-fun-with-math", PARALLEL,
         jsonata({"FunWithMath": {"Type": "Parallel", "Branches": [
             jsonata({"Add": {"Type": "Pass", "Output": "{% $states.input[0] + $states.input[1] %}"}}),
             jsonata({"Subtract": {"Type": "Pass", "Output": "{% $states.input[0] - $states.input[1] %}"}})]}}),
         [3, 2], [5, 1]),
    Case("parallel-result-selector-flattens", PARAMETERS,
         chain({"Both": {"Type": "Parallel", "Branches": [
             chain({"First": {"Type": "Pass", "Result": [{"val": "1"}, {"val": "2"}]}}),
             chain({"Second": {"Type": "Pass", "Result": [{"val": "3"}, {"val": "4"}]}})],
             "ResultSelector": {"flattenArray.$": "$[*][*]"}}}),
         {}, {"flattenArray": [{"val": "1"}, {"val": "2"}, {"val": "3"}, {"val": "4"}]}),
    Case("parallel-branch-failure-fails-the-execution", PARALLEL,
         chain({"Try": {"Type": "Parallel", **FAILING_BRANCH}}), error="ErrorA", cause="Kaiju attack"),
    # -- Errors -----------------------------------------------------------------------------------
    Case("errors-catch-result-path-keeps-input", ERRORS,
         chain({"Try": {"Type": "Parallel", **FAILING_BRANCH,
                        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Recover", "ResultPath": "$.error"}]},
                "Recover": {"Type": "Pass", "End": True}}),
         {"foo": "bar"}, {"foo": "bar", "error": {"Error": "ErrorA", "Cause": "Kaiju attack"}}),
    Case("errors-retry-max-attempts-then-catch", ERRORS,
         chain({"Try": {"Type": "Parallel", **FAILING_BRANCH,
                        "Retry": [{"ErrorEquals": ["ErrorA"], "IntervalSeconds": 3, "MaxAttempts": 2, "BackoffRate": 1.5}],
                        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Recover", "ResultPath": "$.error"}]},
                "Recover": {"Type": "Pass", "End": True}}),
         {"foo": "bar"}, check=_check_retried_twice),
    Case("errors-states-error-from-a-branch-keeps-its-name", ERRORS,
         chain({"Try": {"Type": "Parallel", "Branches": [chain({"Broken": UNDEFINED_OUTPUT})],
                        "Catch": [{"ErrorEquals": ["States.QueryEvaluationError"], "Next": "Recover", "ResultPath": "$.error"}]},
                "Recover": {"Type": "Pass", "End": True}}),
         {"order": 7}, check=_check_query_error_caught),
    Case("errors-states-error-from-a-map-iteration-keeps-its-name", ERRORS,
         chain({"Each Item": {"Type": "Map", "ItemsPath": "$.items", "ItemProcessor": inline({"Broken": UNDEFINED_OUTPUT}),
                              "Catch": [{"ErrorEquals": ["States.QueryEvaluationError"], "Next": "Recover",
                                         "ResultPath": "$.error"}]},
                "Recover": {"Type": "Pass", "End": True}}),
         {"order": 7, "items": [1]}, check=_check_query_error_caught),
    Case("errors-uncaught-states-error-from-a-branch", ERRORS,
         chain({"Try": {"Type": "Parallel", "Branches": [chain({"Broken": UNDEFINED_OUTPUT})]}}),
         error="States.QueryEvaluationError"),
    Case("errors-task-catch-error-output", ERRORS,
         jsonata({"Get Current Price": {
             "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
             "Arguments": {"FunctionName": "${ProbeArn}", "Payload": {"fail": True, "product": "lamp"}},
             "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Report",
                        "Assign": {"failedWith": "{% $states.errorOutput.Error %}"}}]},
             "Report": {"Type": "Pass", "Output": "{% $failedWith %}"}}),
         {}, "PriceUnavailable"),
    # -- Task Assign ------------------------------------------------------------------------------
    Case("variables-task-assign-from-input-and-result", VARIABLES,
         jsonata({"Get Current Price": {
             "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
             "Arguments": {"FunctionName": "${ProbeArn}", "Payload": {"product": "{% $states.input.order.product %}"}},
             "Assign": {"product": "{% $states.input.order.product %}",
                        "currentPrice": "{% $states.result.Payload.current_price %}"}},
             "Report": {"Type": "Pass", "Output": {"product": "{% $product %}", "currentPrice": "{% $currentPrice %}"}}}),
         {"order": {"product": "lamp"}}, {"product": "lamp", "currentPrice": 42}),
    # -- Fail -------------------------------------------------------------------------------------
    Case("fail-static-error-and-cause", FAIL, chain({"FailState": {"Type": "Fail", "Error": "ErrorA", "Cause": "Kaiju attack"}}),
         error="ErrorA", cause="Kaiju attack"),
    Case("fail-jsonata-error-and-cause", FAIL,
         chain({"FailState": {"Type": "Fail", "QueryLanguage": "JSONata",
                              "Error": "{% $states.input.Error %}", "Cause": "{% $states.input.Cause %}"}}),
         {"Error": "ErrorB", "Cause": "Godzilla"}, error="ErrorB", cause="Godzilla"),
    Case("fail-error-path-and-cause-path", FAIL,
         chain({"FailState": {"Type": "Fail", "ErrorPath": "$.someError",
                              "CausePath": "States.Format('this is the error: {}, and this is the cause: {}', $.Error, $.Cause)"}}),
         {"someError": "CustomError", "Error": "ErrorA", "Cause": "Kaiju attack"},
         error="CustomError", cause="this is the error: ErrorA, and this is the cause: Kaiju attack"),
    # -- Input and output processing ------------------------------------------------------------------
    Case("pass-result-path", PASS,
         chain({"No-op": {"Type": "Pass", "Result": {"x-datum": 0.381018, "y-datum": 622.2269926397355},
                          "ResultPath": "$.coords"}}),
         {"georefOf": "Home"}, {"georefOf": "Home", "coords": {"x-datum": 0.381018, "y-datum": 622.2269926397355}}),
    Case("input-path-selects-dataset", PARAMETERS, chain({"Select": {"Type": "Pass", "InputPath": "$.dataset2"}}),
         {"comment": "Example for InputPath.", "dataset1": {"val1": 1, "val2": 2, "val3": 3},
          "dataset2": {"val1": "a", "val2": "b", "val3": "c"}},
         {"val1": "a", "val2": "b", "val3": "c"}),
    Case("input-path-slice", PARAMETERS, chain({"Select": {"Type": "Pass", "InputPath": "$.a[0:2]"}}),
         {"a": [1, 2, 3, 4]}, [1, 2]),
    Case("parameters-payload-template", PARAMETERS,
         parameters({"comment": "Selecting what I care about.",
                     "MyDetails": {"size.$": "$.product.details.size", "exists.$": "$.product.availability",
                                   "StaticValue": "foo"}}),
         {"comment": "Example for Parameters.",
          "product": {"details": {"color": "blue", "size": "small", "material": "cotton"},
                      "availability": "in stock", "sku": "2317", "cost": "$23"}},
         {"comment": "Selecting what I care about.",
          "MyDetails": {"size": "small", "exists": "in stock", "StaticValue": "foo"}}),
    Case("result-path-dollar-replaces-input", RESULT_PATH,
         chain({"HelloWorld": {"Type": "Pass", "Result": HELLO, "ResultPath": "$"}}), RESULT_PATH_INPUT, HELLO),
    Case("result-path-null-discards-result", RESULT_PATH,
         chain({"HelloWorld": {"Type": "Pass", "Result": HELLO, "ResultPath": None}}), RESULT_PATH_INPUT, RESULT_PATH_INPUT),
    Case("result-path-adds-to-input", RESULT_PATH,
         chain({"HelloWorld": {"Type": "Pass", "Result": HELLO, "ResultPath": "$.taskresult"}}),
         RESULT_PATH_INPUT, {**RESULT_PATH_INPUT, "taskresult": HELLO}),
    Case("input-path-result-path-output-path", PATHS_EXAMPLE,
         chain({"HelloWorld": {"Type": "Pass", "InputPath": "$.lambda", "Result": HELLO,
                               "ResultPath": "$.data.lambdaresult", "OutputPath": "$.data"}}),
         PATHS_INPUT, {"val1": 23, "val2": 17, "lambdaresult": HELLO}),
    Case("wait-passes-input-through", WAIT, chain({"wait_ten_seconds": {"Type": "Wait", "Seconds": 10}}),
         {"x": 1}, {"x": 1}),
]


# -- Running the table ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sfn(aws):
    return aws.client("stepfunctions")


class Executions:
    """Every case's machine created and execution started at once; ``outcome`` waits for one."""

    def __init__(self, sfn: Any, role_arn: str, substitutions: dict[str, str]) -> None:
        self.sfn, self.role_arn = sfn, role_arn
        self.started: dict[str, tuple[Case, str, dict]] = {}
        self.refused: dict[str, Outcome] = {}
        for case in CASES:
            definition = json.dumps(case.definition, ensure_ascii=False)
            for placeholder, value in substitutions.items():
                definition = definition.replace("${" + placeholder + "}", value)
            name = unique(case.id[:60])
            try:
                machine_arn = sfn.create_state_machine(name=name, definition=definition, roleArn=role_arn)["stateMachineArn"]
            except ClientError as error:
                self.refused[case.id] = self._outcome(
                    case, name, "REFUSED", error=error.response["Error"]["Code"], cause=error.response["Error"]["Message"]
                )
                continue
            execution_name = unique("run")
            started = sfn.start_execution(stateMachineArn=machine_arn, name=execution_name, input=json.dumps(case.input))
            self.started[case.id] = (case, name, {"machine_arn": machine_arn, "execution_arn": started["executionArn"],
                                                  "execution_name": execution_name})

    def _outcome(self, case: Case, machine_name: str, status: str, **details: Any) -> Outcome:
        execution_arn = details.get("execution_arn")
        return Outcome(
            status=status, output=details.get("output"), error=details.get("error"), cause=details.get("cause"),
            execution_arn=execution_arn, execution_name=details.get("execution_name"),
            machine_arn=details.get("machine_arn"), machine_name=machine_name, role_arn=self.role_arn, input=case.input,
            history=lambda: _history(self.sfn, execution_arn),
        )

    def outcome(self, case_id: str, timeout: float = 60) -> Outcome:
        if case_id in self.refused:
            return self.refused[case_id]
        case, machine_name, ids = self.started[case_id]
        deadline = time.monotonic() + timeout
        while (description := self.sfn.describe_execution(executionArn=ids["execution_arn"]))["status"] == "RUNNING":
            assert time.monotonic() < deadline, f"{case_id} still RUNNING after {timeout} s"
            time.sleep(0.05)
        output = json.loads(description["output"]) if "output" in description else None
        return self._outcome(case, machine_name, description["status"], output=output, error=description.get("error"),
                             cause=description.get("cause"), **ids)


def _history(sfn: Any, execution_arn: str) -> list[dict]:
    pages = sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn)
    return [event for page in pages for event in page["events"]]


@pytest.fixture(scope="module")
def executions(aws, sfn, role_arn) -> Executions:
    probe_arn = create_function(aws, role_arn, "conformance-probe", "probe", PROBE_CODE, Timeout=30)["FunctionArn"]
    return Executions(sfn, role_arn, {"ProbeArn": probe_arn})


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_documented_example(executions, case):
    # Given the example's definition and input (started with the others)
    # When it runs
    outcome = executions.outcome(case.id)
    # Then it ends as the page documents
    if case.error is not None or case.cause is not None:
        assert (outcome.status, outcome.error) == ("FAILED", case.error), f"{case.url}: {outcome.error} {outcome.cause}"
    if case.cause is not None:
        assert case.cause in (outcome.cause or ""), f"{case.url}: {outcome.cause}"
    if case.output is not UNSET:
        assert outcome.status == "SUCCEEDED", f"{case.url}: {outcome.status} {outcome.error} {outcome.cause}"
        assert outcome.output == case.output, case.url
    if case.check is not None:
        case.check(outcome)


def test_table_cites_the_developer_guide_for_every_case():
    assert len(CASES) >= 60
    assert len({case.id for case in CASES}) == len(CASES)
    assert all(case.url.startswith(DG) for case in CASES)


# -- Read APIs ----------------------------------------------------------------------------------------
def test_get_execution_history_pages_with_max_results_and_reverses_order(executions, sfn):
    # AWS (GetExecutionHistory): maxResults caps a page and nextToken continues it; reverseOrder
    # lists the events newest first. API_GetExecutionHistory.html
    outcome = executions.outcome("intrinsic-array")
    everything = sfn.get_execution_history(executionArn=outcome.execution_arn)["events"]
    assert [e["type"] for e in everything] == ["ExecutionStarted", "PassStateEntered", "PassStateExited", "ExecutionSucceeded"]
    assert [e["id"] for e in everything] == [1, 2, 3, 4]

    pages, kwargs = [], {"executionArn": outcome.execution_arn, "maxResults": 3}
    while True:
        page = sfn.get_execution_history(**kwargs)
        pages.append(page["events"])
        if "nextToken" not in page:
            break
        kwargs["nextToken"] = page["nextToken"]
    assert [len(events) for events in pages] == [3, 1]
    assert [e["id"] for events in pages for e in events] == [1, 2, 3, 4]

    newest_first = sfn.get_execution_history(executionArn=outcome.execution_arn, reverseOrder=True, maxResults=2)
    assert [e["type"] for e in newest_first["events"]] == ["ExecutionSucceeded", "PassStateExited"]
    rest = sfn.get_execution_history(executionArn=outcome.execution_arn, reverseOrder=True, maxResults=2,
                                     nextToken=newest_first["nextToken"])
    assert [e["id"] for e in rest["events"]] == [2, 1] and "nextToken" not in rest


def test_every_history_reads_as_motos_own_serializer_writes_it(executions, sfn):
    # The emulator writes GetExecutionHistory's body itself, for speed (history_event_serializer in
    # emulator/stepfunctions/patches.py). What the client reads must be what moto's shape-driven
    # response serializer would have written for the same events, over every documented example:
    # Map, Parallel, Retry, Catch, failures, tasks, waits and JSONata among them.
    from moto.core.serialize import XFormedAttributePicker, get_serializer_class
    from moto.core.utils import get_service_model
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    from emulator.server import ACCOUNT_ID, REGION

    moto_serializer = get_serializer_class("stepfunctions", "json")(
        operation_model=get_service_model("stepfunctions").operation_model("GetExecutionHistory"), pretty_print=False,
        value_picker=XFormedAttributePicker())
    operation = sfn.meta.service_model.operation_model("GetExecutionHistory")
    parser = botocore.parsers.create_parser("json")
    backend = stepfunctions_parser_backends[ACCOUNT_ID][REGION]
    compared = set()
    for case_id in executions.started:
        outcome = executions.outcome(case_id)
        read = sfn.get_execution_history(executionArn=outcome.execution_arn, maxResults=1000)
        env = backend.describe_execution(outcome.execution_arn).exec_worker.env
        body = moto_serializer.serialize({"events": copy.deepcopy(env.event_manager._history_event_list)})["body"]
        written = parser.parse({"body": body.encode(), "headers": {}, "status_code": 200}, operation.output_shape)
        assert "nextToken" not in read and read["events"] == written["events"], case_id
        compared.update(event["type"] for event in read["events"])
    # (the examples reach the kinds of event that carry details of their own)
    assert {"MapStateStarted", "ParallelStateStarted", "TaskFailed", "TaskScheduled", "TaskSucceeded", "WaitStateEntered",
            "ExecutionFailed", "PassStateExited"} <= compared, compared


def test_definition_text_is_read_as_json_with_its_escapes(sfn, role_arn):
    # AWS (CreateStateMachine): the definition is JSON text, so "Mar\\u00eda" in it is the string
    # "María", as json.dumps writes it by default. The transforming-data.html example, escaped.
    definition = output({"name": "{% $customerName %}", "literal": "Mar\u00eda"}, assign={"customerName": "María"})
    arn = sfn.create_state_machine(name=unique("escapes"), definition=json.dumps(definition), roleArn=role_arn)[
        "stateMachineArn"]
    execution_arn = sfn.start_execution(stateMachineArn=arn, input="{}")["executionArn"]
    deadline = time.monotonic() + 30
    while (description := sfn.describe_execution(executionArn=execution_arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert json.loads(description["output"]) == {"name": "María", "literal": "María"}


def test_describe_execution_answers_for_an_output_holding_context_times(executions, sfn):
    # AWS (DescribeExecution): output is the execution's JSON output, whatever it holds.
    # API_DescribeExecution.html; the times are as the Context object page formats them.
    outcome = executions.outcome("context-object-fields-jsonpath")
    description = sfn.describe_execution(executionArn=outcome.execution_arn)
    assert description["status"] == "SUCCEEDED"
    times = json.loads(description["output"])
    assert AWS_TIMESTAMP.fullmatch(times["Execution"]["StartTime"]), times
    assert AWS_TIMESTAMP.fullmatch(times["State"]["EnteredTime"]), times


def test_describe_execution_reports_redrive_count_zero(executions, sfn):
    # AWS (DescribeExecution): "If you have not yet redriven an execution, the redriveCount is 0."
    outcome = executions.outcome("intrinsic-array")
    assert sfn.describe_execution(executionArn=outcome.execution_arn)["redriveCount"] == 0
