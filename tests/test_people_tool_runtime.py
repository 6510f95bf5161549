"""`python -m tools.people put|show`: a person is written only if the functions would read them (issue 39).

Refusals are the parser's own (patterns_common.people, which the notifier runs), named by field. A put
writes the person's fields only, so the pending verifications and reply codes the app keeps on the item
survive it; a field the file leaves out is removed.
"""

from __future__ import annotations

import json

import boto3
import pytest
from boto3.dynamodb.types import TypeSerializer
from moto import mock_aws

from tests.test_people_runtime import ANA

KEPT = {"verifications": {"desk": {"via": "app", "expires_at": 1}},
        "reply_codes": {"1": {"alert_id": "disk-full", "occurrence": ""}}}


@pytest.fixture
def table():
    with mock_aws():
        yield boto3.resource("dynamodb", region_name="us-east-1").create_table(
            TableName="people", KeySchema=[{"AttributeName": "member", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "member", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")


@pytest.fixture(autouse=True)
def region(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def run(capsys, *argv) -> tuple[int, str, str]:
    from tools import people

    code = people.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def stored(table) -> dict | None:
    return table.get_item(Key={"member": "U0AAAAAA1"}).get("Item")


def write(tmp_path, item) -> str:
    path = tmp_path / "person.json"
    path.write_text(json.dumps(item))
    return str(path)


def test_the_issues_example_is_written_as_the_functions_read_it(table, capsys, tmp_path):
    code, out, err = run(capsys, "put", write(tmp_path, ANA), "--table", "people")
    assert (code, err) == (0, "")
    # 3 methods, 4 rules, 3 of them paging (the slack rule is the channel post)
    assert out == ("Put into people: person U0AAAAAA1, 3 contact method(s), 4 rule(s), 3 of them paging; "
                   "`python -m tools.people show U0AAAAAA1 --table people` shows them\n")
    assert stored(table) == ANA


def test_the_typed_form_is_written_too(table, capsys, tmp_path):
    typed = {key: TypeSerializer().serialize(value) for key, value in ANA.items()}
    code, _, err = run(capsys, "put", write(tmp_path, typed), "--table", "people")
    assert (code, err) == (0, "")
    assert stored(table) == ANA


def test_the_fields_the_app_keeps_survive_a_put_and_a_field_left_out_is_removed(table, capsys, tmp_path):
    # Given: Ana's item with a pending verification and a reply code held
    table.put_item(Item={**ANA, **KEPT})
    # When the administrator writes her without a name and with no rules
    without = {key: value for key, value in ANA.items() if key not in ("name", "rules")}
    code, _, err = run(capsys, "put", write(tmp_path, without), "--table", "people")
    # Then: name and rules are gone, the methods written, the app's fields untouched
    assert (code, err) == (0, "")
    assert stored(table) == {**without, **KEPT}


@pytest.mark.parametrize(("change", "field"), [
    ({"phone": "+4915112345678"}, "phone"),
    ({"reply_codes": {}}, "reply_codes"),
    ({"contact_methods": [{**ANA["contact_methods"][0], "address": "015112345678"}], "rules": []},
     "contact_methods[0].address"),
    ({"rules": [{"after_minutes": 61, "contact": "mobile"}]}, "rules[0].after_minutes"),
    ({"rules": [{"after_minutes": minute, "contact": "mobile"} for minute in range(11)]}, "rules"),
])
@pytest.mark.parametrize("form", ["plain", "typed"])
def test_a_refused_person_names_the_field_and_is_not_written(table, capsys, tmp_path, change, field, form):
    item = {**ANA, **change}
    written = item if form == "plain" else {key: TypeSerializer().serialize(value) for key, value in item.items()}
    code, out, err = run(capsys, "put", write(tmp_path, written), "--table", "people")
    assert (code, out) == (2, "")
    assert err.startswith(f"Refused, not written: InvalidPerson: person U0AAAAAA1: {field} ")
    assert stored(table) is None


def test_a_file_that_is_not_json_is_refused(table, capsys, tmp_path):
    path = tmp_path / "person.json"
    path.write_text("{member: U0AAAAAA1")
    code, out, err = run(capsys, "put", str(path), "--table", "people")
    assert (code, out) == (2, "")
    assert err.startswith(f"Refused, not written: {path}: ")


def test_a_missing_table_is_one_line(table, capsys, tmp_path):
    code, out, err = run(capsys, "put", write(tmp_path, ANA), "--table", "no-such-table")
    assert (code, out) == (1, "")
    assert err == "Not written: there is no table 'no-such-table' (the stack output PeopleTableName names it)\n"


def test_show_prints_every_method_and_the_rules_by_minute(table, capsys):
    # Given: rules out of order and an unverified desk phone with a rule
    table.put_item(Item={
        **ANA, **KEPT,
        "contact_methods": [*ANA["contact_methods"], {"id": "desk", "type": "voice", "address": "+493012345678", "verified": False}],
        "rules": [{"after_minutes": 5, "contact": "work-mail"}, {"after_minutes": 0, "contact": "slack"},
                  {"after_minutes": 2, "contact": "desk"}, {"after_minutes": 1, "contact": "mobile"}]})
    code, out, _ = run(capsys, "show", "U0AAAAAA1", "--table", "people")
    assert code == 0
    assert out.splitlines() == [
        "U0AAAAAA1 (Ana)",
        "Contact methods:",
        "  mobile: sms +4915112345678 (verified)",
        "  mobile-call: voice +4915112345678 (verified)",
        "  work-mail: email ana@example.com (verified)",
        "  desk: voice +493012345678 (not verified: never used for paging)",
        "Rules, by minute after a round notifies you:",
        "  0 min: slack (the channel post, made for everyone notified)",
        "  1 min: mobile (sms +4915112345678)",
        "  2 min: desk (voice +493012345678) (not used until verified)",
        "  5 min: work-mail (email ana@example.com)",
    ]


def test_show_of_nobody_says_so(table, capsys):
    code, out, err = run(capsys, "show", "U0ZZZZZZ9", "--table", "people")
    assert (code, out) == (1, "")
    assert err == "people has no person 'U0ZZZZZZ9': a round notifies them in the channel only\n"
