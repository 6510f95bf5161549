"""On-call schedules as invariants over generated items and instants (Hypothesis), beside the hand-computed
cases of test_oncall_runtime.py.

Issue 38: nothing the parser is given raises anything but ``InvalidSchedule``, and nothing a parsed
schedule is asked raises at all; a failure here prints the smallest item and instant that break it.
Issue 41's rules, as stated there (and in docs/on-call-schedules.md): the shifts of a layer follow one
another without gap or overlap; a later layer wins wherever it has someone; an override wins over every
layer; a day or week shift hands off at the same local wall-clock time across a daylight-saving change.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from hypothesis import assume, given
from hypothesis import strategies as st

from patterns_common.oncall import LATEST, InvalidSchedule, Schedule, parse_schedule, within
from tests.property_profiles import PROPERTY

UTC = timezone.utc
MEMBERS = ("U0AAAAAA1", "U0BBBBBB2", "U0CCCCCC3", "U0DDDDDD4")
# The zones at the edges of the offsets (UTC-12, UTC+14), half and quarter hours, a 30-minute
# daylight-saving change (Lord Howe), and the zones of the hand-computed tests.
ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Pacific/Kiritimati", "Etc/GMT+12",
         "Australia/Lord_Howe", "America/St_Johns", "Asia/Kathmandu", "Australia/Sydney", "Europe/London")
# Zones whose clocks change only between 00:00 and 04:00 local: a handoff from 04:00 on is never skipped or repeated.
DST_ZONES = ("Europe/Berlin", "America/New_York", "Australia/Sydney", "Europe/London", "Australia/Lord_Howe")
DAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")

junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.decimals() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


def _local_text(moment: datetime) -> str:
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:{moment.minute:02d}"


local_times = (
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59)).map(_local_text)
    | st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 31)).map(_local_text)
    | st.sampled_from(["9999-12-31T23:59", "1970-01-01T00:00", "0001-01-01T00:00", "2026-11-01T01:30",
                       "2026-03-08T02:30", "2026-10-25T02:30", "2026-02-30T09:00", "2026-11-02T24:00"])
)
offsets = st.sampled_from(["", "", "-04:00", "-05:00", "+01:00", "+02:00", "+14:00", "-12:00", "+99:99"])
shifts = (
    st.builds(lambda n, unit: f"PT{n}H" if unit == "H" else f"P{n}{unit}",
              st.integers(0, 400) | st.integers(0, 10**12), st.sampled_from(["H", "D", "W"]))
    | st.sampled_from(["P1M", "PT30M", "P1DT12H", "P9999999999D", "P366D", "P52W", "PT8784H"])
)
clock_times = st.builds(lambda h, m: f"{h:02d}:{m:02d}", st.integers(0, 25), st.integers(0, 60))
members = st.sampled_from(MEMBERS) | st.sampled_from(["", " ", "schedule:other", "x" * 255]) | junk
restrictions = st.fixed_dictionaries(
    {"days": st.lists(st.sampled_from(DAYS), min_size=1, max_size=7, unique=True) | junk,
     "start": clock_times | junk, "end": clock_times | junk})
layers = st.fixed_dictionaries(
    {"members": st.lists(members, max_size=3) | junk, "start": local_times | junk, "shift": shifts | junk},
    optional={"restrictions": st.lists(restrictions, max_size=2) | junk, "shfit": junk})
overrides = st.fixed_dictionaries(
    {"member": members,
     "start": st.builds(str.__add__, local_times, offsets) | junk,
     "end": st.builds(str.__add__, local_times, offsets) | junk})
items = st.fixed_dictionaries(
    {"schedule_id": st.sampled_from(["primary", "team.b-2"]) | st.text(max_size=70) | junk,
     "time_zone": st.sampled_from(ZONES) | st.sampled_from(["Europe/Berln", "../etc/passwd", "", "America"]) | junk,
     "layers": st.lists(layers | junk, max_size=3) | junk},
    optional={"overrides": st.lists(overrides | junk, max_size=3) | junk,
              "coverers": st.lists(members, max_size=2) | junk,
              "max_cover_days": st.integers(-1, 400) | st.decimals() | junk,
              "overides": junk},
) | junk
instants = (
    st.datetimes(timezones=st.just(UTC))
    | st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2028, 1, 1), timezones=st.just(UTC))
    | st.sampled_from([datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)])
)

# Items that parse, for the rules about who is on call (a parser that refused everything would pass the above).
valid_starts = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1)).map(_local_text)
valid_layers = st.fixed_dictionaries(
    {"members": st.lists(st.sampled_from(MEMBERS), min_size=1, max_size=3), "start": valid_starts,
     "shift": st.builds(lambda n, unit: f"PT{n}H" if unit == "H" else f"P{n}{unit}",
                        st.integers(1, 30), st.sampled_from(["H", "D", "W"]))},
    optional={"restrictions": st.lists(st.fixed_dictionaries(
        {"days": st.lists(st.sampled_from(DAYS), min_size=1, max_size=7, unique=True),
         "start": st.builds(lambda h, m: f"{h:02d}:{m:02d}", st.integers(0, 23), st.sampled_from([0, 30])),
         "end": st.builds(lambda h, m: f"{h:02d}:{m:02d}", st.integers(0, 24), st.sampled_from([0, 30]))},
    ).filter(lambda window: window["start"] != window["end"] and window["end"] != "24:30"), max_size=2)})
valid_instants = st.datetimes(min_value=datetime(2019, 1, 1), max_value=datetime(2031, 1, 1), timezones=st.just(UTC))


# Items at the edges of what parses: any year from 1970, the longest shifts, 24:00, offsets, "until further notice".
edge_times = (
    st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31, 23, 59)).map(_local_text)
    | st.sampled_from(["9999-12-31T23:59", "1970-01-01T00:00", "2026-11-01T01:30", "2026-03-08T02:30",
                       "2026-10-25T02:30", "9999-12-31T00:00"])
)
edge_layers = st.fixed_dictionaries(
    {"members": st.lists(st.sampled_from(MEMBERS), min_size=1, max_size=3), "start": edge_times,
     "shift": st.sampled_from(["PT1H", "P1D", "P1W", "P366D", "P52W", "PT8784H", "PT7H", "P3D"])},
    optional={"restrictions": st.lists(st.fixed_dictionaries(
        {"days": st.lists(st.sampled_from(DAYS), min_size=1, max_size=7, unique=True),
         "start": st.sampled_from(["00:00", "09:00", "22:00", "23:59"]),
         "end": st.sampled_from(["24:00", "06:00", "17:00", "00:01"])}), max_size=2)})
edge_items = st.fixed_dictionaries(
    {"schedule_id": st.just("primary"), "time_zone": st.sampled_from(ZONES),
     "layers": st.lists(edge_layers, min_size=1, max_size=3)},
    optional={"overrides": st.lists(st.fixed_dictionaries(
        {"member": st.sampled_from(MEMBERS), "start": st.builds(str.__add__, edge_times, offsets),
         "end": st.builds(str.__add__, edge_times, offsets)}), max_size=1)},
)


def _parsed_or_none(item) -> Schedule | None:
    try:
        return parse_schedule(item)
    except InvalidSchedule:
        return None


@st.composite
def valid_schedules(draw, with_overrides: bool = True) -> Schedule:
    zone = draw(st.sampled_from(ZONES))
    item = {"schedule_id": "primary", "time_zone": zone, "layers": draw(st.lists(valid_layers, min_size=1, max_size=3))}
    if with_overrides:
        # Consecutive windows, so they never overlap; the last may run until further notice.
        edges = sorted(draw(st.lists(valid_starts, min_size=0, max_size=4, unique=True)))
        windows = list(zip(edges[::2], edges[1::2]))
        if draw(st.booleans()) and windows:
            windows[-1] = (windows[-1][0], "9999-12-31T23:59")
        item["overrides"] = [{"member": draw(st.sampled_from(MEMBERS)), "start": s, "end": e} for s, e in windows]
    schedule = _parsed_or_none(item)
    assume(schedule is not None)  # a window may be empty where a spring gap folds its two ends together
    return schedule


def _fortnight(at: datetime) -> datetime:
    try:
        return at + timedelta(days=14)
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


@PROPERTY
@given(items)
def test_the_parser_refuses_with_invalid_schedule_only(item):
    try:
        parse_schedule(item)
    except InvalidSchedule as invalid:
        assert str(invalid).startswith("schedule ")


@PROPERTY
@given(edge_items, instants)
def test_a_parsed_schedule_answers_any_instant_without_raising(item, at):
    schedule = _parsed_or_none(item)
    assume(schedule is not None)
    someone = {*schedule.members(), *(override.member for override in schedule.overrides)}
    assert schedule.on_call(at) in someone | {None}
    end = _fortnight(at)
    found = schedule.shifts(at, end)
    if within(at) == within(end):  # both outside the instants a schedule answers for, on the same side
        assert found == []
        return
    # The shifts run from the first instant asked to the last, one after another, merged where nobody changes
    assert _utc(found[0].start) == _utc(within(at)) and _utc(found[-1].end) == _utc(within(end))
    assert all(_utc(earlier.end) == _utc(later.start) for earlier, later in zip(found, found[1:]))
    assert all(earlier.member != later.member for earlier, later in zip(found, found[1:]))


@PROPERTY
@given(valid_schedules(), valid_instants)
def test_the_final_schedule_is_consecutive_shifts_each_naming_who_is_on_call(schedule, at):
    found = schedule.shifts(at, at + timedelta(days=14))
    assert _utc(found[0].start) == at and _utc(found[-1].end) == at + timedelta(days=14)
    for shift in found:
        assert all(_utc(earlier.end) == _utc(later.start) for earlier, later in zip(found, found[1:]))
        assert schedule.on_call(shift.start) == shift.member
        assert schedule.on_call(_utc(shift.end) - timedelta(microseconds=1)) == shift.member


def _utc(moment: datetime) -> datetime:
    """``moment`` in UTC, to compare and subtract: a shift's ends are in the schedule's zone, where Python
    compares and subtracts wall-clock times (one before a handoff at the end of a skipped hour does not
    exist, as on Lord Howe's 30-minute spring change), and an ambiguous autumn hour never equals an
    instant of another zone (PEP 495), though it names the same instant."""
    return moment.astimezone(UTC)


@PROPERTY
@given(valid_layers, st.sampled_from(ZONES), valid_instants)
def test_the_shifts_of_a_layer_follow_one_another_without_gap_or_overlap(layer, zone, at):
    layer = {key: value for key, value in layer.items() if key != "restrictions"}
    schedule = parse_schedule({"schedule_id": "primary", "time_zone": zone, "layers": [layer]})
    [parsed] = schedule.layers
    n = schedule.shift_index(parsed, at)
    # Exactly one shift holds any instant: the one from its handoff to the next
    assert schedule.handoff(parsed, n) <= at < schedule.handoff(parsed, n + 1)
    assert schedule.handoff(parsed, n - 1) < schedule.handoff(parsed, n)
    assert schedule.shift_index(parsed, schedule.handoff(parsed, n + 1)) == n + 1


@PROPERTY
@given(st.lists(valid_layers, min_size=2, max_size=3), st.sampled_from(ZONES), valid_instants)
def test_a_later_layer_wins_wherever_it_has_someone(layer_items, zone, at):
    def alone(chosen):
        return parse_schedule({"schedule_id": "primary", "time_zone": zone, "layers": chosen})

    # Each layer on its own, the last first: the first that has someone is who the whole schedule pages
    expected = next((m for m in (alone([layer]).on_call(at) for layer in reversed(layer_items)) if m is not None), None)
    assert alone(layer_items).on_call(at) == expected


@PROPERTY
@given(valid_schedules(), st.floats(0, 1))
def test_an_override_wins_over_every_layer(schedule, fraction):
    assume(schedule.overrides)
    override = schedule.overrides[0]
    assume(override.start <= LATEST)
    end = min(override.end, LATEST)
    at = override.start + (end - override.start) * fraction
    assume(at < end)
    assert schedule.on_call(at) == override.member


@PROPERTY
@given(st.sampled_from(DST_ZONES), st.integers(4, 23), st.sampled_from([0, 15, 30, 45]),
       st.sampled_from(["P1D", "P2D", "P7D", "P1W", "P2W"]), st.integers(0, 2000))
def test_a_day_or_week_shift_hands_off_at_the_same_local_time_across_daylight_saving(zone, hour, minute, shift, n):
    schedule = parse_schedule({"schedule_id": "primary", "time_zone": zone,
                               "layers": [{"members": list(MEMBERS), "start": f"2024-01-01T{hour:02d}:{minute:02d}",
                                           "shift": shift}]})
    [layer] = schedule.layers
    # Over about 5 to 75 years of handoffs, through every spring and autumn change in them
    for handoff in (schedule.handoff(layer, n), schedule.handoff(layer, n + 1)):
        local = handoff.astimezone(ZoneInfo(zone))
        assert (local.hour, local.minute) == (hour, minute)

