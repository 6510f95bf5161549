"""`python -m tools.alert put`: an alert item is written only if the app would run it as written (issue 40).

Each refusal of the item itself is compared with what the real Fetch Alert Config handler raises for
the same item in the table (moto), so the command cannot drift from the machine's own check; the
schedules it names are looked up in the on-call table the stack output names, and its alarm in
CloudWatch (moto).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from boto3.dynamodb.types import TypeSerializer
from moto import mock_aws

from tests.conftest import HANG_SECONDS, ROOT
from tests.lambda_loader import load_lambda_module
from tests.test_alert_notification_runtime import ACTIONS_URL, FakeLambdaContext

ORDERS = ROOT / "samples" / "alert-items" / "orders-db-cpu.json"
PAGING = ROOT / "samples" / "alert-items" / "paging-on-call.json"
PRIMARY = ROOT / "samples" / "oncall-schedules" / "primary.json"
TEAM_B = {"schedule_id": "team-b", "time_zone": "Europe/Berlin",
          "layers": [{"members": ["U0AAAAAA1", "U0BBBBBB2"], "start": "2026-11-02T09:00", "shift": "P7D"}]}


def typed(item: dict) -> dict:
    return {name: TypeSerializer().serialize(value) for name, value in item.items()}


@pytest.fixture
def table(monkeypatch):
    monkeypatch.setenv("ALERT_TABLE_NAME", "alerts")
    with mock_aws():
        secret = boto3.client("secretsmanager").create_secret(Name="link-key", SecretString="k" * 64)
        monkeypatch.setenv("ACTION_LINK_KEY_SECRET_ARN", secret["ARN"])
        parameters.clear_caches()
        yield boto3.resource("dynamodb").create_table(
            TableName="alerts",
            KeySchema=[{"AttributeName": "alert_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "alert_id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
    parameters.clear_caches()


@pytest.fixture
def on_call(table):
    """The on-call table, named by the stack output OnCallTableName as the deployed stack names it."""
    boto3.client("cloudformation").create_stack(StackName="AlertNotificationStack", TemplateBody=json.dumps({
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}, "Outputs": {"OnCallTableName": {"Value": "on-call"}}}))
    return boto3.resource("dynamodb").create_table(
        TableName="on-call", KeySchema=[{"AttributeName": "schedule_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "schedule_id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")


def alarm(name: str) -> None:
    boto3.client("cloudwatch").put_metric_alarm(
        AlarmName=name, Namespace="AWS/RDS", MetricName="CPUUtilization", Statistic="Average", Period=60,
        EvaluationPeriods=3, Threshold=90, ComparisonOperator="GreaterThanThreshold")


def put(path, capsys, *options: str) -> tuple[int, str, str]:
    from tools import alert

    code = alert.main(["put", str(path), "--table", "alerts", *options])
    out = capsys.readouterr()
    return code, out.out, out.err


def fetch_refusal(table, item: dict) -> str:
    """The error the real Fetch Alert Config handler raises for ``item`` once it is in the table."""
    table.put_item(Item=item)
    handler = load_lambda_module("alert_config", "handler")
    event = {"input": {"alert_id": item["alert_id"]}, "execution_arn": "arn:aws:states:us-east-1:123456789012:execution:a:b",
             "actions_url": ACTIONS_URL}
    with pytest.raises(Exception) as raised:
        handler.lambda_handler(event, FakeLambdaContext())
    table.delete_item(Key={"alert_id": item["alert_id"]})
    assert type(raised.value).__name__ == "InvalidAlertConfig"
    return str(raised.value)


def test_the_documented_sample_is_written_as_given(table, capsys):
    # Given: the alarm it names exists
    alarm("orders-db-cpu-high")
    # When
    code, out, err = put(ORDERS, capsys)
    # Then: written exactly as the file says (the form aws dynamodb put-item --item takes), and summarised
    assert (code, err) == (0, "")
    written = boto3.client("dynamodb").get_item(TableName="alerts", Key={"alert_id": {"S": "orders-db-cpu"}})["Item"]
    assert written == json.loads(ORDERS.read_text())
    assert out == (
        "Put into alerts: alert orders-db-cpu: status resolved, 2 people in 1 level(s), 3 round(s) 300 s apart, "
        "raised and resolved by CloudWatch alarm orders-db-cpu-high\n"
    )


@pytest.mark.parametrize(
    "item",
    [
        {"alert_id": "twice", "notification_count": 1, "user_accounts": ["a@example.com", "a@example.com"]},
        {"alert_id": "no-rounds", "user_accounts": ["a@example.com"]},
        {"alert_id": "bad-status", "notification_count": 1, "user_accounts": ["a@example.com"], "status": "open"},
        {"alert_id": "too-long-waits", "notification_count": 10, "interval_seconds": 86_400, "user_accounts": ["a"]},
        # issue 40: a field the alert does not read; schedules spelled otherwise (case, plural, spaces)
        {"alert_id": "unread-field", "notification_count": 1, "user_accounts": ["a"], "interval_secs": 60},
        {"alert_id": "capital", "notification_count": 1, "escalation": [["Schedule:primary"]]},
        {"alert_id": "plural", "notification_count": 1, "escalation": [["a"], ["schedules:primary"]]},
        {"alert_id": "spaced", "notification_count": 1, "user_accounts": ["schedule: primary"]},
        # Fits without its links; with each person's two signed links it is over the 256 KiB an
        # execution may carry: the check counts the links as the execution will.
        {"alert_id": "crowd", "notification_count": 1, "user_accounts": [f"{n:04d}" + "u" * 196 for n in range(120)]},
    ],
    ids=lambda item: item["alert_id"],
)
def test_a_refused_item_says_why_as_the_execution_would_and_is_not_written(table, capsys, tmp_path, item):
    # Given
    expected = fetch_refusal(table, item)
    path = tmp_path / "item.json"
    path.write_text(json.dumps(typed(item)))
    # When
    code, out, err = put(path, capsys)
    # Then
    assert (code, out) == (2, "")
    assert err == f"Refused, not written: {expected} (an execution would fail with InvalidAlertConfig)\n"
    assert "Item" not in table.get_item(Key={"alert_id": item["alert_id"]})


@pytest.mark.parametrize("form", ["plain", "typed"])
def test_a_refused_item_is_refused_alike_in_the_plain_form_the_docs_show(table, capsys, tmp_path, form):
    item = {"alert_id": "unread-field", "notification_count": 1, "user_accounts": ["a"], "interval_secs": 60}
    path = tmp_path / "item.json"
    path.write_text(json.dumps(item if form == "plain" else typed(item)))
    code, out, err = put(path, capsys)
    assert (code, out) == (2, "")
    assert err.startswith("Refused, not written: interval_secs: is not a field of an alert item, and would be ignored "
                          "(did you mean interval_seconds?)")
    assert table.scan()["Items"] == []


@pytest.mark.parametrize(("text", "expected"), [
    ('["orders-db-cpu"]', 'Refused, not written: item: must be a JSON object, e.g. {"alert_id": "orders-db-cpu", ...}\n'),
    ('{"alert_id": {"S": "a"}, "notification_count": {"N": "three"}}',
     "Refused, not written: item: is not valid typed JSON: notification_count: 'three' is not a number\n"),
    ('{"alert_id": {"S": "a"}, "user_accounts": {"M": ["a"]}}', "Refused, not written: item: is not valid typed JSON: user_accounts: "),
])
def test_a_file_that_is_no_item_is_refused_in_one_line(table, capsys, tmp_path, text, expected):
    path = tmp_path / "item.json"
    path.write_text(text)
    code, out, err = put(path, capsys)
    assert (code, out) == (2, "")
    assert err.startswith(expected) and err.count("\n") == 1
    assert table.scan()["Items"] == []


def test_the_plain_form_is_written_as_its_typed_form_would_be(table, capsys, tmp_path):
    # Given: the sample disk-full-web-1 item in the plain form the docs show
    plain = {"alert_id": "disk-full-web-1", "notification_count": 3, "status": "active", "interval_seconds": 300,
             "user_accounts": ["foo@example.com", "bar@example.com", "baz@example.com"], "message": "Disk above 90% on web-1"}
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(plain))
    # When
    code, out, err = put(path, capsys)
    # Then: the item DynamoDB holds is the typed sample's, attribute for attribute
    assert (code, err) == (0, "")
    assert out == "Put into alerts: alert disk-full-web-1: status active, 3 people in 1 level(s), 3 round(s) 300 s apart\n"
    written = boto3.client("dynamodb").get_item(TableName="alerts", Key={"alert_id": {"S": "disk-full-web-1"}})["Item"]
    assert written == json.loads((ROOT / "samples" / "alert-items" / "disk-full-web-1.json").read_text())


def test_a_schedule_missing_from_the_on_call_table_the_stack_names_is_refused(on_call, table, capsys, tmp_path):
    # Given: team-b is not in the table (the alert would fail every hour); primary is
    on_call.put_item(Item={**TEAM_B, "schedule_id": "primary"})
    path = tmp_path / "item.json"
    path.write_text(json.dumps({"alert_id": "api", "notification_count": 1,
                                "escalation": [["schedule:primary"], ["schedule:team-b"]]}))
    # When
    code, out, err = put(path, capsys)
    # Then
    assert (code, out) == (2, "")
    assert err == ("Refused, not written: schedule:team-b: the on-call table on-call has no schedule 'team-b' "
                   "(`python -m tools.oncall put` writes one)\n")
    assert table.scan()["Items"] == []


def test_a_schedule_in_the_on_call_table_is_written_the_table_read_from_the_stack_output(on_call, table, capsys):
    # Given: the sample's schedule, written as the docs say
    from tools import oncall

    assert oncall.main(["put", str(PRIMARY), "--table", "on-call"]) == 0
    capsys.readouterr()
    # When
    code, out, err = put(PAGING, capsys)
    # Then
    assert (code, err) == (0, "")
    assert out == ("Put into alerts: alert paging-on-call: status active, 1 people and 1 schedule(s) in 2 level(s), "
                   "2 round(s) 300 s apart\n")
    assert table.get_item(Key={"alert_id": "paging-on-call"})["Item"]["notification_count"] == 2


def test_a_schedule_the_functions_cannot_read_is_written_with_a_warning(on_call, table, capsys):
    # Given: primary is in the table with a zone no database has: each round pages the level's other
    # targets (docs/on-call-schedules.md), so the alert still pages someone
    on_call.put_item(Item={**TEAM_B, "schedule_id": "primary", "time_zone": "Europe/Berln"})
    # When
    code, out, err = put(PAGING, capsys)
    # Then
    assert code == 0 and out.startswith("Put into alerts: alert paging-on-call:")
    assert err.startswith("Warning: schedule:primary cannot be read, so its level pages only its other targets: "
                          "InvalidSchedule: schedule 'primary', time_zone: ")


def test_the_on_call_table_given_on_the_command_line_is_the_one_looked_in(on_call, table, capsys):
    # Given: primary is only in another table, named with --on-call-table
    other = boto3.resource("dynamodb").create_table(
        TableName="other-on-call", KeySchema=[{"AttributeName": "schedule_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "schedule_id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
    other.put_item(Item={**TEAM_B, "schedule_id": "primary"})
    # When / Then: refused against the stack's table, written against the one given
    assert put(PAGING, capsys)[0] == 2
    assert put(PAGING, capsys, "--on-call-table", "other-on-call")[0] == 0
    code, out, err = put(PAGING, capsys, "--on-call-table", "no-such-table")
    assert (code, out) == (2, "")
    assert err == ("Refused, not written: schedule:primary: there is no table 'no-such-table' "
                   "(the stack output OnCallTableName names it)\n")


def test_without_the_stack_and_without_on_call_table_a_schedule_is_refused_in_one_line(table, capsys):
    code, out, err = put(PAGING, capsys)
    assert (code, out) == (2, "")
    assert err == ("Refused, not written: cannot read the on-call table's name from AlertNotificationStack "
                   "(ValidationError: Stack with id AlertNotificationStack does not exist): give it with --on-call-table\n")


def test_an_alarm_name_no_alarm_has_is_written_with_a_warning(table, capsys, tmp_path):
    # Given: issue 40's typo, with the alarm it meant in the account
    alarm("payments-cpu-high")
    path = tmp_path / "item.json"
    path.write_text(json.dumps({"alert_id": "payments", "alarm_name": "payments-cpu-hgh", "status": "resolved",
                                "notification_count": 1, "user_accounts": ["a"]}))
    # When
    code, out, err = put(path, capsys)
    # Then: written anyway (the alarm may be created next), and the warning says what will not happen
    assert code == 0 and out.startswith("Put into alerts: alert payments:")
    assert err == ("Warning: alarm_name: no CloudWatch alarm is named 'payments-cpu-hgh' in this account and region, "
                   "so none raises or resolves this alert until one is\n")
    assert table.get_item(Key={"alert_id": "payments"})["Item"]["alarm_name"] == "payments-cpu-hgh"


def test_a_missing_table_is_one_line(table, capsys):
    alarm("orders-db-cpu-high")
    code, out, err = put(ORDERS, capsys, "--table", "no-such-table")
    assert (code, out) == (1, "")
    assert err == "Not written: there is no table 'no-such-table' (the stack output AlertTableName names it)\n"


def test_no_credential_is_one_line_not_a_traceback(tmp_path):
    # Given: an environment with no AWS credential anywhere the SDK looks
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    env |= {"AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_CONFIG_FILE": str(tmp_path / "none"),
            "AWS_EC2_METADATA_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1"}
    # When
    result = subprocess.run([sys.executable, "-m", "tools.alert", "put", str(ORDERS), "--table", "alerts"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_SECONDS)
    # Then
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "Not written: NoCredentialsError: Unable to locate credentials\n"


def test_the_command_runs_as_documented_without_the_emulator(tmp_path):
    # `python -m tools.alert` imports the app's checking code and boto3 only, never the emulator
    probe = "import sys, tools.alert; print(sorted(m for m in sys.modules if m.split('.')[0] == 'emulator'))"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout == "[]\n"
    usage = subprocess.run([sys.executable, "-m", "tools.alert", "put", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert usage.returncode == 0 and "--table" in usage.stdout
