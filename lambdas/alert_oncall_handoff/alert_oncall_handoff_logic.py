"""Handoff notices: who starts a shift at an instant, and when (and in which zone) the next handoff is.

One EventBridge Scheduler one-time schedule, ``at(<local time>)`` in the zone of the schedule that
hands off next, is re-armed after every notice (and at deploy, and after ``/oncall cover``): one
invocation per handoff, none in between. Handoffs fall on whole minutes (every time in a schedule is
``HH:MM``), so Scheduler's minute precision names them exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from patterns_common.oncall import Schedule, local_text

# How far ahead the next handoff is looked for; with none in it, the schedule is re-armed at the horizon.
HORIZON = timedelta(days=28)
_BEFORE = timedelta(microseconds=1)


@dataclass(frozen=True)
class Notice:
    schedule_id: str
    member: str
    text: str


@dataclass(frozen=True)
class Arming:
    """The one-time schedule: ``at(expression)`` evaluated in ``time_zone``, for the handoff at ``handoff_at``."""

    handoff_at: datetime
    expression: str
    time_zone: str


def notices(schedules: list[Schedule], at: datetime) -> list[Notice]:
    """A notice for each schedule whose person on call changes at ``at`` to someone (not to a gap)."""
    found = []
    for schedule in schedules:
        incoming = schedule.on_call(at)
        if incoming is None or incoming == schedule.on_call(at - _BEFORE):
            continue
        until = next((s.end for s in schedule.shifts(at, at + HORIZON) if s.member == incoming), None)
        ends = f" until {local_text(until, schedule.zone)}" if until is not None and until < at + HORIZON else ""
        found.append(Notice(
            schedule.schedule_id,
            incoming,
            f"<@{incoming}> your on-call shift for *{schedule.schedule_id}* starts now, "
            f"{local_text(at, schedule.zone)}{ends}.",
        ))
    return found


def next_handoff(schedules: list[Schedule], after: datetime) -> Arming | None:
    """The first instant after ``after`` at which a schedule hands off to someone, as a Scheduler ``at()``."""
    best: tuple[datetime, Schedule] | None = None
    for schedule in schedules:
        for shift in schedule.shifts(after, after + HORIZON)[1:]:
            if shift.member is not None:
                if best is None or shift.start < best[0]:
                    best = (shift.start.astimezone(timezone.utc), schedule)
                break
    if best is None:
        if not schedules:
            return None
        # Nothing hands off within the horizon (a long rotation): look again then, handing nobody a shift.
        at = (after + HORIZON).astimezone(timezone.utc).replace(second=0, microsecond=0)
        return Arming(at, f"at({at:%Y-%m-%dT%H:%M:%S})", "UTC")
    at, schedule = best
    local = at.astimezone(schedule.zone)
    if local.replace(tzinfo=None, fold=0).replace(tzinfo=schedule.zone).astimezone(timezone.utc) != at:
        # The second 01:30 of a night the clocks go back: its wall-clock time names the first one too.
        return Arming(at, f"at({at:%Y-%m-%dT%H:%M:%S})", "UTC")
    return Arming(at, f"at({local:%Y-%m-%dT%H:%M:%S})", schedule.zone.key)
