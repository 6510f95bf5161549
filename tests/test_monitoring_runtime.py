"""The synthesized status rule against real-shaped events: which ones match, and the message they become.

Matching uses moto's EventBridge pattern matcher (``moto.events.models.EventPattern``; moto's
``TestEventPattern`` API is a stub). The message is rendered by the emulator's input transformer
(``emulator.events.render_input_transformer``, the one that delivers the deployed rule's
notifications; tests/test_emulator_fidelity.py pins it to EventBridge's documented behaviour).
moto's own renderer does not quote string values placed outside quotes, which EventBridge does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template
from moto.events.models import EventPattern

from emulator.events import render_input_transformer
from stacks.config import AppConfig
from stacks.monitoring.stack import MonitoringStack
from tests.app_config import app_config

EVENTS = Path(__file__).parent / "events"
ALPHA = "arn:aws:states:us-east-1:123456789012:stateMachine:alpha"
BETA = "arn:aws:states:us-east-1:123456789012:stateMachine:beta"
UNWATCHED = "arn:aws:states:us-east-1:123456789012:stateMachine:somebody-elses"


def sample(name: str) -> dict:
    return json.loads((EVENTS / f"execution_{name}.json").read_text())


def synthesized_rule(config: AppConfig) -> dict:
    app = App()
    machines_stack = Stack(app, "Machines")
    machines = [
        sfn.StateMachine.from_state_machine_arn(machines_stack, name, arn)
        for name, arn in (("Alpha", ALPHA), ("Beta", BETA))
    ]
    stack = MonitoringStack(app, "MonitoringStack", config=config, state_machines=machines)
    template = Template.from_stack(stack).to_json()
    (rule,) = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::Events::Rule"]
    return rule


@pytest.fixture(scope="module")
def rule() -> dict:
    return synthesized_rule(app_config())


@pytest.fixture(scope="module")
def pattern(rule) -> EventPattern:
    return EventPattern.load(json.dumps(rule["EventPattern"]))


# --- matching ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["failed", "timed_out", "aborted"])
def test_rule_matches_the_default_statuses(pattern, status):
    # Given
    event = sample(status)
    # Then
    assert pattern.matches_event(event)


@pytest.mark.parametrize("status", ["succeeded", "running"])
def test_rule_ignores_executions_that_succeeded_or_are_running(pattern, status):
    # Given
    event = sample(status)
    # Then
    assert not pattern.matches_event(event)


@pytest.mark.parametrize("machine", [ALPHA, BETA])
def test_rule_matches_a_failure_of_every_watched_machine(pattern, machine):
    # Given
    event = sample("failed")
    event["detail"]["stateMachineArn"] = machine
    # Then
    assert pattern.matches_event(event)


def test_rule_ignores_a_failure_of_a_machine_it_does_not_watch(pattern):
    # Given
    event = sample("failed")
    event["detail"]["stateMachineArn"] = UNWATCHED
    # Then
    assert not pattern.matches_event(event)


@pytest.mark.parametrize(
    "field, value", [("source", "aws.events"), ("detail-type", "AWS API Call via CloudTrail")]
)
def test_rule_ignores_other_events_with_the_same_detail(pattern, field, value):
    # Given
    event = {**sample("failed"), field: value}
    # Then
    assert not pattern.matches_event(event)


def test_configured_statuses_decide_what_matches():
    # Given: monitoredStatuses=["SUCCEEDED"] in cdk.json
    rule = synthesized_rule(app_config(monitored_statuses=("SUCCEEDED",)))
    # When
    pattern = EventPattern.load(json.dumps(rule["EventPattern"]))
    # Then
    assert pattern.matches_event(sample("succeeded"))
    assert not pattern.matches_event(sample("failed"))


# --- the message ------------------------------------------------------------------------------


def render_message(rule: dict, event: dict) -> dict:
    return json.loads(render_input_transformer(rule["Targets"][0]["InputTransformer"], event))


@pytest.mark.parametrize("status", ["failed", "timed_out", "aborted", "succeeded", "running"])
def test_every_path_the_message_reads_is_in_the_event(rule, status):
    # Given: EventBridge renders a path missing from the event as "" or nothing, silently
    paths = rule["Targets"][0]["InputTransformer"]["InputPathsMap"].values()
    event = sample(status)
    # Then
    for path in paths:
        node = event
        for key in path.removeprefix("$.").split("."):
            assert isinstance(node, dict) and key in node, f"{path} is not in the {status} event"
            node = node[key]


def test_failed_execution_becomes_a_message_a_person_can_act_on(rule):
    # Given
    event = sample("failed")
    detail = event["detail"]
    # When
    message = render_message(rule, event)
    # Then
    assert message["summary"] == "Step Functions execution order-42-attempt-1 FAILED"
    assert message["consoleUrl"] == (
        "https://us-east-1.console.aws.amazon.com/states/home?region=us-east-1"
        "#/v2/executions/details/arn:aws:states:us-east-1:123456789012:execution:alpha:order-42-attempt-1"
    )
    assert message["stateMachineArn"] == ALPHA
    assert message["execution"] == "order-42-attempt-1"
    assert message["executionArn"] == detail["executionArn"]
    assert message["status"] == "FAILED"
    assert message["error"] == "ItemProcessingFailed"
    assert (message["startDate"], message["stopDate"]) == (1763800000123, 1763800012456)
    assert message["time"] == "2025-11-22T08:26:52Z"


def test_a_cause_with_quotes_and_newlines_arrives_intact(rule):
    # Given: a Lambda error cause is itself JSON text, with quotes and newlines
    event = sample("failed")
    # When
    message = render_message(rule, event)
    # Then
    assert message["cause"] == event["detail"]["cause"]
    error_message = json.loads(message["cause"])["errorMessage"]
    assert error_message == 'Item "42" failed after 3 attempts:\nupstream returned 503'


@pytest.mark.parametrize("status", ["timed_out", "aborted"])
def test_executions_without_error_or_cause_still_render_valid_json(rule, status):
    # Given
    event = sample(status)
    # When
    message = render_message(rule, event)
    # Then
    assert message["status"] == event["detail"]["status"]
    assert message["error"] == event["detail"]["error"]
    assert message["cause"] is None
    assert message["consoleUrl"].endswith(event["detail"]["executionArn"])
