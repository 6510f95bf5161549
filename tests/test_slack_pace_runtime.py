"""The shared Slack pace's item as DynamoDB (moto) keeps it: what it holds, and for how long.

Expected values worked out by hand from patterns_common/slack_pace.py's rules: a burst of 3, then one
slot every 1.25 s; the pace item keeps milliseconds; an item goes by the short-lived table's TTL
attribute ``expiration`` (epoch seconds, stacks/alert_notification/construct.py) an hour after its
webhook was last used (DynamoDB Developer Guide, "Time to Live": items whose TTL
attribute is a past epoch second are deleted).
"""

from __future__ import annotations

from decimal import Decimal

import boto3
import pytest
from moto import mock_aws

from patterns_common.slack_pace import pace_key, reserve_slot_on

URL = "https://hooks.slack.com/services/T000/B000/XXXX"


@pytest.fixture
def table():
    with mock_aws():
        yield boto3.resource("dynamodb").create_table(
            TableName="short-lived", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")


def test_the_pace_item_keeps_its_next_slot_to_the_millisecond_and_lives_an_hour_past_its_last_use(table):
    # When: a post on the idle webhook at 1000.2006 s, then one at 1001.0 (the burst still has room)
    first = reserve_slot_on(table, URL, 1000.2006)
    after_idle = table.get_item(Key=pace_key(URL))["Item"]
    second = reserve_slot_on(table, URL, 1001.0)
    after_busy = table.get_item(Key=pace_key(URL))["Item"]
    # Then: both post at once; the item's next slot moved on 1.25 s each time, kept in milliseconds
    # (1000.2006 + 1.25 = 1001.4506, kept as 1001.451; then 1002.701), and it goes an hour after the
    # second of its last use
    assert (first, second) == (1000.2006, 1001.0)
    assert (after_idle["tat"], after_idle["expiration"]) == (Decimal("1001.451"), 1000 + 3600)
    assert (after_busy["tat"], after_busy["expiration"]) == (Decimal("1002.701"), 1001 + 3600)

