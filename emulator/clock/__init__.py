"""Simulated clock: by default time jumps ahead to the next wake-up whenever nothing is working.

Every Wait state, retry back-off, task/heartbeat/machine timeout and Lambda ``time.sleep``
registers a wake-up time and blocks on this clock. Simulated time runs at a rate relative to real
time, and a person controls it (``python -m emulator clock``, the console):

- speed ``instant`` (the default): rate 1, and a background thread jumps to the earliest wake-up
  once the emulator is quiet: no busy token is held (a request being served, a Lambda handler
  computing) and no progress was reported for a short settle period. With nothing to wait for,
  simulated time follows real time, so the clock never runs ahead of work that is still happening.
- a factor F (1: real time, 60: a minute per second): rate F, never a jump.
- paused: rate 0; whatever waits on the clock waits until it is resumed or advanced by hand.

Two kinds of timed event: a thread waiting on the clock (a sleeper), and a service's own timer
(``Timed``: EventBridge scheduled rules, Scheduler schedules, alarm evaluations), which polls the
clock and fires what is due. Neither a jump nor an ``advance`` passes a due event: each stops at the
next one, stands there while it fires and its consequences run (until the emulator is quiet), and only
then moves on, so an advance of five hours past five hourly firings runs them at their five hours.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Iterator, Protocol

_real_time = time.time
_real_monotonic = time.monotonic
_log = logging.getLogger(__name__)

# How long the emulator must be quiet before the clock jumps. Engine steps between two progress
# reports take well under a millisecond; the margin covers a loaded two-core machine. The clock,
# fault and execution tests pass at 5 ms as at 30 ms; 10 ms keeps twice that margin, and a jump
# that waited 30 ms was about 40% of a simulated poll's wall time.
SETTLE_SECONDS = 0.01
TICK_SECONDS = 0.005
# Request header carrying a hand-over ticket (see SimClock.hand_over) to the server.
TICKET_HEADER = "X-Emulator-Clock-Ticket"
# Where the endpoint answers clock control (`python -m emulator clock`) instead of moto.
CLOCK_PATH = "/_emulator/clock"
INSTANT = "instant"


def parse_speed(text: str | float) -> str | float:
    """``instant`` or a positive factor, as a person types it (``serve --speed``, ``clock speed``)."""
    if isinstance(text, str) and text.strip().lower() == INSTANT:
        return INSTANT
    try:
        factor = float(text)
    except (TypeError, ValueError):
        factor = math.nan
    if not 0 < factor < math.inf:
        raise ValueError(f"speed must be {INSTANT!r} or a positive factor such as 1 or 60, got {text!r}")
    return factor


class Timed(Protocol):
    """A service's timer on the clock (registered with ``SimClock.add_timer``)."""

    def next_due(self, until: float) -> float | None:
        """The simulated time of its next firing if that is no later than ``until``; else None."""

    def fire_due(self) -> None:
        """Fire whatever is due at the clock's time now."""


class Reservation:
    def __init__(self, clock: "SimClock") -> None:
        self._clock = clock

    @contextlib.contextmanager
    def adopt(self) -> Iterator[None]:
        clock = self._clock
        clock._local.tokens = getattr(clock._local, "tokens", 0) + 1
        try:
            yield
        finally:
            clock._release()


@dataclass(order=True)
class _Sleeper:
    wake_at: float
    seq: int
    event: threading.Event = field(compare=False)
    # The thread that set the SimEvent this sleeper waits on lent it a busy token (see SimEvent.set).
    gifted: bool = field(default=False, compare=False)
    # The waiting thread has left ``wait``: a token lent now would never be given back.
    done: bool = field(default=False, compare=False)


class SimClock:
    def __init__(self, settle_seconds: float = SETTLE_SECONDS) -> None:
        # (simulated, real, rate): simulated now = simulated + rate * (real now - real), real time on the
        # monotonic clock: the wall clock may step or slew apart from it, and at speed 60 a 3 ms step
        # was 0.17 simulated seconds. One tuple, replaced whole, so ``now`` reads a consistent triple
        # without the lock.
        self._anchor = (_real_time(), _real_monotonic(), 1.0)
        self._speed: str | float = INSTANT
        self._paused = False
        # Held for a few statements at a time by every busy, idle and waiting thread, and never waited
        # on: a plain lock (a storm's hundreds of threads queued on a Condition's RLock).
        self._lock = threading.Lock()
        self._sleepers: list[_Sleeper] = []
        self._seq = itertools.count()
        # One entry per busy token held: list.append and list.pop are atomic, so taking and giving
        # back a token (every request, every wait) needs no lock; the lock orders the rest.
        self._tokens: list[None] = []
        self._last_activity = _real_monotonic()
        self._settle = settle_seconds
        self._local = threading.local()
        self._tickets: dict[str, bool] = {}  # ticket -> its token is held (not lent to a waiter)
        self._stopped = threading.Event()
        self.jumps = 0
        self.jumped_seconds = 0.0
        self._timers: list[Timed] = []
        # Held by an advance for its whole stepping: one advance at a time, and no jump meanwhile.
        self._advancing = threading.Lock()
        self._thread = threading.Thread(target=self._advance_forever, name="sim-clock", daemon=True)
        self._thread.start()

    # -- reading -------------------------------------------------------------------------------
    def now(self) -> float:
        """Simulated epoch seconds."""
        simulated, real, rate = self._anchor
        return simulated + rate * (_real_monotonic() - real)

    @property
    def offset(self) -> float:
        """Simulated minus real time now (Lambda workers add it to their own real clock)."""
        return self.now() - _real_time()

    # -- control -------------------------------------------------------------------------------
    @property
    def speed(self) -> str | float:
        """``INSTANT`` or the factor simulated time runs at while not paused."""
        return self._speed

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def rate(self) -> float:
        """Simulated seconds per real second now (0 while paused)."""
        return self._anchor[2]

    def set_speed(self, speed: str | float) -> None:
        speed = parse_speed(speed)
        with self._lock:
            self._speed = speed
            self._rebase()

    def pause(self) -> None:
        with self._lock:
            self._paused = True
            self._rebase()

    def resume(self) -> None:
        with self._lock:
            self._paused = False
            self._rebase()

    def _rebase(self) -> None:
        """Start the current rate from now (lock held) and let every sleeper re-time its wait."""
        rate = 0.0 if self._paused else 1.0 if self._speed == INSTANT else float(self._speed)
        now = self.now()
        self._anchor = (now, _real_monotonic(), rate)
        self._last_activity = _real_monotonic()
        for sleeper in self._sleepers:
            sleeper.event.set()

    # -- activity ------------------------------------------------------------------------------
    def touch(self) -> None:
        """Report progress: the clock waits a settle period before it may jump again."""
        self._last_activity = _real_monotonic()

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Hold a busy token while real work runs (a request, a handler computing)."""
        self._acquire()
        try:
            yield
        finally:
            self._release()

    @contextlib.contextmanager
    def idle(self) -> Iterator[None]:
        """Give this thread's busy tokens back while it only waits for others."""
        held = getattr(self._local, "tokens", 0)
        for _ in range(held):
            self._release()
        self._lend_tickets(held=False)
        try:
            yield
        finally:
            self._lend_tickets(held=True)
            for _ in range(held):
                self._acquire()

    def reserve(self) -> "Reservation":
        """Take a busy token now, for a thread that starts later to adopt (async invocations)."""
        with self._lock:
            self._tokens.append(None)
            self._last_activity = _real_monotonic()
        return Reservation(self)

    # -- hand-over: one token for work that moves between threads (a request and its response) --
    def hand_over(self) -> str:
        """Take a busy token for a request about to leave this thread; returns its ticket.

        The token stays held until ``redeem``: through the request's transit, its serving and the
        response's way back, except while a thread ``carrying`` the ticket waits on the clock.
        """
        ticket = uuid.uuid4().hex
        with self._lock:
            self._tokens.append(None)
            self._tickets[ticket] = True
            self._last_activity = _real_monotonic()
        return ticket

    @contextlib.contextmanager
    def carrying(self, ticket: str | None) -> Iterator[None]:
        """Serve the request that brought ``ticket``: its token is given back while this thread waits."""
        carried = self._local.__dict__.setdefault("carried", [])
        carried.append(ticket)
        try:
            yield
        finally:
            carried.pop()

    def redeem(self, ticket: str) -> None:
        """The requester has its response: release the ticket's token."""
        with self._lock:
            if self._tickets.pop(ticket, False):
                self._tokens.pop()
            self._last_activity = _real_monotonic()

    def _lend_tickets(self, held: bool) -> None:
        """Release (``held=False``) or take back the tokens of the tickets this thread carries."""
        with self._lock:
            for ticket in getattr(self._local, "carried", ()):
                if self._tickets.get(ticket) is (not held):
                    self._tickets[ticket] = held
                    if held:
                        self._tokens.append(None)
                    else:
                        self._tokens.pop()
            self._last_activity = _real_monotonic()

    def _acquire(self) -> None:
        self._tokens.append(None)
        self._local.tokens = getattr(self._local, "tokens", 0) + 1
        self._last_activity = _real_monotonic()

    def _release(self) -> None:
        self._tokens.pop()
        self._local.tokens = getattr(self._local, "tokens", 0) - 1
        self._last_activity = _real_monotonic()

    # -- waiting -------------------------------------------------------------------------------
    def sleep(self, seconds: float) -> None:
        self.wait(None, seconds)

    def wait(self, event: threading.Event | None, timeout: float | None) -> bool:
        """Wait for ``event`` (if any) for at most ``timeout`` simulated seconds (None: no limit).

        Returns True when the event was set, False on timeout, like ``Event.wait``; a set() while
        waiting counts even if clear() follows at once (the engine pulses an execution's event that
        way to interrupt its Wait state when the execution stops or times out).
        """
        if timeout is None and not isinstance(event, SimEvent):
            with self.idle():
                return threading.Event.wait(event) if event is not None else True
        wake_at = math.inf if timeout is None else self.now() + max(0.0, timeout)
        sleeper = _Sleeper(wake_at, next(self._seq), threading.Event())
        sets_before = event.sets if isinstance(event, SimEvent) else None
        if isinstance(event, SimEvent):
            event._waiters[id(sleeper)] = sleeper
        with self._lock:
            if timeout is not None:
                heapq.heappush(self._sleepers, sleeper)
            self._last_activity = _real_monotonic()
        try:
            with self.idle():
                while True:
                    if event is not None and (event.is_set() or (sets_before is not None and event.sets != sets_before)):
                        return True
                    remaining = sleeper.wake_at - self.now()
                    if remaining <= 0:
                        return False
                    # A SimEvent wakes this sleeper when set; a plain Event is polled. A change of
                    # rate (pause, speed) wakes it too, to re-time the wait.
                    rate = self.rate
                    real_remaining = remaining / rate if rate and remaining != math.inf else None
                    polled = event is not None and not isinstance(event, SimEvent)
                    sleeper.event.wait(min(real_remaining or 0.02, 0.02) if polled else real_remaining)
                    sleeper.event.clear()
        finally:
            if isinstance(event, SimEvent):
                event._waiters.pop(id(sleeper), None)
            with self._lock:
                if sleeper in self._sleepers:
                    self._sleepers.remove(sleeper)
                    heapq.heapify(self._sleepers)
                if sleeper.gifted:  # this thread holds its own tokens again
                    self._tokens.pop()
                sleeper.done = True
                self._last_activity = _real_monotonic()

    def _gift(self, sleeper: _Sleeper) -> None:
        with self._lock:
            # A setter that found this sleeper among the event's waiters may get here after the
            # sleeper woke by itself and left: lending it a token then would hold the clock still
            # for good (seen under load as every execution waiting and the clock never jumping).
            if not sleeper.gifted and not sleeper.done:
                sleeper.gifted = True
                self._tokens.append(None)
                self._last_activity = _real_monotonic()

    def pending_wakeups(self) -> list[float]:
        with self._lock:
            return sorted(s.wake_at for s in self._sleepers)

    # -- advancing -----------------------------------------------------------------------------
    def add_timer(self, timer: Timed) -> None:
        with self._lock:
            self._timers.append(timer)

    def remove_timer(self, timer: Timed) -> None:
        with self._lock:
            if timer in self._timers:
                self._timers.remove(timer)

    def _timer_due(self, until: float) -> float | None:
        """The earliest firing of a timer no later than ``until`` (called without the lock: a timer
        takes its own service's locks)."""
        with self._lock:
            timers = list(self._timers)
        dues = []
        for timer in timers:
            try:
                due = timer.next_due(until)
            except Exception:  # noqa: BLE001 - a backend mid-reset between runs has nothing due
                _log.exception("Timer %r could not say when it is due", timer)
                continue
            if due is not None and due <= until:
                dues.append(due)
        return min(dues, default=None)

    def _fire_timers(self) -> None:
        with self._lock:
            timers = list(self._timers)
        for timer in timers:
            try:
                timer.fire_due()
            except Exception:  # noqa: BLE001 - one service's failure must not stop the clock
                _log.exception("Timer %r failed to fire", timer)

    def _move_to(self, at: float) -> None:
        """Stand the clock at ``at`` (never backwards) and wake every sleeper due by then (lock held)."""
        gap = at - self.now()
        if gap > 0:
            simulated, real, rate = self._anchor
            self._anchor = (simulated + gap, real, rate)
            self.jumped_seconds += gap
        for sleeper in self._sleepers:
            if sleeper.wake_at <= self.now():
                sleeper.event.set()
        self._last_activity = _real_monotonic()

    def _quiet(self) -> bool:
        """Quiet enough, and no sleeper due is still on its way out (lock held)."""
        now = self.now()
        return self._quiet_enough() and not any(s.wake_at <= now for s in self._sleepers)

    def _settle_down(self) -> None:
        """Wait until what the last event set going has run: every thread busy or due has finished or waits."""
        while True:
            with self._lock:
                if self._quiet():
                    return
            time.sleep(TICK_SECONDS)

    def advance(self, seconds: float) -> None:
        """Move simulated time forward by hand, at any speed and while paused, event by event.

        Each due event (sleeper or timer) up to the end fires at its own time, in time order, and
        what it sets going runs before the clock moves on; returns once the clock stands at the end
        and the emulator is quiet. The calling thread's busy tokens are given back meanwhile (a test
        holding the clock still may advance it).
        """
        if not 0 <= seconds < math.inf:
            raise ValueError(f"seconds must be a non-negative number, got {seconds!r}")
        with self._advancing, self.idle():
            target = self.now() + seconds
            while True:
                self._fire_timers()
                self._settle_down()
                # Anything due by now has fired or woken: only a later event is a step forward.
                with self._lock:
                    now = self.now()
                    sleeper = min((s.wake_at for s in self._sleepers if now < s.wake_at <= target), default=None)
                timer = self._timer_due(target)
                steps = [at for at in (sleeper, timer) if at is not None and at > now]
                if not steps:
                    break
                with self._lock:
                    self._move_to(min(steps))
            with self._lock:
                self._move_to(target)
            self._fire_timers()
            self._settle_down()

    def _advance_forever(self) -> None:
        while not self._stopped.wait(TICK_SECONDS):
            if not self._advancing.acquire(blocking=False):
                continue  # an advance steps the clock itself
            try:
                self._jump()
            finally:
                self._advancing.release()

    def _jump(self) -> None:
        """At instant speed, once quiet, jump to the earliest sleeper, or to a timer due before it."""
        with self._lock:
            if self._speed != INSTANT or self._paused or not self._sleepers or not self._quiet_enough():
                return
            earliest = self._sleepers[0].wake_at
        timer = self._timer_due(earliest)
        if timer is not None and timer <= self.now():
            self._fire_timers()  # due and not fired yet (its service polls): fire it here, then look again
            return
        with self._lock:
            if not self._sleepers or not self._quiet_enough():
                return  # work started while the timers were asked
            target = min(self._sleepers[0].wake_at, timer if timer is not None else math.inf)
            if target > self.now():
                self.jumps += 1
            self._move_to(target)
        if timer is not None and timer <= target:
            self._fire_timers()

    def _quiet_enough(self) -> bool:
        """No busy token and the settle period passed since the last progress (lock held)."""
        return not self._tokens and _real_monotonic() - self._last_activity >= self._settle

    def stop(self) -> None:
        self._stopped.set()


class SimEvent(threading.Event):
    """``threading.Event`` whose ``wait`` runs on the simulated clock (installed per module)."""

    clock: SimClock | None = None

    def __init__(self) -> None:
        super().__init__()
        self._waiters: dict[int, _Sleeper] = {}
        self.sets = 0

    def set(self) -> None:
        self.sets += 1
        super().set()
        for sleeper in list(self._waiters.values()):
            # Each woken thread gets a busy token until it holds its own again: the setter may
            # finish first, and the clock must not jump in between.
            if SimEvent.clock is not None:
                SimEvent.clock._gift(sleeper)
            sleeper.event.set()

    def wait(self, timeout: float | None = None) -> bool:
        clock = SimEvent.clock
        if clock is None:
            return super().wait(timeout)
        return clock.wait(self, timeout)


class BusyThread(threading.Thread):
    """An engine thread: busy from ``start()`` until its target returns, except while it waits on
    the clock, so the clock never jumps between the thread that starts it and its first step."""

    def start(self) -> None:
        clock = SimEvent.clock
        self._reservation = clock.reserve() if clock is not None else None
        super().start()

    def run(self) -> None:
        if self._reservation is None:
            return super().run()
        with self._reservation.adopt():
            return super().run()
