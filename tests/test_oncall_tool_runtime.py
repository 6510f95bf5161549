"""`python -m tools.oncall put|show`: a schedule is written only if the functions would read it (issue 40).

Refusals are the parser's own (patterns_common.oncall, which Find Who Is On Call runs), named by field;
the shifts shown are worked out by hand from the sample schedule's rules.
"""

from __future__ import annotations

import json

import boto3
import pytest
from boto3.dynamodb.types import TypeSerializer
from moto import mock_aws

from tests.conftest import ROOT

PRIMARY = ROOT / "samples" / "oncall-schedules" / "primary.json"
A, B, D = "U0AAAAAA1", "U0BBBBBB2", "U0DDDDDD4"
WEEKLY = {"schedule_id": "team-b", "time_zone": "Europe/Berlin",
          "layers": [{"members": [A, B], "start": "2026-11-02T09:00", "shift": "P7D"}],
          "overrides": [{"member": D, "start": "2026-11-12T18:00", "end": "2026-11-13T09:00"}]}


@pytest.fixture
def table():
    with mock_aws():
        yield boto3.resource("dynamodb", region_name="us-east-1").create_table(
            TableName="on-call", KeySchema=[{"AttributeName": "schedule_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "schedule_id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")


@pytest.fixture(autouse=True)
def region(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def run(capsys, *argv) -> tuple[int, str, str]:
    from tools import oncall

    code = oncall.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_plain_form_the_docs_show_is_written_as_the_functions_read_it(table, capsys, tmp_path):
    path = tmp_path / "team-b.json"
    path.write_text(json.dumps(WEEKLY))
    code, out, err = run(capsys, "put", str(path), "--table", "on-call")
    assert (code, err) == (0, "")
    assert out.startswith("Put into on-call: schedule team-b (Europe/Berlin), 1 layer(s), 1 override(s)")
    assert table.get_item(Key={"schedule_id": "team-b"})["Item"] == WEEKLY


def test_the_typed_form_of_the_sample_is_written_too(table, capsys):
    code, _, err = run(capsys, "put", str(PRIMARY), "--table", "on-call")
    assert (code, err) == (0, "")
    typed = json.loads(PRIMARY.read_text())
    assert table.get_item(Key={"schedule_id": "primary"})["Item"]["time_zone"] == typed["time_zone"]["S"]


@pytest.mark.parametrize(("change", "field"), [
    ({"overides": []}, "overides"),
    ({"time_zone": "Europe/Berln"}, "time_zone"),
    ({"overrides": [{"member": D, "start": "2026-11-12T18:00", "end": "2026-11-13T09:00"},
                    {"member": A, "start": "2026-11-13T08:00", "end": "2026-11-14T09:00"}]}, "overrides[1]"),
])
@pytest.mark.parametrize("form", ["plain", "typed"])
def test_a_refused_schedule_names_the_field_and_is_not_written(table, capsys, tmp_path, change, field, form):
    item = {**WEEKLY, **change}
    path = tmp_path / "item.json"
    path.write_text(json.dumps(item if form == "plain" else {k: TypeSerializer().serialize(v) for k, v in item.items()}))
    code, out, err = run(capsys, "put", str(path), "--table", "on-call")
    assert (code, out) == (2, "")
    assert err.startswith(f"Refused, not written: InvalidSchedule: schedule 'team-b', {field}: ")
    assert "Item" not in table.get_item(Key={"schedule_id": "team-b"})


def test_a_missing_table_is_one_line(table, capsys, tmp_path):
    path = tmp_path / "team-b.json"
    path.write_text(json.dumps(WEEKLY))
    code, out, err = run(capsys, "put", str(path), "--table", "no-such-table")
    assert (code, out) == (1, "")
    assert err == "Not written: there is no table 'no-such-table' (the stack output OnCallTableName names it)\n"


def test_show_prints_the_next_two_weeks_in_the_zone_with_the_override_marked(table, capsys):
    table.put_item(Item=WEEKLY)
    code, out, _ = run(capsys, "show", "team-b", "--table", "on-call", "--from", "2026-11-09T08:00:00+00:00")
    # Mon 2026-11-09 09:00 CET is shift 1 of the weekly rotation (B), Mon 16th shift 2 (A); D covers Thu 18:00-Fri 09:00
    assert code == 0
    assert out.splitlines() == [
        "team-b (Europe/Berlin), the next 14 days:",
        f"  Mon 2026-11-09 09:00 CET to Thu 2026-11-12 18:00 CET  {B}",
        f"  Thu 2026-11-12 18:00 CET to Fri 2026-11-13 09:00 CET  {D}  (override)",
        f"  Fri 2026-11-13 09:00 CET to Mon 2026-11-16 09:00 CET  {B}",
        f"  Mon 2026-11-16 09:00 CET to Mon 2026-11-23 09:00 CET  {A}",
    ]
