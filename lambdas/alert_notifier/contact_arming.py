"""Which contacts a channel post arms: a person's rules, each as its own Contact invocation, with no AWS client.

After Notify User has posted to the channel, each rule of the person (``Person.pages()``: verified
methods, by minute) is armed: minute 0 by an asynchronous invoke of Contact, a later minute by an
EventBridge Scheduler one-time schedule at the post's time plus the rule's minutes, in UTC (API
Reference, CreateSchedule: ``at(yyyy-mm-ddThh:mm:ss)``; Scheduler fires within its minute). A schedule
is named from the execution, round, member and rule, so a retried notifier arms nothing twice (a
name that exists already answers ConflictException). The machine takes no state transition for any of it.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from patterns_common.people import Person

SCHEDULE_PREFIX = "contact-"


@dataclass(frozen=True)
class ContactArming:
    """One rule armed: ``payload`` for Contact, and when (``at``: epoch seconds; None: at once)."""

    name: str
    at: float | None
    payload: dict[str, Any]

    @property
    def expression(self) -> str:
        return f"at({datetime.fromtimestamp(self.at, timezone.utc):%Y-%m-%dT%H:%M:%S})"


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
                                     at, payload))
    return armings


def schedule_name(execution_id: str, round_: int, member: str, minutes: int, method_id: str) -> str:
    """``contact-<minute>m-<hash of execution, round, member, rule>``: 1 to 64 of [0-9a-zA-Z-_.] (CreateSchedule, Name)."""
    digest = hashlib.sha256(json.dumps([execution_id, round_, member, minutes, method_id]).encode()).hexdigest()[:32]
    return f"{SCHEDULE_PREFIX}{minutes}m-{digest}"
