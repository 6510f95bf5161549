"""On-call schedules (patterns_common.oncall): who is on call, the shifts, and the schedules refused.

Every expected member was worked out by hand from the rules of issue 31 ("member k holds shift n where
k = n mod len(members)"; day and week shifts hand off at the same local time, hour shifts after elapsed
hours; a later layer wins where it has someone; an override wins over every layer) and the zones'
daylight-saving dates:
- Europe/Berlin (EU Directive 2000/84/EC: summer time from 01:00 UTC on the last Sunday of March to
  01:00 UTC on the last Sunday of October): 2026-03-29 02:00 CET -> 03:00 CEST, 2026-10-25 03:00 CEST
  -> 02:00 CET.
- America/New_York (US Energy Policy Act of 2005: 02:00 local on the second Sunday of March to 02:00
  on the first Sunday of November): 2026-03-08 02:00 EST -> 03:00 EDT, 2026-11-01 02:00 EDT -> 01:00 EST.
"""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal

import pytest

from patterns_common.oncall import InvalidSchedule, parse_schedule, schedule_id_of

A, B, C, D, E = "U0AAAAAA1", "U0BBBBBB2", "U0CCCCCC3", "U0DDDDDD4", "U0EEEEEE5"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def schedule(zone: str, *layers: dict, overrides: list | None = None, schedule_id: str = "primary"):
    item = {"schedule_id": schedule_id, "time_zone": zone, "layers": list(layers)}
    if overrides is not None:
        item["overrides"] = overrides
    return parse_schedule(item)


def test_the_issues_example_schedule_pages_the_override_on_christmas_day():
    # Given the schedule exactly as issue 31 writes it
    primary = parse_schedule(
        {"schedule_id": "primary", "time_zone": "Europe/Berlin",
         "layers": [
             {"members": [A, B], "start": "2026-11-02T09:00", "shift": "P7D"},
             {"members": [C], "start": "2026-11-02T09:00", "shift": "P1D",
              "restrictions": [{"days": ["MON", "TUE", "WED", "THU", "FRI"], "start": "09:00", "end": "17:00"}]}],
         "overrides": [{"member": D, "start": "2026-12-24T18:00", "end": "2026-12-27T09:00"}]}
    )
    # Then: Fri 2026-12-25 12:00 CET is inside the override; Mon 2026-11-02 08:00 CET is before every layer;
    # Tue 2026-11-03 10:00 CET is C's business hours; Tue 18:00 CET is layer 0's week 0, A.
    assert primary.on_call(utc("2026-12-25T11:00")) == D
    assert primary.on_call(utc("2026-11-02T07:00")) is None
    assert primary.on_call(utc("2026-11-03T09:00")) == C
    assert primary.on_call(utc("2026-11-03T17:00")) == A
    # Mon 2026-11-09 18:00 CET: week 1, B.
    assert primary.on_call(utc("2026-11-09T17:00")) == B


def test_a_day_shift_across_berlins_spring_change_lasts_23_hours():
    # Given daily handoffs at 09:00 Berlin from Fri 2026-03-27 (A, B, A, ...)
    rota = schedule("Europe/Berlin", {"members": [A, B], "start": "2026-03-27T09:00", "shift": "P1D"})
    # Then B's shift runs Sat 09:00 CET (08:00 UTC) to Sun 09:00 CEST (07:00 UTC): 23 hours
    assert rota.on_call(utc("2026-03-28T08:00")) == B
    assert rota.on_call(utc("2026-03-29T06:59")) == B
    assert rota.on_call(utc("2026-03-29T07:00")) == A  # 24 elapsed hours would still be B's
    shifts = rota.shifts(utc("2026-03-28T08:00"), utc("2026-03-30T07:00"))
    assert [(s.member, s.start.isoformat(), s.end.isoformat()) for s in shifts] == [
        (B, "2026-03-28T09:00:00+01:00", "2026-03-29T09:00:00+02:00"),
        (A, "2026-03-29T09:00:00+02:00", "2026-03-30T09:00:00+02:00"),
    ]


def test_a_day_shift_across_berlins_autumn_change_lasts_25_hours():
    # Given daily handoffs at 09:00 Berlin from Fri 2026-10-23: B holds Sat 2026-10-24
    rota = schedule("Europe/Berlin", {"members": [A, B], "start": "2026-10-23T09:00", "shift": "P1D"})
    # Then B hands over on Sun at 09:00 CET, 08:00 UTC: 25 hours after Sat 09:00 CEST (07:00 UTC)
    assert rota.on_call(utc("2026-10-24T07:00")) == B
    assert rota.on_call(utc("2026-10-25T07:59")) == B
    assert rota.on_call(utc("2026-10-25T08:00")) == A


def test_hour_shifts_across_new_yorks_spring_change_are_elapsed_hours():
    # Given 12-hour shifts from Sat 2026-03-07 20:00 EST (01:00 UTC on the 8th)
    rota = schedule("America/New_York", {"members": [A, B], "start": "2026-03-07T20:00", "shift": "PT12H"})
    # Then A hands over 12 elapsed hours later, 13:00 UTC, which is 09:00 EDT (not 08:00 wall clock)
    assert rota.on_call(utc("2026-03-08T12:30")) == A  # 08:30 EDT
    assert rota.on_call(utc("2026-03-08T13:00")) == B
    assert rota.on_call(utc("2026-03-09T01:00")) == A  # 24 elapsed hours


def test_a_week_shift_across_new_yorks_autumn_change_hands_off_at_the_same_local_time():
    # Given weekly handoffs on Mondays 09:00 New York from 2026-10-26 (EDT, 13:00 UTC)
    rota = schedule("America/New_York", {"members": [A, B, C], "start": "2026-10-26T09:00", "shift": "P1W"})
    # Then the next handoff is Mon 2026-11-02 09:00 EST, 14:00 UTC: a week and an hour later
    assert rota.on_call(utc("2026-11-02T13:30")) == A
    assert rota.on_call(utc("2026-11-02T14:00")) == B
    assert rota.on_call(utc("2026-11-09T14:00")) == C
    assert rota.on_call(utc("2026-11-16T14:00")) == A  # shift 3, 3 mod 3 = 0
    assert rota.on_call(utc("2026-10-26T12:59")) is None  # before its start a layer has no one


THREE_LAYERS = (
    # Layer 0: a weekly rotation, Mondays 09:00.
    {"members": [A, B], "start": "2026-11-02T09:00", "shift": "P1W"},
    # Layer 1: C in business hours.
    {"members": [C], "start": "2026-11-02T09:00", "shift": "P1D",
     "restrictions": [{"days": ["MON", "TUE", "WED", "THU", "FRI"], "start": "09:00", "end": "17:00"}]},
    # Layer 2: D and E, daily at midnight, only on the night from Friday 22:00 to Saturday 06:00.
    {"members": [D, E], "start": "2026-11-02T00:00", "shift": "P1D",
     "restrictions": [{"days": ["FRI"], "start": "22:00", "end": "06:00"}]},
)


@pytest.mark.parametrize(
    ("instant", "member", "why"),
    [
        ("2026-11-04T09:00", C, "Wed 10:00 CET: business hours, layer 1 wins over layer 0"),
        ("2026-11-04T17:00", A, "Wed 18:00 CET: layer 1 restricted, layer 0 week 0"),
        ("2026-11-05T22:00", A, "Thu 23:00 CET: the overnight window is Friday's only"),
        ("2026-11-06T21:00", D, "Fri 22:00 CET: layer 2's window opens; day 4 since Nov 2, 4 mod 2 = 0"),
        ("2026-11-07T04:00", E, "Sat 05:00 CET: Friday's window past midnight; day 5, 5 mod 2 = 1"),
        ("2026-11-07T05:00", A, "Sat 06:00 CET: the window has closed; no business hours on Saturday"),
        ("2026-11-09T07:00", A, "Mon 08:00 CET: week 0 until 09:00"),
        ("2026-11-09T08:30", C, "Mon 09:30 CET: business hours"),
        ("2026-11-09T16:30", B, "Mon 17:30 CET: week 1"),
    ],
)
def test_three_layers_with_business_hours_and_an_overnight_window(instant, member, why):
    assert schedule("Europe/Berlin", *THREE_LAYERS).on_call(utc(instant)) == member, why


def test_the_shifts_of_three_layers_from_friday_afternoon_to_saturday_morning():
    # When the final schedule of Fri 16:00 to Sat 08:00 CET is listed
    shifts = schedule("Europe/Berlin", *THREE_LAYERS).shifts(utc("2026-11-06T15:00"), utc("2026-11-07T07:00"))
    # Then each person's time, in the schedule's zone
    assert [(s.member, s.start.strftime("%a %H:%M"), s.end.strftime("%a %H:%M")) for s in shifts] == [
        (C, "Fri 16:00", "Fri 17:00"),
        (A, "Fri 17:00", "Fri 22:00"),
        (D, "Fri 22:00", "Sat 00:00"),
        (E, "Sat 00:00", "Sat 06:00"),
        (A, "Sat 06:00", "Sat 08:00"),
    ]


def test_a_gap_is_a_shift_with_nobody():
    # Given business hours only: nobody from 17:00 to 09:00
    hours = schedule("Europe/Berlin", THREE_LAYERS[1])
    shifts = hours.shifts(utc("2026-11-04T15:00"), utc("2026-11-05T09:00"))
    assert [(s.member, s.start.strftime("%H:%M"), s.end.strftime("%H:%M")) for s in shifts] == [
        (C, "16:00", "17:00"),
        (None, "17:00", "09:00"),
        (C, "09:00", "10:00"),
    ]
    assert hours.on_call(utc("2026-11-04T20:00")) is None


def test_an_override_wins_over_every_layer_from_its_start_to_its_end():
    # Given D covers 2026-12-24 18:00 to 2026-12-27 09:00 Berlin, and E the day after (adjacent is no overlap)
    covered = schedule(
        "Europe/Berlin", *THREE_LAYERS,
        overrides=[{"member": D, "start": "2026-12-24T18:00", "end": "2026-12-27T09:00"},
                   {"member": E, "start": "2026-12-27T09:00", "end": "2026-12-28T09:00"}],
    )
    # Thu 17:59 CET: after business hours; Mon 2026-12-21 began week 7 of layer 0, 7 mod 2 = 1
    assert covered.on_call(utc("2026-12-24T16:59")) == B
    assert covered.on_call(utc("2026-12-24T17:00")) == D  # 18:00 CET
    assert covered.on_call(utc("2026-12-25T10:00")) == D  # Friday business hours: the override still wins
    assert covered.on_call(utc("2026-12-27T08:00")) == E  # 09:00 CET, the second override
    assert covered.on_call(utc("2026-12-28T08:00")) == C  # Mon 09:00 CET: business hours again


def test_overlapping_overrides_are_refused_naming_the_schedule_and_the_override():
    with pytest.raises(InvalidSchedule, match=r"^schedule 'primary', overrides\[1\]: overlaps overrides\[0\]"):
        schedule(
            "Europe/Berlin", THREE_LAYERS[0],
            overrides=[{"member": D, "start": "2026-12-24T18:00", "end": "2026-12-27T09:00"},
                       {"member": E, "start": "2026-12-26T09:00", "end": "2026-12-28T09:00"}],
        )


GOOD = {"schedule_id": "primary", "time_zone": "Europe/Berlin",
        "layers": [{"members": [A], "start": "2026-11-02T09:00", "shift": "P1D"}]}


def _with(**changes):
    layer = {**GOOD["layers"][0], **changes.pop("layer", {})}
    return {**GOOD, "layers": [layer], **changes}


@pytest.mark.parametrize(
    ("item", "field"),
    [
        (_with(time_zone="Europe/Berln"), "time_zone"),
        (_with(time_zone="+01:00"), "time_zone"),
        (_with(layers=[]), "layers"),
        (_with(layer={"members": []}), r"layers\[0\]\.members"),
        (_with(layer={"members": ["schedule:other"]}), r"layers\[0\]\.members\[0\]"),
        (_with(layer={"start": "2026-11-02 09:00"}), r"layers\[0\]\.start"),
        (_with(layer={"start": "2026-11-02T09:00+01:00"}), r"layers\[0\]\.start"),
        (_with(layer={"start": "2026-02-30T09:00"}), r"layers\[0\]\.start"),
        (_with(layer={"shift": "P1M"}), r"layers\[0\]\.shift"),
        (_with(layer={"shift": "PT30M"}), r"layers\[0\]\.shift"),
        (_with(layer={"shift": "P1DT12H"}), r"layers\[0\]\.shift"),
        (_with(layer={"shift": "P0D"}), r"layers\[0\]\.shift"),
        (_with(layer={"shfit": "P1D"}), r"layers\[0\]\.shfit"),
        (_with(layer={"restrictions": [{"days": ["MONDAY"], "start": "09:00", "end": "17:00"}]}),
         r"layers\[0\]\.restrictions\[0\]\.days"),
        (_with(layer={"restrictions": [{"days": ["MON"], "start": "9:00", "end": "17:00"}]}),
         r"layers\[0\]\.restrictions\[0\]\.start"),
        (_with(layer={"restrictions": [{"days": ["MON"], "start": "09:00", "end": "09:00"}]}),
         r"layers\[0\]\.restrictions\[0\]\.end"),
        (_with(overrides=[{"member": A, "start": "2026-12-27T09:00", "end": "2026-12-24T18:00"}]), r"overrides\[0\]\.end"),
    ],
)
def test_an_unusable_schedule_is_refused_naming_the_schedule_and_the_field(item, field):
    with pytest.raises(InvalidSchedule, match=rf"^schedule 'primary', {field}: "):
        parse_schedule(item)


def test_a_schedule_target_names_its_schedule_and_an_account_names_none():
    assert schedule_id_of("schedule:primary") == "primary"
    assert schedule_id_of("U0AAAAAA1") is None


# Issue 38: an item that used to raise OverflowError (and page nobody) is either read or refused naming the field.
# The zones' offsets at the end of 9999 follow their current rules (tzdata's POSIX TZ string): New York EST
# (UTC-5), Tokyo JST (UTC+9), Kiritimati +14, Etc/GMT+12 UTC-12 (the sign of Etc zones is POSIX's, reversed).
@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Tokyo", "Pacific/Kiritimati", "Etc/GMT+12", "UTC"])
def test_an_override_until_9999_12_31_23_59_is_until_further_notice_in_every_zone(zone):
    # Given: D covers from Thu 2026-11-05 09:00 "until further notice"
    covered = schedule(zone, {"members": [A, B], "start": "2026-11-02T09:00", "shift": "P1D"},
                       overrides=[{"member": D, "start": "2026-11-05T09:00", "end": "9999-12-31T23:59"}])
    start = covered.instant(datetime(2026, 11, 5, 9, 0))
    # Then: D is on call from then on, in every shift listing and at any later instant
    assert covered.on_call(start) == D
    assert covered.on_call(datetime(2030, 1, 1, tzinfo=timezone.utc)) == D
    assert covered.on_call(datetime.max.replace(tzinfo=timezone.utc)) == D
    [only] = covered.shifts(start, start.replace(year=2027))
    assert only.member == D
    # And before it the rotation: Wed 2026-11-04 12:00 local is shift 2 (09:00 Mon is shift 0), A
    assert covered.on_call(covered.instant(datetime(2026, 11, 4, 12, 0))) == A


@pytest.mark.parametrize(
    ("shift", "accepted"),
    [("P9999999999D", False), ("P367D", False), ("P53W", False), ("PT8785H", False),
     ("P366D", True), ("P52W", True), ("PT8784H", True)],
)
def test_a_shift_is_at_most_a_year(shift, accepted):
    item = _with(layer={"shift": shift})
    if accepted:
        long = parse_schedule(item)
        # shift 0 from Mon 2026-11-02 09:00 holds the one member, shift 1 begins a year on
        assert long.on_call(utc("2027-06-01T00:00")) == A
        return
    with pytest.raises(InvalidSchedule, match=r"^schedule 'primary', layers\[0\]\.shift: must be at most a year"):
        parse_schedule(item)


@pytest.mark.parametrize("start", ["0001-01-01T00:00", "1969-12-31T23:59"])
def test_a_local_time_before_1970_is_refused_naming_the_field(start):
    with pytest.raises(InvalidSchedule, match=r"^schedule 'primary', layers\[0\]\.start: must be a local time .* from 1970"):
        parse_schedule(_with(time_zone="Asia/Tokyo", layer={"start": start}))


def test_a_layer_starting_in_9999_has_nobody_until_then_and_never_raises():
    late = parse_schedule(_with(time_zone="America/New_York", layer={"start": "9999-12-31T23:00", "shift": "PT1H"}))
    assert late.on_call(utc("2026-11-05T09:00")) is None
    assert late.on_call(datetime.max.replace(tzinfo=timezone.utc)) is None
    assert [s.member for s in late.shifts(utc("2026-11-05T09:00"), utc("2026-11-19T09:00"))] == [None]


WHOLE_DAYS = {"days": ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"], "start": "00:00", "end": "24:00"}


def test_a_restriction_to_24_00_covers_the_whole_day_with_no_minute_for_the_layer_below():
    # Given: A weekly below, C every whole day above (issue 38: 00:00-23:59 left A on call 23:59-00:00)
    both = schedule("Europe/Berlin", {"members": [A], "start": "2026-11-02T09:00", "shift": "P7D"},
                    {"members": [C], "start": "2026-11-02T09:00", "shift": "P7D", "restrictions": [WHOLE_DAYS]})
    # Then: C at 23:59:30 and at midnight CET, and one shift with no break from Tue 00:00 to Fri 00:00
    assert both.on_call(utc("2026-11-03T22:59:30")) == C
    assert both.on_call(utc("2026-11-03T23:00")) == C
    assert [(s.member, s.start, s.end) for s in both.shifts(utc("2026-11-02T23:00"), utc("2026-11-05T23:00"))] == [
        (C, utc("2026-11-02T23:00"), utc("2026-11-05T23:00"))]


def test_a_restriction_to_24_00_on_one_day_ends_at_the_next_midnight():
    # Sat 2026-11-07 00:00-24:00 CET is 2026-11-06T23:00Z to 2026-11-07T23:00Z
    weekend = schedule("Europe/Berlin", {"members": [C], "start": "2026-11-02T09:00", "shift": "P7D",
                                         "restrictions": [{"days": ["SAT"], "start": "00:00", "end": "24:00"}]})
    assert weekend.on_call(utc("2026-11-06T22:59")) is None
    assert weekend.on_call(utc("2026-11-06T23:00")) == C
    assert weekend.on_call(utc("2026-11-07T22:59:59")) == C
    assert weekend.on_call(utc("2026-11-07T23:00")) is None


def test_a_restriction_ending_in_the_repeated_autumn_hour_ends_at_both_of_its_passes():
    # Europe/London on 2026-10-25: 01:00-02:00 happens twice, first BST (UTC+1), then GMT. A window to
    # 01:30 wall clock (Restriction.covers) is left at 00:30Z and entered again at 01:00Z for the second
    # pass, to 01:30Z. Found by the explore profile (Hypothesis): the shifts listed the second pass
    # until the next hourly handoff at 02:00Z, which on_call, and so the page, did not.
    night = schedule("Europe/London", {"members": [A], "start": "2026-01-01T00:00", "shift": "PT1H",
                                       "restrictions": [{"days": ["SUN"], "start": "00:00", "end": "01:30"}]})
    found = night.shifts(utc("2026-10-24T22:00"), utc("2026-10-25T03:00"))
    # (compared in UTC: an ambiguous local time never equals an instant of another zone, PEP 495)
    assert [(s.member, s.start.astimezone(timezone.utc), s.end.astimezone(timezone.utc)) for s in found] == [
        (None, utc("2026-10-24T22:00"), utc("2026-10-24T23:00")),
        (A, utc("2026-10-24T23:00"), utc("2026-10-25T00:30")),
        (None, utc("2026-10-25T00:30"), utc("2026-10-25T01:00")),
        (A, utc("2026-10-25T01:00"), utc("2026-10-25T01:30")),
        (None, utc("2026-10-25T01:30"), utc("2026-10-25T03:00")),
    ]
    assert night.on_call(utc("2026-10-25T01:29:59")) == A and night.on_call(utc("2026-10-25T01:30")) is None


@pytest.mark.parametrize(("start", "end"), [("24:00", "06:00"), ("09:00", "24:01"), ("09:00", "25:00")])
def test_a_restriction_starts_before_24_00_and_ends_by_it(start, end):
    field = "start" if start == "24:00" else "end"
    item = _with(layer={"restrictions": [{"days": ["MON"], "start": start, "end": end}]})
    with pytest.raises(InvalidSchedule, match=rf"^schedule 'primary', layers\[0\]\.restrictions\[0\]\.{field}: "):
        parse_schedule(item)


# America/New_York on 2026-11-01: 01:00-02:00 happens twice, first EDT (UTC-4), then EST (UTC-5).
@pytest.mark.parametrize(("written", "instant"), [
    ("2026-11-01T01:30", "2026-11-01T05:30"),  # no offset: the first occurrence
    ("2026-11-01T01:30-04:00", "2026-11-01T05:30"),
    ("2026-11-01T01:30-05:00", "2026-11-01T06:30"),
])
def test_an_override_time_in_the_repeated_autumn_hour_names_its_occurrence_by_its_offset(written, instant):
    covered = schedule("America/New_York", {"members": [A], "start": "2026-10-01T09:00", "shift": "P7D"},
                       overrides=[{"member": D, "start": "2026-10-31T09:00", "end": written}])
    assert covered.overrides[0].end == utc(instant)


def test_an_offset_the_zone_does_not_have_then_is_refused_naming_the_field():
    with pytest.raises(InvalidSchedule, match=r"^schedule 'primary', overrides\[0\]\.end: has the offset -05:00"):
        schedule("America/New_York", {"members": [A], "start": "2026-10-01T09:00", "shift": "P7D"},
                 overrides=[{"member": D, "start": "2026-10-31T09:00", "end": "2026-10-31T12:00-05:00"}])


@pytest.mark.parametrize(("instant", "zone", "stored"), [
    ("2026-11-01T05:30", "America/New_York", "2026-11-01T01:30-04:00"),
    ("2026-11-01T06:30", "America/New_York", "2026-11-01T01:30-05:00"),
    ("2026-11-05T14:00", "America/New_York", "2026-11-05T09:00"),
    # Europe/Berlin on 2026-10-25: 02:00-03:00 twice, CEST (+02:00) then CET (+01:00)
    ("2026-10-25T01:15", "Europe/Berlin", "2026-10-25T02:15+01:00"),
    ("2026-10-25T00:15", "Europe/Berlin", "2026-10-25T02:15+02:00"),
])
def test_a_stored_time_reads_back_as_the_same_instant(instant, zone, stored):
    from zoneinfo import ZoneInfo

    from patterns_common.oncall import stored_time

    assert stored_time(utc(instant), ZoneInfo(zone)) == stored
    covered = schedule(zone, {"members": [A], "start": "2026-10-01T09:00", "shift": "P7D"},
                       overrides=[{"member": D, "start": "2026-10-20T09:00", "end": stored}])
    assert covered.overrides[0].end == utc(instant)


@pytest.mark.parametrize(("changes", "field"), [
    ({"max_cover_days": 0}, "max_cover_days"),
    ({"max_cover_days": 367}, "max_cover_days"),
    ({"max_cover_days": True}, "max_cover_days"),
    ({"max_cover_days": "7"}, "max_cover_days"),
    ({"max_cover_days": 1.5}, "max_cover_days"),
    ({"coverers": "U0EEEEEE5"}, "coverers"),
    ({"coverers": ["schedule:other"]}, r"coverers\[0\]"),
])
def test_who_may_cover_and_for_how_long_are_refused_naming_the_field(changes, field):
    with pytest.raises(InvalidSchedule, match=rf"^schedule 'primary', {field}: "):
        parse_schedule(_with(**changes))


def test_who_may_cover_and_for_how_long_are_read_as_dynamodb_gives_them():
    from decimal import Decimal

    read = parse_schedule(_with(coverers=[E], max_cover_days=Decimal(30)))
    assert (read.coverers, read.max_cover_days, read.members()) == ((E,), 30, frozenset({A}))
    assert parse_schedule(GOOD).max_cover_days == 14


def test_shifts_asked_up_to_a_time_of_the_repeated_hour_in_the_zone_have_no_empty_shift():
    # 2026-11-01T06:00Z is 01:00 EST, the second 01:00 in New York (fold 1), and a handoff; PEP 495 makes it
    # unequal to 06:00 UTC, so the edges held the instant twice and a zero-length shift came out last
    from zoneinfo import ZoneInfo

    hourly = schedule("America/New_York", {"members": [A, B], "start": "2026-10-31T00:00", "shift": "PT1H"})
    second = utc("2026-11-01T06:00").astimezone(ZoneInfo("America/New_York"))
    assert second.fold == 1
    found = hourly.shifts(utc("2026-11-01T04:00"), second)
    # hour shifts from 2026-10-31 00:00 EDT (04:00Z): 04:00Z begins shift 24 (A), 05:00Z 25 (B), until 06:00Z
    # (in UTC: compared across zones, a fold-1 time is unequal to everything, PEP 495)
    assert [(s.member, s.start.astimezone(timezone.utc), s.end.astimezone(timezone.utc)) for s in found] == [
        (A, utc("2026-11-01T04:00"), utc("2026-11-01T05:00")), (B, utc("2026-11-01T05:00"), utc("2026-11-01T06:00"))]


# Issue 41: cases mutation testing found no fast test deciding. Wed 2026-11-04 in Berlin is CET, UTC+1.
def test_a_restrictions_minutes_count_to_the_minute():
    # C on Wednesdays 09:30 to 17:59 CET
    c = schedule("Europe/Berlin", {"members": [C], "start": "2026-11-02T09:00", "shift": "P1D",
                                   "restrictions": [{"days": ["WED"], "start": "09:30", "end": "17:59"}]})
    assert [c.on_call(utc(t)) for t in ("2026-11-04T08:15", "2026-11-04T08:29:59", "2026-11-04T08:30", "2026-11-04T08:45",
                                         "2026-11-04T16:58", "2026-11-04T16:59")] == [None, None, C, C, C, None]


def test_sundays_window_past_midnight_runs_into_monday():
    # C from Sunday 22:00 to Monday 06:00 CET (Sun 2026-11-08, Mon 2026-11-09), and on no other night
    night = schedule("Europe/Berlin", {"members": [C], "start": "2026-11-02T09:00", "shift": "P1D",
                                       "restrictions": [{"days": ["SUN"], "start": "22:00", "end": "06:00"}]})
    assert [night.on_call(utc(t)) for t in ("2026-11-08T20:59", "2026-11-08T21:00", "2026-11-09T04:59", "2026-11-09T05:00",
                                             "2026-11-07T04:00")] == [None, C, C, None, None]


def test_shifts_merged_where_nobody_changes_keep_their_start_and_end_in_the_zone():
    # A alone, handing off to A every day at 09:00: one shift from Mon 10:00 to Wed 10:00 CET
    alone = schedule("Europe/Berlin", {"members": [A], "start": "2026-11-02T09:00", "shift": "P1D"})
    shifts = alone.shifts(utc("2026-11-02T09:00"), utc("2026-11-04T09:00"))
    assert [(s.member, s.start.isoformat(), s.end.isoformat()) for s in shifts] == [
        (A, "2026-11-02T10:00:00+01:00", "2026-11-04T10:00:00+01:00")]


def test_the_days_of_restriction_windows_are_the_schedules_days_not_utcs():
    # Pacific/Kiritimati is UTC+14 all year: Thu 2026-11-05 12:00 there is Wed 22:00 UTC. C from 09:00 to 10:00
    # every day; the shifts from Wed 12:00 to Thu 12:00 local end with Thursday's window (19:00 to 20:00 UTC)
    kiritimati = schedule("Pacific/Kiritimati", {"members": [C], "start": "2026-11-02T00:00", "shift": "P7D",
                                                "restrictions": [{**WHOLE_DAYS, "start": "09:00", "end": "10:00"}]})
    shifts = kiritimati.shifts(utc("2026-11-03T22:00"), utc("2026-11-04T22:00"))
    assert [(s.member, s.start.isoformat(), s.end.isoformat()) for s in shifts] == [
        (None, "2026-11-04T12:00:00+14:00", "2026-11-05T09:00:00+14:00"),
        (C, "2026-11-05T09:00:00+14:00", "2026-11-05T10:00:00+14:00"),
        (None, "2026-11-05T10:00:00+14:00", "2026-11-05T12:00:00+14:00"),
    ]


# The whole refusal, schedule, field and problem: a person fixes the item from it alone (docs/on-call-schedules.md,
# "Refused, with the error InvalidSchedule and a message naming the schedule and the field").
WEEKDAYS = "MON, TUE, WED, THU, FRI, SAT, SUN"
OVERRIDE_TIME = "a local time YYYY-MM-DDTHH:MM from 1970 on, in the schedule's zone, optionally with its offset (+01:00)"
ACCOUNT = "must be a person's account (a non-empty string of at most 254 characters, not a schedule)"


def _override(**changes):
    return {"member": D, "start": "2026-12-24T18:00", "end": "2026-12-27T09:00", **changes}


def _window(**changes):
    return {"days": ["MON"], "start": "09:00", "end": "17:00", **changes}


@pytest.mark.parametrize(("item", "message"), [
    ({key: value for key, value in GOOD.items() if key != "time_zone"},
     "time_zone: is required: an IANA zone such as Europe/Berlin"),
    (_with(time_zone=""), "time_zone: is required: an IANA zone such as Europe/Berlin"),
    (_with(time_zone=5), "time_zone: is required: an IANA zone such as Europe/Berlin"),
    (_with(timezone="UTC"),
     "timezone: is not a field here (the fields are schedule_id, time_zone, layers, overrides, coverers, max_cover_days)"),
    (_with(layers="P1D"), "layers: must be a non-empty list of layers, each {members, start, shift}"),
    (_with(layers=["U0AAAAAA1"]), "layers[0]: must be a layer {members, start, shift}"),
    (_with(layer={"members": "U0AAAAAA1"}), "layers[0].members: must be a non-empty list: a rotation needs someone to rotate"),
    (_with(layer={"members": ["   "]}), f"layers[0].members[0]: {ACCOUNT}"),
    (_with(layer={"members": [A, "x" * 255]}), f"layers[0].members[1]: {ACCOUNT}"),
    (_with(layer={"shift": 7}), "layers[0].shift: must be an ISO 8601 duration in hours, days or weeks (PT12H, P1D, P1W), got 7"),
    (_with(layer={"restrictions": _window()}), "layers[0].restrictions: must be a list of {days, start, end}"),
    (_with(layer={"restrictions": ["MON 09:00-17:00"]}), "layers[0].restrictions[0]: must be a window {days, start, end}"),
    (_with(layer={"restrictions": [_window(when="weekdays")]}),
     "layers[0].restrictions[0].when: is not a field here (the fields are days, start, end)"),
    (_with(layer={"restrictions": [_window(days=[])]}), f"layers[0].restrictions[0].days: must be a non-empty list of {WEEKDAYS}"),
    # A DynamoDB string set reads as a Python set: not the list the form asks for
    (_with(layer={"restrictions": [_window(days={"MON"})]}), f"layers[0].restrictions[0].days: must be a non-empty list of {WEEKDAYS}"),
    (_with(layer={"restrictions": [_window(start="09:60")]}),
     "layers[0].restrictions[0].start: must be a local time of day HH:MM, 00:00 to 24:00, got '09:60'"),
    (_with(layer={"restrictions": [_window(start="24:00")]}),
     "layers[0].restrictions[0].start: must be 00:00 to 23:59 (a window ends at 24:00, it cannot start there)"),
    (_with(layer={"restrictions": [_window(end="09:00")]}),
     "layers[0].restrictions[0].end: must differ from start (an end before start runs past midnight)"),
    (_with(overrides={"member": D}), "overrides: must be a list of {member, start, end}"),
    (_with(overrides=[D]), "overrides[0]: must be an override {member, start, end}"),
    (_with(overrides=[_override(reason="holiday")]), "overrides[0].reason: is not a field here (the fields are member, start, end)"),
    (_with(overrides=[_override(member="")]), f"overrides[0].member: {ACCOUNT}"),
    (_with(overrides=[_override(start="2026-12-24 18:00")]), f"overrides[0].start: must be {OVERRIDE_TIME}, got '2026-12-24 18:00'"),
    (_with(overrides=[_override(end="2026-12-24T18:00")]), "overrides[0].end: must be after start"),
    (_with(time_zone="America/New_York", overrides=[_override(start="2026-10-31T09:00", end="2026-10-31T12:00-05:00")]),
     "overrides[0].end: has the offset -05:00, which America/New_York does not have at 2026-10-31T12:00"),
    # The third overlaps the first only (Thu 12-24 18:00 to Sun 12-27 09:00 and Sat 12-26 09:00 to Sun 12:00)
    (_with(overrides=[_override(), _override(member=E, start="2026-12-28T09:00", end="2026-12-29T09:00"),
                      _override(member=A, start="2026-12-26T09:00", end="2026-12-27T12:00")]),
     "overrides[2]: overlaps overrides[0]: two overrides cannot cover the same time"),
    (_with(coverers=[f"U0COVER{i:03d}" for i in range(101)]),
     "coverers: must be a list of at most 100 accounts who may cover besides the layers' members"),
    (_with(coverers=[E, ""]), f"coverers[1]: {ACCOUNT}"),
    (_with(max_cover_days=Decimal("7.5")), "max_cover_days: must be a whole number of days from 1 to 366, got Decimal('7.5')"),
])
def test_a_refusal_names_the_schedule_the_field_and_what_to_write(item, message):
    with pytest.raises(InvalidSchedule) as refused:
        parse_schedule(item)
    assert str(refused.value) == f"schedule 'primary', {message}"


def test_a_member_of_254_characters_and_a_start_in_1970_are_read():
    longest = "x" * 254
    read = parse_schedule(_with(time_zone="UTC", layer={"members": [longest], "start": "1970-01-01T00:00"}))
    assert read.on_call(utc("1970-01-01T00:00")) == longest


# Handoffs around the clocks' changes in New York: 2026-03-08 02:00 EST -> 03:00 EDT, 2026-11-01 02:00 EDT -> 01:00 EST.
def test_a_daily_handoff_at_a_time_the_spring_change_skips_happens_an_hour_later_on_the_clock():
    # Daily at 02:30 from Sun 2026-03-01 (A, B, C): shift 7 would start Sun 03-08 02:30, which does not exist;
    # read at the offset before the change (EST, UTC-5) it is 07:30 UTC, 03:30 EDT. Shift 6 began 03-07 02:30 EST.
    rota = schedule("America/New_York", {"members": [A, B, C], "start": "2026-03-01T02:30", "shift": "P1D"})
    assert [rota.on_call(utc(t)) for t in ("2026-03-08T07:00", "2026-03-08T07:29", "2026-03-08T07:30")] == [A, A, B]


def test_a_daily_handoff_in_the_repeated_autumn_hour_happens_at_its_first_occurrence():
    # Daily at 01:45 from Fri 2026-10-30 (A, B): shift 2 starts Sun 11-01 01:45 EDT, 05:45 UTC, and holds through
    # the second 01:00-02:00 (EST, 06:00-07:00 UTC), whose 01:30 is before 01:45 on the clock but after it in time
    rota = schedule("America/New_York", {"members": [A, B], "start": "2026-10-30T01:45", "shift": "P1D"})
    assert [rota.on_call(utc(t)) for t in ("2026-11-01T05:44", "2026-11-01T05:45", "2026-11-01T06:30", "2026-11-01T06:50")] \
        == [B, A, A, A]


def test_a_yearly_rotation_starting_late_in_9999_answers_the_last_instant():
    # Shift 0 from 9999-09-30 holds until after the last instant a schedule answers for (LATEST, 9999-10-01)
    late = parse_schedule(_with(time_zone="UTC", layer={"members": [A, B], "start": "9999-09-30T00:00", "shift": "P366D"}))
    assert late.on_call(datetime.max.replace(tzinfo=timezone.utc)) == A
    assert late.on_call(utc("9999-09-29T23:59")) is None


@pytest.mark.parametrize(("item", "shown"), [
    ({"time_zone": "UTC", "layers": GOOD["layers"]}, "None"),
    ([GOOD], "None"),
    ({**GOOD, "schedule_id": 5}, "5"),
    ({**GOOD, "schedule_id": "x" * 65}, "x" * 65),
    ({**GOOD, "schedule_id": "primary on-call"}, "primary on-call"),
])
def test_an_item_without_a_usable_schedule_id_is_refused_naming_that_field(item, shown):
    with pytest.raises(InvalidSchedule) as refused:
        parse_schedule(item)
    assert str(refused.value) == (f"schedule '{shown}', schedule_id: must be 1 to 64 letters, digits, '.', '_' or '-' "
                                  "(escalation names it as schedule:<id>)")


def test_the_limits_themselves_are_read():
    # an id of 64 characters, 100 coverers, covers of 1 and of 366 days
    assert parse_schedule({**GOOD, "schedule_id": "a-b_c." + "x" * 58}).schedule_id == "a-b_c." + "x" * 58
    assert len(parse_schedule(_with(coverers=[f"U0COVER{i:03d}" for i in range(100)])).coverers) == 100
    assert [parse_schedule(_with(max_cover_days=days)).max_cover_days for days in (1, 366, Decimal(366))] == [1, 366, 366]


def test_overrides_touching_in_either_order_are_read():
    # E's override is listed first but follows D's: D until Sun 2026-12-27 09:00 CET (08:00 UTC), E from then
    touching = parse_schedule(_with(overrides=[_override(member=E, start="2026-12-27T09:00", end="2026-12-28T09:00"),
                                               _override()]))
    assert [touching.on_call(utc(t)) for t in ("2026-12-27T07:59", "2026-12-27T08:00")] == [D, E]


def test_a_machine_with_no_time_zone_database_says_so_naming_the_field(monkeypatch):
    import zoneinfo

    # (the database's absence is set up; what is tested is the message that names it)
    monkeypatch.setattr(zoneinfo, "available_timezones", set)
    with pytest.raises(InvalidSchedule) as refused:
        parse_schedule(_with(time_zone="Europe/Berln"))
    assert str(refused.value) == ("schedule 'primary', time_zone: 'Europe/Berln' cannot be looked up: this machine has no "
                                  "time zone database (tzdata)")


@pytest.fixture
def machine_in_kiritimati(monkeypatch):
    """The machine's own zone (what datetime.astimezone() without a zone uses) as far from the schedules' as it
    gets, UTC+14: `python -m tools.oncall show` runs on a person's machine, not only in Lambda's UTC."""
    import time

    monkeypatch.setenv("TZ", "Pacific/Kiritimati")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_the_days_of_restriction_windows_do_not_depend_on_the_machines_zone(machine_in_kiritimati):
    # Etc/GMT+12 is UTC-12 (POSIX's sign): Wed 2026-11-04 23:00 there is Thu 11:00 UTC, Fri 01:00 on the machine.
    # C from 23:30 to 23:45 every day: Wednesday's window is among the shifts of Wed 23:00 to Thu 00:00 local
    west = schedule("Etc/GMT+12", {"members": [C], "start": "2026-11-02T00:00", "shift": "P7D",
                                   "restrictions": [{**WHOLE_DAYS, "start": "23:30", "end": "23:45"}]})
    shifts = west.shifts(utc("2026-11-05T11:00"), utc("2026-11-05T12:00"))
    assert [(s.member, s.start.isoformat(), s.end.isoformat()) for s in shifts] == [
        (None, "2026-11-04T23:00:00-12:00", "2026-11-04T23:30:00-12:00"),
        (C, "2026-11-04T23:30:00-12:00", "2026-11-04T23:45:00-12:00"),
        (None, "2026-11-04T23:45:00-12:00", "2026-11-05T00:00:00-12:00"),
    ]
