"""An advance past several due events fires each one in order, at its own simulated time (issue 40).

`clock advance 18400` once passed five hourly dispatch times and ran the dispatcher once, at the end.
Here: threads waiting on the clock and a timer as a service registers one (emulator.clock.Timed)
are stepped through in time order, the clock standing at each while it fires and what it sets going
runs. Expected times are worked out by hand. With the real services (an EventBridge rule starting a
state machine that waits; the app's hourly dispatcher): tests/test_clock_execution.py.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone

import pytest

from emulator.clock import SimClock
from emulator.events import _following
from tests.conftest import HANG_SECONDS
from tests.emulator_helpers import wait_for

HOUR = 3600


class Hourly:
    """A timer as a service registers one (emulator.clock.Timed): due each hour from ``first``; each
    firing sets going a consequence that waits on the clock for ``then`` seconds."""

    def __init__(self, clock: SimClock, first: float, then: float, log: list) -> None:
        self.clock, self.due, self.then, self.log = clock, first, then, log
        self._lock = threading.Lock()

    def next_due(self, until: float) -> float | None:
        return self.due

    def fire_due(self) -> None:
        with self._lock:
            if self.clock.now() < self.due:
                return
            self.due += HOUR
        self.log.append(("fired", self.clock.now()))
        reservation = self.clock.reserve()  # as an asynchronous invocation holds the clock until its thread runs

        def consequence() -> None:
            with reservation.adopt():
                self.clock.sleep(self.then)
                self.log.append(("consequence", self.clock.now()))

        threading.Thread(target=consequence, daemon=True).start()


@pytest.fixture
def clock():
    clock = SimClock()
    yield clock
    clock.stop()


def test_an_advance_fires_timers_wake_ups_and_their_consequences_in_time_order_each_at_its_own_time(clock):
    # Given: the clock paused (so every recorded time is exact), an hourly timer whose firings each
    # wake 30 minutes later, and a thread sleeping 5000 s
    clock.pause()
    start = clock.now()
    log: list = []
    clock.add_timer(Hourly(clock, start + HOUR, 1800, log))
    sleeping = threading.Thread(target=lambda: (clock.sleep(5000), log.append(("woke", clock.now()))), daemon=True)
    sleeping.start()
    wait_for(lambda: clock.pending_wakeups() == [start + 5000], "the sleeper to wait", timeout=HANG_SECONDS)
    # When: advanced three hours
    clock.advance(3 * HOUR)
    # Then: each event at its own time, in order: firings at 1 h, 2 h, 3 h; their consequences half
    # an hour after each (the third's, at 3 h 30, is still to come); the sleeper at 5000 s
    assert [(kind, at - start) for kind, at in log] == [
        ("fired", 3600), ("woke", 5000), ("consequence", 5400), ("fired", 7200), ("consequence", 9000), ("fired", 10800)]
    assert clock.now() == start + 3 * HOUR
    assert clock.pending_wakeups() == [start + 10800 + 1800]


def test_an_instant_jump_to_a_wake_up_stops_first_at_a_timer_due_before_it(clock):
    # Given: the instant clock (it jumps once quiet), an hourly timer due in 10 minutes, and a
    # thread sleeping an hour and a half
    start = clock.now()
    log: list = []
    clock.add_timer(Hourly(clock, start + 600, 60, log))
    sleeping = threading.Thread(target=lambda: (clock.sleep(5400), log.append(("woke", clock.now()))), daemon=True)
    # When: the clock jumps ahead to the wake-up
    sleeping.start()
    sleeping.join(30)
    # Then: it stopped at 10 minutes (the firing), 11 minutes (its consequence) and 1 h 10 min on the
    # way. The instant clock runs at real time between jumps: a second's tolerance.
    assert [kind for kind, _ in log] == ["fired", "consequence", "fired", "consequence", "woke"]
    assert [at - start for _, at in log] == pytest.approx([600, 660, 4200, 4260, 5400], abs=1)


def test_a_scheduled_rule_comes_due_one_period_on_for_rate_and_at_the_next_utc_match_for_cron():
    # EventBridge User Guide, "Setting a schedule pattern for scheduled rules (legacy)": rate() every
    # period; cron(minutes hours day-of-month month day-of-week year) in UTC. L, W, # are not played.
    half_past_eight = datetime(2026, 11, 28, 8, 30, tzinfo=timezone.utc).timestamp()
    nine = datetime(2026, 11, 28, 9, 0, tzinfo=timezone.utc).timestamp()
    assert _following("rate(1 hour)", half_past_eight) == half_past_eight + HOUR
    assert _following("rate(5 minutes)", half_past_eight) == half_past_eight + 300
    assert _following("cron(0 9 * * ? *)", half_past_eight) == nine
    assert _following("cron(0 9 * * ? *)", nine) == nine + 24 * HOUR  # the next after, not the one at
    assert _following("cron(0 9 L * ? *)", half_past_eight) is None
