"""On-call schedules in the template: the table, its output, what Find Who Is On Call may do, and schedules checked at synth."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Match, Template

from stacks.alert_notification.construct import AlertNotification
from stacks.common.team_function import InvalidProp
from tests.app_config import app_config
from tests.test_alert_notification_infrastructure import function_id, statements_for, synthesize

PRIMARY = {"schedule_id": "primary", "time_zone": "Europe/Berlin",
           "layers": [{"members": ["U0AAAAAA1", "U0BBBBBB2"], "start": "2026-11-02T09:00", "shift": "P7D"}]}


@pytest.fixture(scope="module")
def template() -> Template:
    return synthesize(app_config())


def test_the_stack_publishes_the_on_call_table_keyed_by_schedule_id_and_retained(template):
    template.has_output("OnCallTableName", {"Value": {"Ref": "OnCallTable"}})
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": Match.object_like({"KeySchema": [{"AttributeName": "schedule_id", "KeyType": "HASH"}]}),
            "DeletionPolicy": "Retain",
        },
    )


def test_find_who_is_on_call_only_reads_schedules_and_the_link_key(template):
    granted = statements_for(template, "FindWhoIsOnCall")
    assert granted["dynamodb:GetItem"] == [{"Fn::GetAtt": ["OnCallTable", "Arn"]}]
    assert set(granted) == {"dynamodb:GetItem", "secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}
    function = template.to_json()["Resources"][function_id(template, "FindWhoIsOnCall")]
    assert function["Properties"]["Environment"]["Variables"]["ON_CALL_TABLE_NAME"] == {"Ref": "OnCallTable"}


def _alerts(schedules):
    stack = Stack(App(), "Team")
    return AlertNotification(stack, "Alerts", schedule="rate(1 hour)", slack_webhook_secret_name="team/slack",
                             schedules=schedules)


def test_declared_schedules_are_checked_at_synth_by_the_runtimes_code():
    _alerts([PRIMARY])  # accepted
    broken = {**PRIMARY, "layers": [{**PRIMARY["layers"][0], "shift": "P1M"}]}
    with pytest.raises(InvalidProp, match=r"^schedules\[1\]: schedule 'primary', layers\[0\]\.shift: must be an ISO 8601"):
        _alerts([{**PRIMARY, "schedule_id": "secondary"}, broken])
    with pytest.raises(InvalidProp, match=r"^schedules\[1\]: schedule 'primary' is declared twice"):
        _alerts([PRIMARY, PRIMARY])


def test_the_action_endpoint_lists_schedules_and_writes_covers_on_the_on_call_table_only(template):
    # /oncall: Scan lists the schedules, GetItem and UpdateItem add a person's cover
    assert statements_for(template, "ActionsEndpointRole", table="OnCallTable") == {
        action: [{"Fn::GetAtt": ["OnCallTable", "Arn"]}] for action in ("dynamodb:Scan", "dynamodb:GetItem", "dynamodb:UpdateItem")
    }
