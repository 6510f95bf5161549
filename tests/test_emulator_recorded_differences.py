"""Behaviours where executions recorded on AWS differed from the emulator, each pinned to AWS's answer.

Each test names the page the behaviour belongs to; where the page does not spell the exact answer
(the wording of a cause, which states carry a context field), the expected value is what AWS's
recorded executions show, as the issue that reported the difference quotes them.
"""

from __future__ import annotations

import json

import pytest

from emulator.follow import ExecutionResult, run
from tests.emulator_helpers import unique

DG = "https://docs.aws.amazon.com/step-functions/latest/dg/"


def _execute(aws, role_arn: str, definition: dict, payload: object = None) -> ExecutionResult:
    arn = aws.client("stepfunctions").create_state_machine(
        name=unique("recorded"), definition=json.dumps(definition), roleArn=role_arn)["stateMachineArn"]
    return run(aws, arn, {} if payload is None else payload)


def _one(state: dict, *, jsonata: bool = False) -> dict:
    definition = {"StartAt": "Only", "States": {"Only": {**state, "End": True}}}
    return {**definition, "QueryLanguage": "JSONata"} if jsonata else definition


def test_state_retry_count_is_in_the_context_of_states_that_can_retry_only(aws, role_arn):
    # input-output-contextobject.html lists State.RetryCount; AWS's records of a Pass state's
    # $$.State hold only Name and EnteredTime, while a Map (like a Task or Parallel) has RetryCount.
    definition = {"StartAt": "Read In Pass", "States": {
        "Read In Pass": {"Type": "Pass", "Parameters": {"state.$": "$$.State"}, "ResultPath": "$.pass", "Next": "Read In Map"},
        "Read In Map": {"Type": "Map", "ItemsPath": "$.items", "ItemSelector": {"state.$": "$$.State"},
                        "ItemProcessor": {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}},
                        "ResultPath": "$.map", "End": True}}}
    result = _execute(aws, role_arn, definition, {"items": [1]})
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert sorted(result.output["pass"]["state"]) == ["EnteredTime", "Name"]
    map_state = result.output["map"][0]["state"]
    assert (map_state["Name"], map_state["RetryCount"]) == ("Read In Map", 0)


@pytest.mark.parametrize("value", ["next tuesday", "2026-01-01T00:00:00"])
def test_jsonata_wait_timestamp_that_is_no_offset_date_time_is_a_query_evaluation_error(aws, role_arn, value):
    # state-wait.html: Timestamp is "an absolute time ... an ISO-8601 extended offset date-time".
    result = _execute(aws, role_arn, _one({"Type": "Wait", "Timestamp": "{% $states.input.at %}"}, jsonata=True), {"at": value})
    assert (result.status, result.error) == ("FAILED", "States.QueryEvaluationError")
    assert result.cause.endswith(
        f"The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format string: {value}")


@pytest.mark.parametrize(("items", "kind", "shown"), [({"a": 1}, "object", '{"a":1}'), ("abc", "string", '"abc"'),
                                                      (None, "null", "null"), (True, "boolean", "true"), (1.5, "number", "1.5")])
def test_jsonata_map_items_expression_that_is_not_an_array_names_the_expression_and_the_type(aws, role_arn, items, kind, shown):
    # state-map-inline.html: Items "must evaluate to a JSON array"; AWS's records word the failure
    # of an Items expression as an unexpected result type of that expression.
    state = {"Type": "Map", "Items": "{% $states.input.items %}",
             "ItemProcessor": {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}}}
    result = _execute(aws, role_arn, _one(state, jsonata=True), {"items": items})
    assert (result.status, result.error) == ("FAILED", "States.QueryEvaluationError")
    assert result.cause.endswith(
        "The JSONata expression '$states.input.items' specified for the field 'Items' returned an unexpected result type. "
        f"Expected 'array', but was '{kind}' for value: {shown}")


def test_jsonata_map_without_items_whose_input_is_not_an_array_says_what_the_input_was(aws, role_arn):
    # state-map-inline.html: with no Items the Map iterates over its input; AWS's records word an
    # input that is not an array as the Map state's input.
    state = {"Type": "Map", "ItemProcessor": {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}}}
    result = _execute(aws, role_arn, _one(state, jsonata=True), {"a": 1})
    assert (result.status, result.error) == ("FAILED", "States.QueryEvaluationError")
    assert result.cause.endswith('Map state input must be an array but was: {"a":1}')


def test_jsonpath_reads_keys_holding_escaped_quotes(aws, role_arn):
    # amazon-states-language-paths.html: bracket notation names any key, quotes escaped inside it.
    state = {"Type": "Pass", "Parameters": {"single.$": "$['it\\'s']", "double.$": '$["say \\"hi\\""]'}}
    result = _execute(aws, role_arn, _one(state), {"it's": 1, 'say "hi"': 2})
    assert (result.status, result.output) == ("SUCCEEDED", {"single": 1, "double": 2}), (result.error, result.cause)


def test_jsonpath_bracket_key_keeps_backslashes_that_escape_no_delimiter(aws, role_arn):
    # amazon-states-language-paths.html (bracket notation); AWS's records: in $['Test\""Name"'] only
    # a backslash before the delimiting ' is an escape, so the key is Test\""Name"; the value read is
    # the input's, {"value":"Value\"\\"} as JSON.
    state = {"Type": "Pass", "Parameters": {"value.$": '$[\'Test\\""Name"\']'}}
    result = _execute(aws, role_arn, _one(state), {'Test\\""Name"': 'Value"\\'})
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert json.dumps(result.output, separators=(",", ":")) == '{"value":"Value\\"\\\\"}'


def test_a_variable_assigned_null_reads_back_as_null(aws, role_arn):
    # workflow-variables.html: a variable holds any JSON value, null included.
    definition = {"StartAt": "Assign Null", "States": {
        "Assign Null": {"Type": "Pass", "Assign": {"nothing": None}, "Next": "Read It"},
        "Read It": {"Type": "Pass", "Parameters": {"read.$": "$nothing"}, "End": True}}}
    result = _execute(aws, role_arn, definition)
    assert (result.status, result.output) == ("SUCCEEDED", {"read": None}), (result.error, result.cause)


def test_jsonata_range_of_one_number_is_that_number(aws, role_arn):
    # transforming-data.html adds $range to JSONata; AWS's records give a lone number, not [number].
    state = {"Type": "Pass", "Output": {"one": "{% $range(5, 5) %}", "three": "{% $range(1, 3) %}"}}
    result = _execute(aws, role_arn, _one(state, jsonata=True))
    assert (result.status, result.output) == ("SUCCEEDED", {"one": 5, "three": [1, 2, 3]}), (result.error, result.cause)


def test_jsonata_evaluation_error_cause_names_the_jsonata_error_code(aws, role_arn):
    # transforming-data.html: a failing expression is States.QueryEvaluationError.
    result = _execute(aws, role_arn, _one({"Type": "Pass", "Output": "{% $notAFunction() %}"}, jsonata=True))
    assert (result.status, result.error) == ("FAILED", "States.QueryEvaluationError")
    assert result.cause.endswith(
        "The JSONata expression '$notAFunction()' specified for the field 'Output' threw an error during evaluation. "
        "T1006: Attempted to invoke a non-function")


def test_a_pass_states_assign_and_output_both_read_the_variables_from_before_the_state(aws, role_arn):
    # workflow-variables.html: a state's Assign and its output are evaluated with the variable values
    # the state was entered with; what it assigns is visible from the next state on.
    definition = {"StartAt": "Set", "States": {
        "Set": {"Type": "Pass", "Assign": {"x": 1}, "Next": "Change"},
        "Change": {"Type": "Pass", "Parameters": {"seen.$": "$x"}, "Assign": {"x": 2, "previous.$": "$x"}, "Next": "Read"},
        "Read": {"Type": "Pass", "Parameters": {"x.$": "$x", "previous.$": "$previous", "input.$": "$"}, "End": True}}}
    result = _execute(aws, role_arn, definition)
    assert (result.status, result.output) == ("SUCCEEDED", {"x": 2, "previous": 1, "input": {"seen": 1}}), (result.error, result.cause)


def test_a_pass_states_output_path_reads_the_variable_from_before_its_assign(aws, role_arn):
    # workflow-variables.html: what a state assigns is visible from the next state on; AWS's records
    # of a Pass state with InputPath and OutputPath "$answer" and an Assign of answer output the old value.
    definition = {"StartAt": "Set", "States": {
        "Set": {"Type": "Pass", "Assign": {"answer": 42}, "Next": "Change"},
        "Change": {"Type": "Pass", "InputPath": "$answer", "OutputPath": "$answer", "Assign": {"answer": "<omitted>"},
                   "Next": "Read"},
        "Read": {"Type": "Pass", "Parameters": {"output.$": "$", "answer.$": "$answer"}, "End": True}}}
    result = _execute(aws, role_arn, definition)
    assert (result.status, result.output) == ("SUCCEEDED", {"output": 42, "answer": "<omitted>"}), (result.error, result.cause)


def test_a_jsonata_pass_states_output_reads_the_variable_from_before_its_assign(aws, role_arn):
    # workflow-variables.html: "Assign and Output are evaluated in parallel", with the values from before the state.
    definition = {"QueryLanguage": "JSONata", "StartAt": "Set", "States": {
        "Set": {"Type": "Pass", "Assign": {"answer": 42}, "Next": "Change"},
        "Change": {"Type": "Pass", "Output": "{% $answer %}", "Assign": {"answer": "<omitted>"}, "Next": "Read"},
        "Read": {"Type": "Pass", "Output": {"output": "{% $states.input %}", "answer": "{% $answer %}"}, "End": True}}}
    result = _execute(aws, role_arn, definition)
    assert (result.status, result.output) == ("SUCCEEDED", {"output": 42, "answer": "<omitted>"}), (result.error, result.cause)
