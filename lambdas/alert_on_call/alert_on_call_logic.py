"""Find Who Is On Call: the people a round pages when its escalation level names on-call schedules.

A ``schedule:<id>`` target stands for whoever the schedule has on call at the moment the round
notifies. A schedule with nobody on call (a gap), or one that cannot be read, hands the round on to
the next level's targets, and the round's message says which schedule and why: never silent. A gap
with no next level is reported as the round's failure ``NobodyOnCall``; an unreadable schedule with
no later level that pages anyone fails the alert (``ScheduleUnreadable``, naming it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from patterns_common.oncall import Schedule, schedule_id_of

# The error a round records for a schedule target nobody could stand in for.
NOBODY_ON_CALL = "NobodyOnCall"


class ScheduleUnreadable(Exception):
    """A schedule an escalation names is missing or invalid; the message starts with the target."""

    def __init__(self, schedule_id: str, reason: str) -> None:
        super().__init__(f"schedule:{schedule_id}: {reason}")
        self.schedule_id = schedule_id
        self.reason = reason


@dataclass
class RoundTargets:
    users: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Schedule targets nobody stood in for: {"user": "schedule:<id>", "error": NOBODY_ON_CALL}.
    failed: list[dict[str, str]] = field(default_factory=list)

    def add(self, users: list[str]) -> None:
        self.users.extend(user for user in users if user not in self.users)


def level_of_round(levels: list[list[str]], round_: int) -> int:
    """Round k (from 1) notifies level k, the last level for every later round."""
    return min(round_, len(levels)) - 1


def find_round_targets(
    levels: list[list[str]], level: int, at: datetime, read: Callable[[str], Schedule]
) -> RoundTargets:
    """Who ``levels[level]`` pages at ``at``; ``read(schedule_id)`` raises ScheduleUnreadable."""
    found = RoundTargets()
    gaps: list[str] = []
    unreadable: list[ScheduleUnreadable] = []
    for target in levels[level]:
        schedule_id = schedule_id_of(target)
        if schedule_id is None:
            found.add([target])
            continue
        try:
            member = read(schedule_id).on_call(at)
        except ScheduleUnreadable as error:
            unreadable.append(error)
            found.notes.append(f"Schedule {schedule_id} could not be read ({error.reason}).")
            continue
        if member is None:
            gaps.append(target)
            found.notes.append(f"Schedule {schedule_id} has nobody on call.")
        else:
            found.add([member])
    if not (gaps or unreadable):
        return found
    if level + 1 < len(levels):
        later = find_round_targets(levels, level + 1, at, read)
        if later.users:
            found.notes.append("The next escalation level is paged in its place.")
        found.add(later.users)
        found.notes.extend(later.notes)
        found.failed.extend(later.failed)
        if unreadable and not later.users:
            raise unreadable[0]
        return found
    if unreadable:
        raise unreadable[0]
    found.failed.extend({"user": target, "error": NOBODY_ON_CALL} for target in gaps)
    return found


def round_message(message: str, notes: list[str]) -> str:
    return message if not notes else f"{message}\n{' '.join(notes)}"
