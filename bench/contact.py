"""What a person's rules cost the escalation: one round paging a member with no people item, then one with rules.

Issue 39: "a person without rules adds nothing. Each further contact attempt adds at most two state
transitions, or none if you schedule it outside the machine". Ours arms the rules outside the machine,
so both rounds must cost the same transitions; and so that the figure is not measured on rules that
never ran, the second person must have been texted and called. Anything else fails the bench
(ContactCostUnexpected), writing nothing.
"""

from __future__ import annotations

import uuid

from bench.channels import CONTACT_ATTEMPT_TRANSITIONS
from bench.measure import observe
from emulator.session import Deployment
from emulator.sms import PHONE_NUMBER, verify_destination

# The person's rules: a text at minute 1, a call at minute 2 (docs/reaching-people.md's form).
RULES = [{"after_minutes": 0, "contact": "slack"}, {"after_minutes": 1, "contact": "mobile"},
         {"after_minutes": 2, "contact": "mobile-call"}]
ATTEMPTS = len(RULES) - 1  # every rule but the channel post
# A number no sample or test uses (+49 151 and eight digits), verified in the SMS sandbox as a deployer would.
NUMBER = "+4915100000039"


class ContactCostUnexpected(AssertionError):
    """Our design's contact attempts cost the machine other than designed, or were not made."""


def contact_attempt_cost(deployment: Deployment) -> dict:
    alerts = deployment.output("AlertNotificationStack", "AlertTableName")
    people = deployment.output("AlertNotificationStack", "PeopleTableName")
    dynamodb, sms = deployment.client("dynamodb"), deployment.aws.sms
    verify_destination(deployment.aws, NUMBER)
    suffix = uuid.uuid4().hex[:6].upper()
    without, with_rules = f"UBENCHNO{suffix}", f"UBENCHYES{suffix}"
    dynamodb.put_item(TableName=people, Item={
        "member": {"S": with_rules},
        "contact_methods": {"L": [
            {"M": {"id": {"S": "mobile"}, "type": {"S": "sms"}, "address": {"S": NUMBER}, "verified": {"BOOL": True}}},
            {"M": {"id": {"S": "mobile-call"}, "type": {"S": "voice"}, "address": {"S": NUMBER}, "verified": {"BOOL": True}}}]},
        "rules": {"L": [{"M": {"after_minutes": {"N": str(r["after_minutes"])}, "contact": {"S": r["contact"]}}} for r in RULES]},
    })
    logged = len(sms.phone_log)
    transitions = {}
    deployment.aws.scheduler.fire_on_clock({"contact-*"})
    try:
        for kind, member in (("without", without), ("with", with_rules)):
            alert_id = f"bench-contact-{kind}-{suffix.lower()}"
            dynamodb.put_item(TableName=alerts, Item={
                "alert_id": {"S": alert_id}, "notification_count": {"N": "1"},
                "user_accounts": {"L": [{"S": member}]}, "status": {"S": "active"},
                "interval_seconds": {"N": "300"}, "message": {"S": "Benchmark alert"},
            })
            try:
                observed = observe(deployment.aws, deployment.machine_arn("alert"), {"alert_id": alert_id})
                if observed.result.status != "SUCCEEDED":
                    raise ContactCostUnexpected(f"the round paging a member {kind} rules ended {observed.result.status}")
                transitions[kind] = observed.result.transitions
                if kind == "with":
                    # The rules' minutes pass on the simulated clock, the alert still active.
                    deployment.aws.clock.advance(ATTEMPTS * 60 + 60)
                    made = [e for e in sms.phone_log[logged:] if e["to"] == NUMBER and e["from"] == PHONE_NUMBER]
            finally:
                dynamodb.delete_item(TableName=alerts, Key={"alert_id": {"S": alert_id}})
    finally:
        deployment.aws.scheduler.fire_on_clock(set())
        dynamodb.delete_item(TableName=people, Key={"member": {"S": with_rules}})
    added = transitions["with"] - transitions["without"]
    kinds = sorted(e["kind"] for e in made)
    if added != CONTACT_ATTEMPT_TRANSITIONS * ATTEMPTS or kinds != ["sms", "voice"]:
        raise ContactCostUnexpected(
            f"{ATTEMPTS} contact attempts added {added} transitions (designed: {CONTACT_ATTEMPT_TRANSITIONS} each) "
            f"and made {kinds or 'nothing'} (expected a text and a call)")
    return {"transitions": transitions, "attempts": ATTEMPTS, "made": kinds,
            "added_per_attempt": added / ATTEMPTS}


def cost_lines(figures: dict) -> list[str]:
    return [
        f"  one round paging one member: {figures['transitions']['without']} transitions with no people item, "
        f"{figures['transitions']['with']} with {figures['attempts']} rules that texted and called them "
        f"({', '.join(figures['made'])})",
        f"  transitions added per contact attempt: {figures['added_per_attempt']:g}",
    ]
