"""Which contacts a channel post arms: a person's rules, each as its own Contact invocation, with no AWS client.

After Notify User has posted to the channel, each rule of the person (``Person.pages()``: verified
methods, by minute) is armed: minute 0 by an asynchronous invoke of Contact, a later minute by an
EventBridge Scheduler one-time schedule at the post's time plus the rule's minutes
(patterns_common.one_time_schedules). A schedule is named from the execution, round, member and rule,
so a retried notifier arms nothing twice. The machine takes no state transition for any of it.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from patterns_common.one_time_schedules import at_expression
from patterns_common.people import Person

SCHEDULE_PREFIX = "contact-"


@dataclass(frozen=True)
class ContactArming:
    """One rule armed: ``payload`` for Contact, when (``at``: epoch seconds; None: at once), on what kind of method."""

    name: str
    at: float | None
    payload: dict[str, Any]
    kind: str  # the method's type: sms | voice | email

    @property
    def expression(self) -> str:
        return at_expression(datetime.fromtimestamp(self.at, timezone.utc))


def contact_armings(person: Person, event: dict[str, Any], notified_at: float) -> list[ContactArming]:
    """The contacts a notification of ``person`` arms (``event``: Notify User's), in the order of their minutes."""
    armings = []
    for minutes, method in person.pages():
        payload = {
            "alert_id": event["alert_id"],
            # The alert's raised_at the round was about ("": never raised by its alarm): a page for an
            # earlier occurrence is not sent once the alarm raised the alert again.
            "occurrence": event.get("occurrence") or "",
            "member": person.member,
            "contact": method.id,
            "after_minutes": minutes,
            "round": event["round"],
            "execution_id": event["execution_id"],
            "notified_at": notified_at,
            # The action endpoint's URL (public), for the e-mail's links Contact signs itself.
            "actions_url": event.get("actions_url"),
        }
        # A whole second: at() takes no fraction, and a later second never fires early.
        at = math.ceil(notified_at + minutes * 60) if minutes else None
        armings.append(ContactArming(schedule_name(event["execution_id"], event["round"], person.member, minutes, method.id),
                                     at, payload, method.type))
    return armings


def schedule_name(execution_id: str, round_: int, member: str, minutes: int, method_id: str) -> str:
    """``contact-<minute>m-<hash of execution, round, member, rule>``: 1 to 64 of [0-9a-zA-Z-_.] (CreateSchedule, Name)."""
    digest = hashlib.sha256(json.dumps([execution_id, round_, member, minutes, method_id]).encode()).hexdigest()[:32]
    return f"{SCHEDULE_PREFIX}{minutes}m-{digest}"


_A_KIND = {"sms": "a text", "voice": "a call", "email": "an e-mail"}


def not_armed_text(member: str, alert_id: str, failed: list[ContactArming], why: str) -> str:
    """The channel's note when rules could not be started (``failed``: those; none: the rules could not be read)."""
    if failed:
        what = ", ".join(f"{_A_KIND[a.kind]} ({a.payload['contact']}) at minute {a.payload['after_minutes']}" for a in failed)
    else:
        what = "their texts, calls and e-mails"
    return f"<@{member}>'s rules about alert {alert_id} could not be started ({why}): {what} will not reach them."
