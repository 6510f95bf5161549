"""Declared On-Call Schedules keeps the covers added at runtime when a deploy changes a declared schedule.

Issue 38: "A deploy that changes a declared schedule replaces what the declaration says and keeps the
covers added at runtime." A runtime cover is an override in the table that the previous declaration did
not have; the overrides the declaration removed go; where a changed declaration overlaps a runtime
cover, the declaration wins and the cover is dropped, named in the log. Expected items are worked out
by hand from those rules and the zones' offsets.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import boto3
import pytest
from moto import mock_aws

from patterns_common.oncall import parse_schedule
from tests.lambda_loader import load_lambda_module
from tests.test_alert_notification_runtime import FakeLambdaContext

A, B, C = "U0AAAAAA1", "U0BBBBBB2", "U0CCCCCC3"
# Daily A/B at 09:00 Berlin from Mon 2026-11-02; C declared on call for Tue 2026-11-10 (a declared override).
DECLARED_C = {"member": C, "start": "2026-11-10T09:00", "end": "2026-11-11T09:00"}
BEFORE = {"schedule_id": "primary", "time_zone": "Europe/Berlin",
          "layers": [{"members": [A, B], "start": "2026-11-02T09:00", "shift": "P1D"}], "overrides": [DECLARED_C]}
# A cover B made with /oncall cover for Fri 2026-11-20 (not in any declaration).
COVER_B = {"member": B, "start": "2026-11-20T09:00", "end": "2026-11-21T09:00"}


@pytest.fixture
def declared():
    return load_lambda_module("alert_oncall_declared", "alert_oncall_declared_logic")


def weekly(**fields):
    """BEFORE changed: weekly shifts instead of daily, other fields as given (overrides dropped unless given)."""
    item = {key: value for key, value in BEFORE.items() if key != "overrides"}
    return {**item, "layers": [{**BEFORE["layers"][0], "shift": "P1W"}], **fields}


def test_a_changed_declaration_is_written_with_the_runtime_cover_and_without_the_override_it_removed(declared):
    # Given: the table has the old declaration plus B's runtime cover; the new one is weekly, with no override
    current = {**BEFORE, "overrides": [DECLARED_C, COVER_B]}
    # When
    merged = declared.merge(declared.Put(weekly(), BEFORE), current)
    # Then: the declared fields are the new ones, B's cover stays, C's declared override is gone
    assert merged.item == weekly(overrides=[COVER_B])
    assert merged.kept == [COVER_B] and merged.dropped == []


def test_a_declared_override_overlapping_a_runtime_cover_wins_and_the_cover_is_dropped_with_the_reason(declared):
    # Given: the new declaration puts C on call from Fri 2026-11-20 17:00 to Sun 09:00, over B's cover
    # (Fri 09:00 to Sat 09:00); A's runtime cover on Wed 2026-11-25 overlaps nothing declared, and
    # B's second one (Wed 12:00 to 13:00) overlaps A's, which comes first in the table
    declared_c = {"member": C, "start": "2026-11-20T17:00", "end": "2026-11-22T09:00"}
    cover_a = {"member": A, "start": "2026-11-25T09:00", "end": "2026-11-26T09:00"}
    cover_b_noon = {"member": B, "start": "2026-11-25T12:00", "end": "2026-11-25T13:00"}
    current = {**BEFORE, "overrides": [DECLARED_C, COVER_B, cover_a, cover_b_noon]}
    # When
    merged = declared.merge(declared.Put(weekly(overrides=[declared_c]), BEFORE), current)
    # Then: the declaration's override and A's cover; B's two covers dropped, each saying what it overlaps
    assert merged.item["overrides"] == [declared_c, cover_a]
    assert merged.dropped == [
        declared.Dropped(COVER_B, f"it overlaps the declared override of {C} from 2026-11-20T17:00 to 2026-11-22T09:00"),
        declared.Dropped(cover_b_noon, f"it overlaps the runtime cover of {A} from 2026-11-25T09:00 to 2026-11-26T09:00"),
    ]
    # And: the schedule written is readable (an overlap would make it a gap when paged)
    assert [o.member for o in parse_schedule(merged.item).overrides] == [C, A]


def test_a_runtime_cover_the_new_declaration_cannot_read_is_dropped_and_the_rest_is_written(declared):
    # Given: a cover written by hand with a date that is no time
    broken = {"member": B, "start": "next friday", "end": "2026-11-21T09:00"}
    current = {**BEFORE, "overrides": [broken, COVER_B]}
    # When
    merged = declared.merge(declared.Put(weekly(), BEFORE), current)
    # Then
    assert merged.item["overrides"] == [COVER_B]
    [dropped] = merged.dropped
    assert dropped.cover == broken
    assert dropped.reason.startswith("the declared schedule cannot read it: schedule 'primary', overrides[0].start:")


def test_a_cover_kept_across_a_change_of_zone_is_rewritten_to_cover_the_same_instants(declared):
    # Given: B covers 09:00 to 17:00 on Tue 2026-12-01 in Berlin (CET, UTC+1: 08:00 to 16:00 UTC), and
    # A from Sat 2026-12-05 09:00 Berlin until further notice; the team moves the schedule to Lisbon
    cover_b = {"member": B, "start": "2026-12-01T09:00", "end": "2026-12-01T17:00"}
    cover_a = {"member": A, "start": "2026-12-05T09:00", "end": "9999-12-31T23:59"}
    current = {**BEFORE, "overrides": [DECLARED_C, cover_b, cover_a]}
    # When
    merged = declared.merge(declared.Put(weekly(time_zone="Europe/Lisbon"), BEFORE), current)
    # Then: in Lisbon (WET, UTC+0 in December) the same instants read an hour earlier; forever stays forever
    assert merged.item["overrides"] == [
        {"member": B, "start": "2026-12-01T08:00", "end": "2026-12-01T16:00"},
        {"member": A, "start": "2026-12-05T08:00", "end": "9999-12-31T23:59"},
    ]


def test_a_cover_rewritten_into_a_repeated_autumn_hour_carries_the_offset_of_its_second_occurrence(declared):
    # Given: a UTC schedule with B covering 06:30 to 12:00 UTC on 2026-11-01; it moves to New York, where
    # EDT ends at 06:00 UTC that day, so 06:30 UTC is 01:30 EST, the second 01:30, and 12:00 UTC is 07:00 EST
    before = {**BEFORE, "time_zone": "UTC", "overrides": []}
    cover = {"member": B, "start": "2026-11-01T06:30", "end": "2026-11-01T12:00"}
    # When
    merged = declared.merge(declared.Put({**before, "time_zone": "America/New_York"}, before),
                            {**before, "overrides": [cover]})
    # Then
    assert merged.item["overrides"] == [{"member": B, "start": "2026-11-01T01:30-05:00", "end": "2026-11-01T07:00"}]
    [override] = parse_schedule(merged.item).overrides
    assert override.start == datetime(2026, 11, 1, 6, 30, tzinfo=timezone.utc)


def test_a_runtime_cover_the_declaration_now_states_itself_is_written_once(declared):
    current = {**BEFORE, "overrides": [DECLARED_C, COVER_B]}
    merged = declared.merge(declared.Put(weekly(overrides=[COVER_B]), BEFORE), current)
    assert merged.item["overrides"] == [COVER_B] and merged.kept == [] and merged.dropped == []


def test_create_over_an_item_already_in_an_adopted_table_keeps_its_covers(declared):
    # Given: a retained table adopted by a new deployment holds the schedule, with a cover, and nothing
    # was declared before in this stack: every override in the table counts as added at runtime
    merged = declared.merge(declared.Put(weekly(), None), {**BEFORE, "overrides": [COVER_B]})
    assert merged.item == weekly(overrides=[COVER_B])


def test_covers_that_only_touch_a_declared_override_are_kept(declared):
    # Given: C declared from Fri 2026-11-20 17:00 to Sun 09:00; B's cover ends as it starts, A's starts
    # as it ends. An override holds from its start up to its end (docs/on-call-schedules.md): these follow one another
    declared_c = {"member": C, "start": "2026-11-20T17:00", "end": "2026-11-22T09:00"}
    before_it = {"member": B, "start": "2026-11-20T09:00", "end": "2026-11-20T17:00"}
    after_it = {"member": A, "start": "2026-11-22T09:00", "end": "2026-11-23T09:00"}
    # When
    merged = declared.merge(declared.Put(weekly(overrides=[declared_c]), BEFORE), {**BEFORE, "overrides": [before_it, after_it]})
    # Then: no overlap, so both stay
    assert merged.item["overrides"] == [declared_c, before_it, after_it] and merged.dropped == []


def test_a_cover_in_an_unchanged_zone_is_kept_as_it_was_written(declared):
    # A time may carry its offset (docs/on-call-schedules.md); in the same zone nothing is rewritten
    cover = {"member": B, "start": "2026-11-20T09:00+01:00", "end": "2026-11-21T09:00"}
    merged = declared.merge(declared.Put(weekly(), BEFORE), {**BEFORE, "overrides": [DECLARED_C, cover]})
    assert merged.item["overrides"] == [cover] and merged.kept == [cover]


def test_an_item_whose_overrides_are_no_list_keeps_nothing_and_the_declaration_is_written(declared):
    for overrides in ("B on Friday", {"member": B}):
        merged = declared.merge(declared.Put(weekly(), BEFORE), {**BEFORE, "overrides": overrides})
        assert merged == declared.Merged(weekly(), [], [])


def test_covers_on_an_item_without_a_zone_are_read_in_the_declared_one(declared):
    # An item written by hand without time_zone: its covers are taken as written in the declared zone
    current = {key: value for key, value in BEFORE.items() if key != "time_zone"}
    merged = declared.merge(declared.Put(weekly(), BEFORE), {**current, "overrides": [DECLARED_C, COVER_B]})
    assert merged.item == weekly(overrides=[COVER_B]) and merged.dropped == []


def test_a_request_without_schedules_declares_none(declared):
    assert declared.declared(None) == {} and declared.declared({"ServiceToken": "arn:fn"}) == {}


def test_a_failures_reason_is_cut_to_1000_characters(declared):
    # CloudFormation takes a custom resource's whole response up to 4096 bytes ("Custom resource
    # response objects"): the reason, the one free-length field, is cut to 1,000 characters
    request = {"StackId": "s", "RequestId": "r", "LogicalResourceId": "Declared"}
    assert declared.response(request, "p", "x" * 5000)["Reason"] == "x" * 1000


def test_a_new_schedule_is_written_as_declared(declared):
    assert declared.merge(declared.Put(weekly(), None), None).item == weekly()


# -- the handler on DynamoDB (moto) ------------------------------------------------------------------


@pytest.fixture
def writer(monkeypatch):
    """The handler over a moto on-call table, its answers to CloudFormation collected instead of PUT."""
    with mock_aws():
        monkeypatch.setenv("ON_CALL_TABLE_NAME", "on-call")
        monkeypatch.delenv("HANDOFF_FUNCTION_NAME", raising=False)
        table = boto3.resource("dynamodb").create_table(
            TableName="on-call",
            KeySchema=[{"AttributeName": "schedule_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "schedule_id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        handler = load_lambda_module("alert_oncall_declared")
        answers = []

        class Answer:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        def urlopen(request, timeout):
            answers.append(json.loads(request.data))
            return Answer()

        monkeypatch.setattr(handler.urllib.request, "urlopen", urlopen)
        yield handler, table, answers


def update(new: list, old: list) -> dict:
    return {"RequestType": "Update", "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/S/1",
            "RequestId": "r-2", "LogicalResourceId": "Declared", "PhysicalResourceId": "on-call/declared-schedules",
            "ResponseURL": "https://cloudformation-custom-resource-response.example/r-2",
            "ResourceProperties": {"ServiceToken": "arn:fn", "Schedules": json.dumps(new)},
            "OldResourceProperties": {"ServiceToken": "arn:fn", "Schedules": json.dumps(old)}}


def test_the_handler_writes_the_changed_declaration_over_the_table_keeping_the_runtime_cover(writer):
    handler, table, answers = writer
    table.put_item(Item={**BEFORE, "overrides": [DECLARED_C, COVER_B]})
    # When: the deployment changes the schedule to weekly
    handler.lambda_handler(update([weekly()], [BEFORE]), FakeLambdaContext())
    # Then
    assert answers[0]["Status"] == "SUCCESS", answers
    assert table.get_item(Key={"schedule_id": "primary"})["Item"] == weekly(overrides=[COVER_B])


def test_a_cover_written_between_the_read_and_the_write_is_merged_again_not_lost(writer):
    # Given: as the handler reads the item, /oncall cover appends A's cover (its UpdateItem, list_append)
    handler, table, answers = writer
    table.put_item(Item={**BEFORE, "overrides": [DECLARED_C, COVER_B]})
    cover_a = {"member": A, "start": "2026-11-25T09:00", "end": "2026-11-26T09:00"}
    read = handler.table.get_item
    reads = []

    def read_then_cover(**kwargs):
        item = read(**kwargs)
        reads.append(item)
        if len(reads) == 1:
            table.update_item(Key={"schedule_id": "primary"}, UpdateExpression="SET overrides = list_append(overrides, :new)",
                              ExpressionAttributeValues={":new": [cover_a]})
        return item

    handler.table.get_item = read_then_cover
    # When
    handler.lambda_handler(update([weekly()], [BEFORE]), FakeLambdaContext())
    # Then: the first write was refused by its condition, the second merged both covers
    assert answers[0]["Status"] == "SUCCESS", answers
    assert len(reads) == 2
    assert table.get_item(Key={"schedule_id": "primary"})["Item"] == weekly(overrides=[COVER_B, cover_a])


def test_a_cover_on_an_item_without_overrides_written_meanwhile_is_merged_again_too(writer):
    # Given: the item has no overrides attribute when read; a cover is added before the write
    handler, table, answers = writer
    table.put_item(Item=weekly())
    read = handler.table.get_item
    reads = []

    def read_then_cover(**kwargs):
        item = read(**kwargs)
        reads.append(item)
        if len(reads) == 1:
            table.update_item(Key={"schedule_id": "primary"}, UpdateExpression="SET overrides = :new",
                              ExpressionAttributeValues={":new": [COVER_B]})
        return item

    handler.table.get_item = read_then_cover
    # When: the declaration goes back to daily
    daily = {key: value for key, value in BEFORE.items() if key != "overrides"}
    handler.lambda_handler(update([daily], [weekly()]), FakeLambdaContext())
    # Then
    assert answers[0]["Status"] == "SUCCESS", answers
    assert len(reads) == 2
    assert table.get_item(Key={"schedule_id": "primary"})["Item"] == {**daily, "overrides": [COVER_B]}


def test_a_schedule_put_between_the_read_and_the_write_of_a_new_one_is_merged_again_not_overwritten(writer):
    # Given: the table has no "primary" when the handler reads it; someone puts it, with B's cover, before the write
    handler, table, answers = writer
    read = handler.table.get_item
    reads = []

    def read_then_put(**kwargs):
        item = read(**kwargs)
        reads.append(item)
        if len(reads) == 1:
            table.put_item(Item={**BEFORE, "overrides": [COVER_B]})
        return item

    handler.table.get_item = read_then_put
    # When: the stack is created declaring it weekly
    create = {**update([weekly()], []), "RequestType": "Create"}
    del create["OldResourceProperties"], create["PhysicalResourceId"]
    handler.lambda_handler(create, FakeLambdaContext())
    # Then: the first write was refused (the item exists now), the second kept B's cover
    assert answers[0]["Status"] == "SUCCESS", answers
    assert len(reads) == 2
    assert table.get_item(Key={"schedule_id": "primary"})["Item"] == weekly(overrides=[COVER_B])


def test_an_update_that_adopts_another_table_writes_every_declared_schedule_there(declared):
    # Given: the deployment now names a kept table (-c onCallTableName=...), the declaration unchanged
    def request(old_table: str | None) -> dict:
        old = {"Schedules": json.dumps([BEFORE]), **({"TableName": old_table} if old_table else {})}
        return {"RequestType": "Update", "ResourceProperties": {"Schedules": json.dumps([BEFORE]), "TableName": "kept"},
                "OldResourceProperties": old}
    # Then: the schedule is put into the adopted table, as newly declared (its overrides there are kept)
    assert declared.plan(request("created")) == declared.Writes([declared.Put(BEFORE, None)], [])
    # ... while the same table, or one a resource written before TableName was passed, leaves it as it is
    assert declared.plan(request("kept")) == declared.Writes([], [])
    assert declared.plan(request(None)) == declared.Writes([], [])
