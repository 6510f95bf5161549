"""/oncall contact on the deployed app: a person verifies their own number, signed slash commands to the
action endpoint's URL, the codes read from the emulator's phone log (`GET /api/phone`) as a person reads
their phone (issue 39).

The emulator's account is as a new AWS account: End User Messaging's sandbox is on, so a text to a number
not verified with AWS is refused (API Reference, SendTextMessage: ConflictException, Reason
DESTINATION_PHONE_NUMBER_NOT_VERIFIED) and the number is verified through AWS's own sandbox verification,
AWS texting its code ("Your verification code is ...", the emulator's wording), which VerifyDestinationNumber
checks. Once the number is verified with AWS, a second method on it gets this app's own code. IAM is
enforced: the endpoint's grants are the ones used.
"""

from __future__ import annotations

import json
import re

from tests.test_alert_notification_execution import STACK
from tests.test_alert_on_call_execution import _slash
from tests.test_emulator_sms import _get

CODE = re.compile(r"\b([0-9]{6})\b")
MEMBER = "U0PEOPLE1"
NUMBER = "+14255550177"


def test_a_person_verifies_their_number_in_the_sandbox_and_a_wrong_code_is_refused(deployment, console):
    def answer(text: str) -> str:
        status, body = _slash(deployment, text, user=MEMBER)
        assert status == 200
        return json.loads(body)["text"]

    def last_to_number() -> dict:
        return [entry for entry in _get(console, "api/phone") if entry["to"] == NUMBER][-1]

    # When: the person adds their mobile number
    added = answer(f"contact add sms {NUMBER}")
    # Then: the sandbox refused the app's text, so AWS texted its own code
    assert added.startswith(f"Added mobile (sms {NUMBER}), not verified yet. This AWS account's End User Messaging "
                            f"is in its sandbox")
    assert f"AWS texted its own verification code to {NUMBER}" in added
    texted = last_to_number()
    assert texted["kind"] == "sms"
    code = CODE.search(texted["body"]).group(1)
    # When: a wrong code, then the right one
    wrong = "000000" if code != "000000" else "111111"
    assert answer(f"contact verify mobile {wrong}") == "That code is wrong: mobile is not verified. 4 tries left."
    assert answer(f"contact verify mobile {code}") == "mobile is verified. No rule uses it yet: `/oncall rule mobile <minutes>` adds one."
    # Then: /oncall rules shows it verified, and a rule on it is taken
    assert answer("rule mobile 1") == f"Added: mobile (sms {NUMBER}) 1 minute(s) after a round notifies you."
    shown = answer("rules")
    assert f"  mobile: sms {NUMBER} (verified)" in shown.splitlines()
    assert f"  1 min: mobile (sms {NUMBER})" in shown.splitlines()

    # When: a call on the same number, now verified with AWS: the app calls it with its own code, spoken
    added = answer(f"contact add voice {NUMBER}")
    assert added == (f"Added mobile-call (voice {NUMBER}), not verified yet: I called it with a 6-digit code. "
                     "Type `/oncall contact verify mobile-call <code>` within 10 minutes.")
    called = last_to_number()
    assert called["kind"] == "voice"
    spoken = "".join(re.findall(r"[0-9]", called["body"].split("Again")[0]))
    assert answer(f"contact verify mobile-call {spoken}") == (
        "mobile-call is verified. No rule uses it yet: `/oncall rule mobile-call <minutes>` adds one.")
    item = deployment.client("dynamodb").get_item(
        TableName=deployment.output(STACK, "PeopleTableName"), Key={"member": {"S": MEMBER}}, ConsistentRead=True)["Item"]
    assert [m["M"]["verified"]["BOOL"] for m in item["contact_methods"]["L"]] == [True, True]
