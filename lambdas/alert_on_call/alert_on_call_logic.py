"""Find Who Is On Call: the people a round pages when its escalation level names on-call schedules.

A ``schedule:<id>`` target stands for whoever the schedule has on call at the moment the round
notifies. A level pages every target it can. A schedule with nobody on call (a gap), or one that
cannot be used for any reason (no item, an item that does not parse, a read that failed after its
retries), also hands the round to the next level's targets, and the round's message says which
schedule and why: never silent. A gap with no next level is reported as the round's failure
``NobodyOnCall``. Only a round that pages nobody at all while a schedule was unusable fails the alert,
with ``ScheduleUnreadable`` naming each such schedule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from patterns_common.oncall import Schedule, schedule_id_of

# The error a round records for a schedule target nobody could stand in for.
NOBODY_ON_CALL = "NobodyOnCall"


class ScheduleUnreadable(Exception):
    """Schedules an escalation names that cannot be used: ``schedule:<id>: <reason>`` for each, joined by '; '."""

    def __init__(self, schedule_id: str, reason: str, *more: tuple[str, str]) -> None:
        self.problems = dict([(schedule_id, reason), *more])
        super().__init__("; ".join(f"schedule:{name}: {why}" for name, why in self.problems.items()))
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
    """Who ``levels[level]`` pages at ``at``; ``read(schedule_id)`` raises ScheduleUnreadable for a schedule
    that cannot be used. Raises ScheduleUnreadable, naming every unusable schedule, only when nobody is paged."""
    found, unreadable = _targets_from(levels, level, at, read)
    if unreadable and not found.users:
        [(schedule_id, reason), *more] = unreadable.items()
        raise ScheduleUnreadable(schedule_id, reason, *more)
    return found


def _targets_from(
    levels: list[list[str]], level: int, at: datetime, read: Callable[[str], Schedule]
) -> tuple[RoundTargets, dict[str, str]]:
    """The level's people, and the next level's too where a schedule had a gap or could not be used;
    with the reasons of the unusable schedules, by id."""
    found = RoundTargets()
    gaps: list[str] = []
    unreadable: dict[str, str] = {}
    for target in levels[level]:
        schedule_id = schedule_id_of(target)
        if schedule_id is None:
            found.add([target])
            continue
        try:
            member = read(schedule_id).on_call(at)
        except ScheduleUnreadable as error:
            unreadable[schedule_id] = error.reason
            found.notes.append(f"Schedule {schedule_id} could not be read ({error.reason}).")
            continue
        if member is None:
            gaps.append(target)
            found.notes.append(f"Schedule {schedule_id} has nobody on call.")
        else:
            found.add([member])
    if (gaps or unreadable) and level + 1 < len(levels):
        later, later_unreadable = _targets_from(levels, level + 1, at, read)
        if later.users:
            found.notes.append("The next escalation level is paged in its place.")
        found.add(later.users)
        found.notes.extend(later.notes)
        found.failed.extend(later.failed)
        return found, {**unreadable, **later_unreadable}
    found.failed.extend({"user": target, "error": NOBODY_ON_CALL} for target in gaps)
    return found, unreadable


def round_message(message: str, notes: list[str]) -> str:
    return message if not notes else f"{message}\n{' '.join(notes)}"
