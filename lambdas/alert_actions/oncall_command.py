"""The /oncall Slack slash command, as plain logic: who is on call now and next, covering a shift and undoing it.

``/oncall`` lists every schedule's current and next person with their times in the schedule's zone (a
schedule that cannot be read, with its error). ``/oncall cover <schedule>`` makes the person who typed
it the override from now to the end of the current shift, ``/oncall cover <schedule> <start> <end>``
(local times, YYYY-MM-DDTHH:MM) for any window that ends in the future and lasts at most the schedule's
``max_cover_days``; only a member of the schedule's layers or of its ``coverers`` may. ``/oncall
uncover <schedule>`` removes the caller's overrides that have not ended and ends the one in progress
now. Each change is checked with the schedule (an overlap is refused), written with unambiguous times
(``stored_time``) and told to the channel; it is written only over the overrides it was worked out from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from people_command import USAGE as PEOPLE_USAGE

from patterns_common.oncall import InvalidSchedule, Schedule, Shift, local_text, parse_schedule, stored_time

COMMAND = "/oncall"
LOOK_AHEAD = timedelta(days=14)  # the console's two weeks: a "next" beyond that is not shown
USAGE = (
    "`/oncall` lists who is on call now and next; `/oncall cover <schedule>` covers the current shift "
    "of <schedule> yourself; `/oncall cover <schedule> <start> <end>` covers from start to end "
    "(local times in the schedule's zone, YYYY-MM-DDTHH:MM; the end in the future, at most the schedule's "
    "max_cover_days, 14 unless it says otherwise, after the start); `/oncall uncover <schedule>` removes "
    "your covers of <schedule> that have not ended. Only the members of a schedule's layers and its "
    "coverers may cover it. " + PEOPLE_USAGE
)
_MEMBER_ID = re.compile(r"[UW][A-Z0-9]{2,}")


class CommandRefused(Exception):
    """Answered to the person who typed the command, changing nothing."""


@dataclass(frozen=True)
class Command:
    verb: str  # "list", "cover" or "uncover"
    schedule_id: str | None = None
    start: str | None = None  # as typed, for "cover <schedule> <start> <end>"
    end: str | None = None


@dataclass(frozen=True)
class Change:
    """A schedule's new overrides, written only if the item still has ``before``, then told to the channel."""

    schedule_id: str
    before: list[Any]  # the overrides as read (an empty list when the item has none)
    after: list[dict[str, str]]
    told: str


def mention(member: str | None) -> str:
    if member is None:
        return "nobody"
    return f"<@{member}>" if _MEMBER_ID.fullmatch(member) else member


def check_workspace(team_id: str | None, app_team_id: str | None) -> None:
    """A Slack app may be installed in more than one workspace: only its own (``slackTeamId``) may use
    /oncall, and with none named nobody may, since the signature alone cannot tell workspaces apart."""
    if not app_team_id:
        raise CommandRefused(
            "/oncall is off: this app's deployment names no Slack workspace. Whoever deploys it sets the "
            "context key slackTeamId to the workspace's ID (T...) and deploys again."
        )
    if team_id != app_team_id:
        raise CommandRefused("/oncall takes requests only from the Slack workspace this app is deployed for.")


def parse_command(text: str) -> Command:
    words = text.split()
    if words in ([], ["list"]):
        return Command("list")
    if words[0] == "cover" and len(words) in (2, 4):
        return Command("cover", *words[1:])
    if words[0] == "uncover" and len(words) == 2:
        return Command("uncover", words[1])
    raise CommandRefused(USAGE)


def listing(items: list[Mapping[str, Any]], now: datetime) -> str:
    """Every schedule of the table: who is on call now and next, or why it cannot be read."""
    if not items:
        return "There are no on-call schedules yet (the on-call table is empty)."
    lines = []
    for item in sorted(items, key=lambda item: str(item.get("schedule_id"))):
        try:
            schedule = parse_schedule(item)
        except InvalidSchedule as invalid:
            lines.append(f"*{item.get('schedule_id')}* cannot be read: {invalid}")
            continue
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


def cover(item: Mapping[str, Any], member: str, now: datetime, start: str | None, end: str | None) -> Change:
    """The override ``member`` asks for, checked with the schedule as the runtime will read it."""
    schedule = _readable(item)
    allowed = schedule.members() | set(schedule.coverers)
    if member not in allowed:
        raise CommandRefused(
            f"Not covered: only the members of *{schedule.schedule_id}*'s layers and its coverers may cover it: "
            f"{', '.join(mention(m) for m in sorted(allowed))}."
        )
    if start is None:
        begins = _minute(now)
        # In UTC: a time of the repeated autumn hour in the zone (fold 1) is never equal to one in another
        # zone (PEP 495), so the schedule's edges would not meet it.
        ends = schedule.shifts(begins, _latest_end(schedule, begins))[0].end.astimezone(timezone.utc)
    else:
        begins, ends = _typed_window(item, member, start, end)
    if ends <= now:
        raise CommandRefused(f"Not covered: the window ended at {local_text(ends, schedule.zone)}; a cover must end in the future.")
    if ends > _latest_end(schedule, begins):
        raise CommandRefused(
            f"Not covered: a cover of *{schedule.schedule_id}* lasts at most {schedule.max_cover_days} days "
            f"(its max_cover_days); {local_text(begins, schedule.zone)} to {local_text(ends, schedule.zone)} is longer."
        )
    before = list(item.get("overrides", []))
    override = {"member": member, "start": stored_time(begins, schedule.zone), "end": stored_time(ends, schedule.zone)}
    _readable({**item, "overrides": [*before, override]}, "Not covered")
    replaced = [shift.member for shift in schedule.shifts(begins, ends) if shift.member != member]
    told = (
        f"{mention(member)} covers {_names(replaced)} on *{schedule.schedule_id}* from {local_text(begins, schedule.zone)} "
        f"to {local_text(ends, schedule.zone)} ({schedule.zone.key})."
    )
    return Change(schedule.schedule_id, before, [*before, override], told)


def uncover(item: Mapping[str, Any], member: str, now: datetime) -> Change:
    """``member``'s overrides that have not ended: one not started is removed, one in progress ends now
    (to the minute; removed when it started this minute). Ended ones stay as the record of who was on call."""
    schedule = _readable(item)
    zone = schedule.zone
    ended_at = _minute(now)
    ends_now = stored_time(ended_at, zone)
    before = list(item.get("overrides", []))
    after, told = [], []
    for written, override in zip(before, schedule.overrides):
        if override.member != member or override.end <= now:
            after.append(written)
            continue
        window = f"the cover from {local_text(override.start, zone)} to {local_text(override.end, zone)}"
        if override.start < ended_at:
            after.append({**written, "end": ends_now})
            told.append(f"{window} now ends at {local_text(ended_at, zone)}")
        else:
            told.append(f"{window} is removed")
    if not told:
        raise CommandRefused(f"You have no cover of *{schedule.schedule_id}* that has not ended.")
    # No check of the result: a shorter or removed override cannot overlap another.
    return Change(schedule.schedule_id, before, after, f"{mention(member)} uncovers *{schedule.schedule_id}*: {'; '.join(told)} ({zone.key}).")


def _readable(item: Mapping[str, Any], refusal: str = "") -> Schedule:
    try:
        return parse_schedule(item)
    except InvalidSchedule as invalid:
        raise CommandRefused(f"{refusal}: {invalid}." if refusal else f"This schedule cannot be read: {invalid}.") from invalid


def _typed_window(item: Mapping[str, Any], member: str, start: str, end: str | None) -> tuple[datetime, datetime]:
    """The instants typed times name, read as an override's (a repeated hour is its first occurrence
    unless the offset is typed): the same form, the same refusals."""
    typed = _readable({**item, "overrides": [{"member": member, "start": start, "end": end}]}, "Not covered")
    return typed.overrides[0].start, typed.overrides[0].end


def _minute(instant: datetime) -> datetime:
    """``instant`` to the minute an override can write (every zone's offset is whole minutes today)."""
    return instant.replace(second=0, microsecond=0)


def _latest_end(schedule: Schedule, start: datetime) -> datetime:
    """``max_cover_days`` after ``start`` on the schedule's clocks, as day shifts count days (a day across a
    daylight-saving change is 23 or 25 hours)."""
    local = start.astimezone(schedule.zone).replace(tzinfo=None)
    return schedule.instant(local + timedelta(days=schedule.max_cover_days))


def _names(members: list[str | None]) -> str:
    """Whom a cover replaces, each once in order of their shifts; ``a gap`` for the time nobody was on call."""
    names = [mention(m) if m is not None else "a gap" for m in dict.fromkeys(members)]
    if not names:
        return "their own shift"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def slack_reply(text: str) -> dict[str, Any]:
    """A slash command's answer: 200 within 3 s, the text shown only to the person who typed it."""
    return {
        "statusCode": 200,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps({"response_type": "ephemeral", "text": text}),
    }
