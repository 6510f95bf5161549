"""The /oncall Slack slash command, as plain logic: who is on call now and next, and covering a shift.

``/oncall`` lists each schedule's current and next person with their times in the schedule's zone;
``/oncall cover <schedule>`` makes the person who typed it the override from now to the end of the
current shift, ``/oncall cover <schedule> <start> <end>`` (local times, YYYY-MM-DDTHH:MM) for any
time. The new override is validated with the schedule (an overlap is refused) before it is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from patterns_common.oncall import InvalidSchedule, Schedule, Shift, local_text, parse_schedule

COMMAND = "/oncall"
LOOK_AHEAD = timedelta(days=14)  # the console's two weeks: a "next" beyond that is not shown
USAGE = (
    "`/oncall` lists who is on call now and next; `/oncall cover <schedule>` covers the current shift "
    "of <schedule> yourself; `/oncall cover <schedule> <start> <end>` covers from start to end "
    "(local times in the schedule's zone, YYYY-MM-DDTHH:MM)."
)
_MEMBER_ID = re.compile(r"[UW][A-Z0-9]{2,}")


class CommandRefused(Exception):
    """Answered to the person who typed the command, changing nothing."""


@dataclass(frozen=True)
class Cover:
    schedule_id: str
    override: dict[str, str]  # {member, start, end} as the schedule item writes it
    overrides_before: int  # written only if the item still has this many overrides


def mention(member: str | None) -> str:
    if member is None:
        return "nobody"
    return f"<@{member}>" if _MEMBER_ID.fullmatch(member) else member


def listing(schedules: list[Schedule], now: datetime) -> str:
    if not schedules:
        return "There are no on-call schedules yet (the on-call table is empty)."
    lines = []
    for schedule in sorted(schedules, key=lambda s: s.schedule_id):
        shifts = schedule.shifts(now, now + LOOK_AHEAD)
        current, later = shifts[0], [s for s in shifts[1:] if s.member is not None]
        lines.append(f"*{schedule.schedule_id}* ({schedule.zone.key})")
        lines.append(f"• now: {mention(current.member)} until {_until(current, schedule)}")
        if later:
            lines.append(f"• next: {mention(later[0].member)} from {local_text(later[0].start, schedule.zone)} until {_until(later[0], schedule)}")
        else:
            lines.append(f"• next: nobody in the next {LOOK_AHEAD.days} days")
    return "\n".join(lines)


def _until(shift: Shift, schedule: Schedule) -> str:
    return local_text(shift.end, schedule.zone)


def parse_cover(text: str) -> tuple[str, str | None, str | None]:
    words = text.split()
    if not words or words[0] != "cover" or len(words) not in (2, 4):
        raise CommandRefused(USAGE)
    return (words[1], *(words[2:] or (None, None)))


def cover(item: Mapping[str, Any], member: str, now: datetime, start: str | None, end: str | None) -> Cover:
    """The override ``member`` asks for, checked with the schedule as the runtime will read it."""
    schedule = parse_schedule(item)
    if start is None:
        current = schedule.shifts(now, now + LOOK_AHEAD)[0]
        start = now.astimezone(schedule.zone).strftime("%Y-%m-%dT%H:%M")
        end = current.end.strftime("%Y-%m-%dT%H:%M")
    override = {"member": member, "start": start, "end": end}
    overrides = list(item.get("overrides", []))
    try:
        parse_schedule({**item, "overrides": [*overrides, override]})
    except InvalidSchedule as invalid:
        raise CommandRefused(f"Not covered: {invalid}.") from invalid
    return Cover(schedule.schedule_id, override, len(overrides))


def covered_text(done: Cover, zone_key: str) -> str:
    override = done.override
    return (
        f"{mention(override['member'])} covers *{done.schedule_id}* from {override['start']} to "
        f"{override['end']} ({zone_key})."
    )


def slack_reply(text: str) -> dict[str, Any]:
    """A slash command's answer: 200 within 3 s, the text shown only to the person who typed it."""
    return {
        "statusCode": 200,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps({"response_type": "ephemeral", "text": text}),
    }
