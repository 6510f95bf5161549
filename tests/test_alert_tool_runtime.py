"""`python -m tools.alert put`: an alert item is written only if Fetch Alert Config would accept it.

Each refusal is compared with what the real Fetch Alert Config handler raises for the same item in
the table (moto), so the command cannot drift from the machine's own check.
"""

from __future__ import annotations

import json
import subprocess
import sys

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from boto3.dynamodb.types import TypeSerializer
from moto import mock_aws

from tests.conftest import ROOT
from tests.lambda_loader import load_lambda_module
from tests.test_alert_notification_runtime import ACTIONS_URL, FakeLambdaContext

ORDERS = ROOT / "samples" / "alert-items" / "orders-db-cpu.json"


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


def put(path, capsys) -> tuple[int, str, str]:
    from tools import alert

    code = alert.main(["put", str(path), "--table", "alerts"])
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
    # When
    code, out, _ = put(ORDERS, capsys)
    # Then: written exactly as the file says (the form aws dynamodb put-item --item takes), and summarised
    assert code == 0
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


def test_an_item_not_in_typed_json_is_refused_saying_which_form_is_expected(table, capsys, tmp_path):
    path = tmp_path / "plain.json"
    path.write_text(json.dumps({"alert_id": "plain", "notification_count": 1}))
    code, _, err = put(path, capsys)
    assert code == 2 and "typed JSON" in err and '{"S": ' in err
    assert table.scan()["Items"] == []


def test_the_command_runs_as_documented_without_the_emulator(tmp_path):
    # `python -m tools.alert` imports the app's checking code and boto3 only, never the emulator
    probe = "import sys, tools.alert; print(sorted(m for m in sys.modules if m.split('.')[0] == 'emulator'))"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout == "[]\n"
    usage = subprocess.run([sys.executable, "-m", "tools.alert", "put", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert usage.returncode == 0 and "--table" in usage.stdout
