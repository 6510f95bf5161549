"""On-call schedules: the item form validated, who is on call at an instant, and the shifts between two instants.

A schedule is one item of the on-call table (docs/on-call-schedules.md): an IANA ``time_zone``,
``layers`` (a rotation of ``members`` from a local ``start``, ``shift`` long, optionally limited by
``restrictions``) and ``overrides``. A later layer wins wherever it has someone; an override wins over
every layer. The same code validates a schedule at synth (``AlertNotification(schedules=...)``) and
at runtime, so nothing the app deploys can be refused later.

Day and week shifts hand off at the same local wall-clock time, so a day is 23 or 25 hours across a
daylight-saving change; hour shifts are elapsed hours. A wall-clock time is read with fold 0: a time
skipped in spring is taken at the offset before the change (02:30 on a night that skips 02:00-03:00
is 03:30), a time repeated in autumn is its first occurrence unless an override's time carries the
offset that names the second (``2026-11-01T01:30-05:00``), as ``/oncall cover`` writes it.

Nothing given to the parser raises anything but ``InvalidSchedule``, and nothing given to a parsed
schedule raises at all: a local time is from 1970 on, a shift at most a year, and an ``end`` as late as
``9999-12-31T23:59`` in any zone is FOREVER, "until further notice"; instants asked about are taken
within [EARLIEST, LATEST].

Zones come through the standard library's zoneinfo. The functions set PYTHONTZPATH empty, so they read
only the tzdata package the shared layer ships beside this module (stacks/common/zone_data.py); synthesis
reads the same package.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any, NoReturn

SCHEDULE_PREFIX = "schedule:"
SCHEDULE_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
DAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
FIELDS = ("schedule_id", "time_zone", "layers", "overrides", "coverers", "max_cover_days")
LAYER_FIELDS = ("members", "start", "shift", "restrictions")
RESTRICTION_FIELDS = ("days", "start", "end")
OVERRIDE_FIELDS = ("member", "start", "end")
MAX_MEMBER_LENGTH = 254  # as an alert's accounts
# Hours, days or weeks, one unit: a mix would be part elapsed, part wall-clock time.
_SHIFT = re.compile(r"P(?:(?P<weeks>[0-9]+)W|(?P<days>[0-9]+)D|T(?P<hours>[0-9]+)H)")
MAX_SHIFT = timedelta(days=366)  # a rotation handing off less than yearly is one person: write it so
# A cover lasts at most this long unless the schedule's max_cover_days says otherwise.
DEFAULT_MAX_COVER_DAYS = 14
MAX_COVER_DAYS_LIMIT = 366
MAX_COVERERS = 100
# The instants a schedule works in. FOREVER is a day short of the largest datetime, so that it has a
# local time in every zone (UTC-12 to UTC+14); a time at or past it is "until further notice".
EARLIEST = datetime(1970, 1, 1, tzinfo=timezone.utc)
FOREVER = datetime(9999, 12, 30, tzinfo=timezone.utc)
# The latest instant asked about: a look a month ahead of it (its shifts, their day boundaries) stays before FOREVER.
LATEST = datetime(9999, 10, 1, tzinfo=timezone.utc)
_DAY = timedelta(days=1)
# How a parser refuses: the schedule's field and what is wrong with it (raises InvalidSchedule).
_Fail = Callable[[str, str], NoReturn]


@dataclass(frozen=True)
class _TimeForm:
    """A time as a schedule writes it: the text's shape, how it is read, and what a person is told to write."""

    shape: re.Pattern[str]
    read: Callable[[str], Any]
    expected: str

    def parse(self, value: Any, field: str, fail: _Fail) -> Any:
        parsed = None
        if isinstance(value, str) and self.shape.fullmatch(value):
            try:
                parsed = self.read(value)
            except ValueError:  # the right shape but no such time, such as 25:00
                pass
        if parsed is None:
            fail(field, f"must be {self.expected}, got {value!r}")
        return parsed


def _local_date_time(text: str) -> datetime | None:
    local = datetime.fromisoformat(text)
    return local if local.year >= EARLIEST.year else None


def _clock_time(text: str) -> timedelta | None:
    """A time of day as the time since midnight on the clock; 24:00 is the end of the day."""
    hours, minutes = int(text[:2]), int(text[3:])
    if hours > 24 or minutes > 59 or (hours == 24 and minutes):
        return None
    return timedelta(hours=hours, minutes=minutes)


_LOCAL_TIME = _TimeForm(
    re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}"),
    _local_date_time,
    "a local time YYYY-MM-DDTHH:MM from 1970 on, in the schedule's zone (no offset)",
)
# An override's time may carry the offset that tells the two occurrences of an autumn hour apart.
_OVERRIDE_TIME = _TimeForm(
    re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?:[+-][0-9]{2}:[0-9]{2})?"),
    _local_date_time,
    "a local time YYYY-MM-DDTHH:MM from 1970 on, in the schedule's zone, optionally with its offset (+01:00)",
)
_CLOCK_TIME = _TimeForm(re.compile(r"[0-9]{2}:[0-9]{2}"), _clock_time, "a local time of day HH:MM, 00:00 to 24:00")


class InvalidSchedule(Exception):
    """A schedule that cannot be used; the message names the schedule and the field."""

    def __init__(self, schedule_id: str, field: str, problem: str) -> None:
        super().__init__(f"schedule {schedule_id!r}, {field}: {problem}")


@dataclass(frozen=True)
class Restriction:
    """A window that opens at ``start`` on the clock on each of its ``days`` and stays open ``length``
    on the clock: past midnight into the next day when its end is before its start."""

    days: frozenset[int]  # the days it opens on; 0 is Monday, as date.weekday()
    start: timedelta  # the clock's time since midnight, 00:00 to 23:59, whole minutes
    length: timedelta  # whole minutes, more than none and at most a day

    def covers(self, local: datetime) -> bool:
        """Whether the window is open at the wall-clock time ``local``: it last opened less than ``length``
        ago on the clock, on one of its days. The clock's minute decides, since the window's times are
        whole minutes."""
        since_opening = (timedelta(hours=local.hour, minutes=local.minute) - self.start) % _DAY
        return (local - since_opening).weekday() in self.days and since_opening < self.length


@dataclass(frozen=True)
class Layer:
    members: tuple[str, ...]
    start: datetime  # local wall-clock time of the first handoff (naive)
    shift: timedelta
    wall_clock: bool  # day and week shifts: handoffs at the same local time; hour shifts: elapsed
    restrictions: tuple[Restriction, ...]


@dataclass(frozen=True)
class Override:
    member: str
    start: datetime  # aware instants
    end: datetime


@dataclass(frozen=True)
class Shift:
    """Who is on call from ``start`` to ``end`` (aware, in the schedule's zone); ``member`` None is a gap."""

    member: str | None
    start: datetime
    end: datetime


@dataclass(frozen=True)
class Schedule:
    schedule_id: str
    zone: zoneinfo.ZoneInfo
    layers: tuple[Layer, ...]
    overrides: tuple[Override, ...]
    coverers: tuple[str, ...] = ()  # who may cover besides the layers' members
    max_cover_days: int = DEFAULT_MAX_COVER_DAYS

    def instant(self, local: datetime) -> datetime:
        """The instant a local wall-clock time names (its fold, 0 unless set: see the module's
        docstring); FOREVER at or past it."""
        return _instant(self.zone, local)

    def handoff(self, layer: Layer, n: int) -> datetime:
        """When shift ``n`` of ``layer`` begins; FOREVER past the last datetime. ``n`` is never so negative
        as to go before the first: shift_index starts at most two shifts before an instant from 1970 on."""
        try:
            if layer.wall_clock:
                return self.instant(layer.start + n * layer.shift)
            return min(self.instant(layer.start) + n * layer.shift, FOREVER)
        except OverflowError:
            return FOREVER

    def members(self) -> frozenset[str]:
        """Everyone a layer rotates."""
        return frozenset(member for layer in self.layers for member in layer.members)

    def shift_index(self, layer: Layer, at: datetime) -> int:
        """The shift of ``layer`` running at ``at`` (negative before the layer's start)."""
        at = within(at)
        # Elapsed time counts an hour layer's shifts exactly. A day or week layer's shifts follow the
        # wall clock, which drifts from elapsed time by the zone's change of offset since the layer's
        # start: at most 26 hours (UTC-12 to UTC+14), under two of its shifts. So start two shifts early,
        # where a shift has surely begun, and step to the last one that has.
        n = (at - self.instant(layer.start)) // layer.shift - 2
        while self.handoff(layer, n + 1) <= at:
            n += 1
        return n

    def layer_member(self, layer: Layer, at: datetime) -> str | None:
        n = self.shift_index(layer, at)
        if n < 0:
            return None
        if layer.restrictions and not any(r.covers(at.astimezone(self.zone)) for r in layer.restrictions):
            return None
        return layer.members[n % len(layer.members)]

    def on_call(self, at: datetime) -> str | None:
        """Who is on call at the aware instant ``at``; None when nobody is (a gap)."""
        at = within(at)
        for override in self.overrides:
            if override.start <= at < override.end:
                return override.member
        for layer in reversed(self.layers):
            member = self.layer_member(layer, at)
            if member is not None:
                return member
        return None

    def shifts(self, start: datetime, end: datetime) -> list[Shift]:
        """The final schedule from ``start`` to ``end``: consecutive shifts, gaps included, times in the zone."""
        start, end = within(start), within(end)
        edges = {start, end, *self._edges(start, end)}
        instants = sorted(edge for edge in edges if start <= edge <= end)
        shifts: list[Shift] = []
        for begin, finish in zip(instants, instants[1:]):
            member = self.on_call(begin)
            if shifts and shifts[-1].member == member:
                shifts[-1] = Shift(member, shifts[-1].start, finish.astimezone(self.zone))
            else:
                shifts.append(Shift(member, begin.astimezone(self.zone), finish.astimezone(self.zone)))
        return shifts

    def _edges(self, start: datetime, end: datetime) -> Iterable[datetime]:
        """Every instant at which the person on call may change between ``start`` and ``end``."""
        for override in self.overrides:
            yield from (override.start, override.end)
        first_day = start.astimezone(self.zone).date() - timedelta(days=1)
        days = (end.astimezone(self.zone).date() - first_day).days + 1
        for layer in self.layers:
            yield from (self.handoff(layer, n) for n in range(self.shift_index(layer, start), self.shift_index(layer, end) + 2))
            for restriction in layer.restrictions:
                for offset in range(days):
                    day = first_day + timedelta(days=offset)
                    midnight = datetime.combine(day, time())
                    # A restriction follows the wall clock (Restriction.covers), which passes a time of a
                    # repeated autumn hour twice: each pass is an edge.
                    for fold in (0, 1):
                        yield self.instant((midnight + restriction.start).replace(fold=fold))
                        yield self.instant((midnight + restriction.start + restriction.length).replace(fold=fold))


def within(at: datetime) -> datetime:
    """``at`` taken within the instants a schedule answers for, [EARLIEST, LATEST], in UTC: an aware time
    of a repeated autumn hour (fold 1) never equals the same instant in another zone (PEP 495), so a
    set of edges would hold it twice."""
    return min(max(at, EARLIEST), LATEST).astimezone(timezone.utc)


def schedule_id_of(target: str) -> str | None:
    """The schedule an escalation target names (``schedule:<id>``), or None for a person's account."""
    return target[len(SCHEDULE_PREFIX):] if target.startswith(SCHEDULE_PREFIX) else None


def parse_schedule(item: Any) -> Schedule:
    """The validated schedule of an item as written (or read from DynamoDB); InvalidSchedule if unusable."""
    raw_id = item.get("schedule_id") if isinstance(item, Mapping) else None
    if not isinstance(raw_id, str) or not SCHEDULE_ID.fullmatch(raw_id):
        raise InvalidSchedule(
            str(raw_id), "schedule_id", "must be 1 to 64 letters, digits, '.', '_' or '-' (escalation names it as schedule:<id>)"
        )
    fail = _failing(raw_id)
    _known_fields(item, FIELDS, "", fail)
    zone = _zone(item.get("time_zone"), fail)
    layers = item.get("layers")
    if not isinstance(layers, list) or not layers:
        fail("layers", "must be a non-empty list of layers, each {members, start, shift}")
    parsed_layers = tuple(_layer(layer, f"layers[{i}]", fail) for i, layer in enumerate(layers))
    overrides = item.get("overrides", [])
    if not isinstance(overrides, list):
        fail("overrides", "must be a list of {member, start, end}")
    parsed = [_override(zone, override, f"overrides[{i}]", fail) for i, override in enumerate(overrides)]
    for i, later in enumerate(parsed):
        for j, earlier in enumerate(parsed[:i]):
            if later.start < earlier.end and earlier.start < later.end:
                fail(f"overrides[{i}]", f"overlaps overrides[{j}]: two overrides cannot cover the same time")
    coverers = item.get("coverers", [])
    if not isinstance(coverers, list) or len(coverers) > MAX_COVERERS:
        fail("coverers", f"must be a list of at most {MAX_COVERERS} accounts who may cover besides the layers' members")
    max_cover_days = item.get("max_cover_days", DEFAULT_MAX_COVER_DAYS)
    if isinstance(max_cover_days, bool) or not isinstance(max_cover_days, (int, Decimal)) or max_cover_days != int(max_cover_days) \
            or not 1 <= max_cover_days <= MAX_COVER_DAYS_LIMIT:
        fail("max_cover_days", f"must be a whole number of days from 1 to {MAX_COVER_DAYS_LIMIT}, got {max_cover_days!r}")
    return Schedule(
        raw_id, zone, parsed_layers, tuple(parsed),
        tuple(_member(member, f"coverers[{i}]", fail) for i, member in enumerate(coverers)),
        int(max_cover_days),
    )


def _failing(schedule_id: str) -> _Fail:
    def fail(field: str, problem: str) -> NoReturn:
        raise InvalidSchedule(schedule_id, field, problem)

    return fail


def _known_fields(value: Mapping[str, Any], known: tuple[str, ...], label: str, fail: _Fail) -> None:
    unknown = sorted(str(name) for name in set(value) - set(known))
    if unknown:
        fail(f"{label}{'.' if label else ''}{unknown[0]}", f"is not a field here (the fields are {', '.join(known)})")


def _zone(name: Any, fail: _Fail) -> zoneinfo.ZoneInfo:
    if not isinstance(name, str) or not name:
        fail("time_zone", "is required: an IANA zone such as Europe/Berlin")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name no file can have
        if not zoneinfo.available_timezones():
            fail("time_zone", f"{name!r} cannot be looked up: this machine has no time zone database (tzdata)")
        fail("time_zone", f"{name!r} is not an IANA time zone (such as Europe/Berlin or America/New_York)")


def _member(value: Any, field: str, fail: _Fail) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_MEMBER_LENGTH or value.startswith(SCHEDULE_PREFIX):
        fail(field, f"must be a person's account (a non-empty string of at most {MAX_MEMBER_LENGTH} characters, not a schedule)")
    return value


def _layer(value: Any, label: str, fail: _Fail) -> Layer:
    if not isinstance(value, Mapping):
        fail(label, "must be a layer {members, start, shift}")
    _known_fields(value, LAYER_FIELDS, label, fail)
    members = value.get("members")
    if not isinstance(members, list) or not members:
        fail(f"{label}.members", "must be a non-empty list: a rotation needs someone to rotate")
    members = tuple(_member(member, f"{label}.members[{i}]", fail) for i, member in enumerate(members))
    start = _LOCAL_TIME.parse(value.get("start"), f"{label}.start", fail)
    shift = value.get("shift")
    match = _SHIFT.fullmatch(shift) if isinstance(shift, str) else None
    amount = int(next(number for number in match.groupdict().values() if number is not None)) if match else 0
    if amount <= 0:
        fail(f"{label}.shift", f"must be an ISO 8601 duration in hours, days or weeks (PT12H, P1D, P1W), got {shift!r}")
    unit = next(name for name, number in match.groupdict().items() if number is not None)
    if amount > MAX_SHIFT // timedelta(**{unit: 1}):
        fail(f"{label}.shift", f"must be at most a year (P366D, P52W, PT8784H), got {shift!r}")
    restrictions = value.get("restrictions", [])
    if not isinstance(restrictions, list):
        fail(f"{label}.restrictions", "must be a list of {days, start, end}")
    return Layer(
        members,
        start,
        timedelta(**{unit: amount}),
        unit != "hours",
        tuple(_restriction(r, f"{label}.restrictions[{i}]", fail) for i, r in enumerate(restrictions)),
    )


def _restriction(value: Any, label: str, fail: _Fail) -> Restriction:
    if not isinstance(value, Mapping):
        fail(label, "must be a window {days, start, end}")
    _known_fields(value, RESTRICTION_FIELDS, label, fail)
    days = value.get("days")
    if not isinstance(days, list) or not days or any(day not in DAYS for day in days):
        fail(f"{label}.days", f"must be a non-empty list of {', '.join(DAYS)}")
    start = _CLOCK_TIME.parse(value.get("start"), f"{label}.start", fail)
    if start == _DAY:
        fail(f"{label}.start", "must be 00:00 to 23:59 (a window ends at 24:00, it cannot start there)")
    end = _CLOCK_TIME.parse(value.get("end"), f"{label}.end", fail)
    if start == end:
        fail(f"{label}.end", "must differ from start (an end before start runs past midnight)")
    # 24:00 is a day after 00:00, so taken modulo a day a window from 00:00 to 24:00 would have no length.
    return Restriction(frozenset(DAYS.index(day) for day in days), start, (end - start) % _DAY or _DAY)


def _override(zone: zoneinfo.ZoneInfo, value: Any, label: str, fail: _Fail) -> Override:
    if not isinstance(value, Mapping):
        fail(label, "must be an override {member, start, end}")
    _known_fields(value, OVERRIDE_FIELDS, label, fail)
    member = _member(value.get("member"), f"{label}.member", fail)
    start = _override_instant(zone, value.get("start"), f"{label}.start", fail)
    end = _override_instant(zone, value.get("end"), f"{label}.end", fail)
    if end <= start:
        fail(f"{label}.end", "must be after start")
    return Override(member, start, end)


def _override_instant(zone: zoneinfo.ZoneInfo, value: Any, field: str, fail: _Fail) -> datetime:
    written = _OVERRIDE_TIME.parse(value, field, fail)
    local = written.replace(tzinfo=None)
    if written.tzinfo is None:
        return _instant(zone, local)
    for fold in (0, 1):
        if local.replace(tzinfo=zone, fold=fold).utcoffset() == written.utcoffset():
            return _instant(zone, local.replace(fold=fold))
    fail(field, f"has the offset {value[16:]}, which {zone.key} does not have at {value[:16]}")


def _instant(zone: zoneinfo.ZoneInfo, local: datetime) -> datetime:
    try:
        return min(local.replace(tzinfo=zone).astimezone(timezone.utc), FOREVER)
    except OverflowError:  # past the last datetime in UTC: 9999-12-31T23:59 west of Greenwich
        return FOREVER


def stored_time(instant: datetime, zone: zoneinfo.ZoneInfo) -> str:
    """An instant as an override writes it: local YYYY-MM-DDTHH:MM, with the offset only when that local
    time happens twice (the hour the clocks repeat in autumn), so that it reads back as this instant."""
    local = instant.astimezone(zone)
    text = f"{local:%Y-%m-%dT%H:%M}"
    if local.replace(fold=1 - local.fold).utcoffset() == local.utcoffset():
        return text
    offset = local.strftime("%z")
    return f"{text}{offset[:3]}:{offset[3:]}"


def local_text(instant: datetime, zone: zoneinfo.ZoneInfo) -> str:
    """An instant as people of the schedule read it: ``Mon 2026-11-02 09:00 CET``."""
    local = instant.astimezone(zone)
    return f"{DAYS[local.weekday()].title()} {local:%Y-%m-%d %H:%M} {local.tzname()}"

