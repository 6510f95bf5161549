"""`make demo`'s scenario of reaching a phone, on the session's deployment: what it prints is what issue 39 asks it to show.

Issue 39: "make demo shows one person's text, call and a reply that acknowledges". The sample person
(samples/people/U0ANA00001.json) is texted at minute 1 and called at minute 3 by her rules; a text
ends ``reply <code>a to acknowledge, <code>r to resolve``, and her first open alert's code is 1.
"""

from __future__ import annotations

import io

from emulator import demo
from emulator.sms import PHONE_NUMBER
from tests.test_alert_notification_execution import STACK, pass_the_slots_taken

ANA, NUMBER = "U0ANA00001", "+4915112345678"


def test_the_demo_texts_and_calls_ana_and_her_reply_acknowledges_the_alert(deployment):
    # Given: a quiet webhook
    deployment.slack.reset()
    pass_the_slots_taken(deployment)
    out = io.StringIO()
    try:
        # When: the demo's scenario runs
        demo.phone_scenario(deployment, out)
        printed = out.getvalue()
        # Then: a text at minute 1 and a call at minute 3, from the account's number, carrying code 1
        assert f"minute 1: texted {NUMBER} from {PHONE_NUMBER}: 'Checkout latency p99 above 2 s\\nreply 1a to acknowledge, 1r to resolve'" in printed
        assert f"minute 3: called {NUMBER} from {PHONE_NUMBER}:" in printed and "text back 1 a" in printed
        # And: her reply acknowledged the alert as her, and the escalation stopped after its one post
        assert f"minute 4: Ana replies '1a' from {NUMBER}" in printed
        assert f"status acknowledged, acknowledged_by {ANA}" in printed
        assert "the execution: SUCCEEDED, 1 Slack post" in printed
    finally:
        dynamodb = deployment.client("dynamodb")
        dynamodb.delete_item(TableName=deployment.output(STACK, "PeopleTableName"), Key={"member": {"S": ANA}})
        dynamodb.delete_item(TableName=deployment.output(STACK, "AlertTableName"), Key={"alert_id": {"S": "reaching-a-phone"}})
        deployment.slack.reset()
