"""`python -m emulator run` (issue 16): runs the machine's first sample, puts the alert item it
reads, and turns a bad input file into one clear line before deploying anything.

The runs use the session's deployed app (``run_deployed`` is what `run` does once `cdk deploy` is
done); deploying once more per test would cost half a minute each.
"""

from __future__ import annotations

import json
import re

import pytest

from emulator import samples
from emulator.cli import main, run_deployed, run_input
from tests.emulator_helpers import unique


def test_run_alert_puts_the_sample_alert_item_and_sends_every_round(deployment, capsys):
    # Given: the first alert sample and the item named after it
    sample = samples.for_machine("alert")[0]
    item = samples.read_alert_item(samples.alert_item_for(sample.input))
    rounds, users = int(item["notification_count"]["N"]), len(item["user_accounts"]["L"])
    # When
    code = run_deployed(deployment, "alert", sample.input)
    # Then: the item was put, and the alert ran its rounds (docs/alert-notification.md: count_reached)
    out = capsys.readouterr().out
    assert code == 0
    assert f"Put alert item {sample.input['alert_id']} (samples/alert-items/{sample.input['alert_id']}.json) into " in out
    assert "  status            SUCCEEDED" in out
    output = json.loads(re.search(r"^  output            (.*)$", out, re.MULTILINE).group(1))
    assert (output["stopped_reason"], output["rounds_completed"], output["notifications_sent"]) == ("count_reached", rounds, rounds * users)


def test_run_alert_with_an_alert_item_file_runs_that_alert(deployment, tmp_path, capsys):
    # Given: an item file of one's own, in the typed form docs/alert-notification.md shows
    alert_id = unique("one-round")
    path = tmp_path / "item.json"
    path.write_text(json.dumps({
        "alert_id": {"S": alert_id}, "notification_count": {"N": "1"},
        "user_accounts": {"L": [{"S": "ops@example.com"}]}, "message": {"S": "one round only"},
    }))
    # When: `run alert --alert-item FILE`, whose input defaults to that item's alert_id
    payload, source, alert_item = run_input("alert", None, str(path))
    code = run_deployed(deployment, "alert", payload, alert_item)
    # Then
    out = capsys.readouterr().out
    assert (payload, source) == ({"alert_id": alert_id}, str(path))
    assert code == 0 and f"Put alert item {alert_id} ({path}) into " in out
    assert '"notifications_sent":1' in out


@pytest.mark.parametrize(("content", "message"), [
    (None, r"^error: cannot read \S+input.json: No such file or directory$"),
    ("{'alert_id': 'x'}", r"^error: \S+input.json is not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 \(char 1\)$"),
])
def test_run_turns_a_missing_or_malformed_input_file_into_one_line(tmp_path, capsys, content, message):
    # Given
    path = tmp_path / "input.json"
    if content is not None:
        path.write_text(content)
    # When
    code = main(["run", "alert", "--input", str(path)])
    # Then: one line on stderr, before any deploy
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert re.match(message, captured.err.rstrip("\n")) and captured.err.count("\n") == 1


def test_run_refuses_an_alert_item_that_is_not_in_typed_form(tmp_path, capsys):
    path = tmp_path / "item.json"
    path.write_text('{"alert_id": "disk-full-web-1", "notification_count": 3}')
    assert main(["run", "alert", "--alert-item", str(path)]) == 2
    assert "is not an item in DynamoDB's typed form" in capsys.readouterr().err
