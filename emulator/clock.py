"""Simulated clock: time jumps ahead to the next wake-up whenever nothing in the emulator is working.

Simulated time is real time plus an offset. Every Wait state, retry back-off, task/heartbeat/
machine timeout and Lambda ``time.sleep`` registers a wake-up time and blocks on this clock. A
background thread moves the offset forward to the earliest wake-up once the emulator is quiet:
no busy token is held (a request being served, a Lambda handler computing) and no progress was
reported for a short settle period. With nothing to wait for, simulated time simply follows real
time, so the clock never runs ahead of work that is still happening.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator

_real_time = time.time
_real_monotonic = time.monotonic

# How long the emulator must be quiet before the clock jumps. Engine steps between two progress
# reports take well under a millisecond; the margin covers a loaded two-core machine.
SETTLE_SECONDS = 0.03
TICK_SECONDS = 0.005


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


class SimClock:
    def __init__(self, settle_seconds: float = SETTLE_SECONDS) -> None:
        self._offset = 0.0
        self._lock = threading.Condition()
        self._sleepers: list[_Sleeper] = []
        self._seq = itertools.count()
        self._busy = 0
        self._last_activity = _real_monotonic()
        self._settle = settle_seconds
        self._local = threading.local()
        self._stopped = threading.Event()
        self.jumps = 0
        self.jumped_seconds = 0.0
        self._thread = threading.Thread(target=self._advance_forever, name="sim-clock", daemon=True)
        self._thread.start()

    # -- reading -------------------------------------------------------------------------------
    def now(self) -> float:
        """Simulated epoch seconds."""
        return _real_time() + self._offset

    @property
    def offset(self) -> float:
        return self._offset

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
        try:
            yield
        finally:
            for _ in range(held):
                self._acquire()

    def reserve(self) -> "Reservation":
        """Take a busy token now, for a thread that starts later to adopt (async invocations)."""
        with self._lock:
            self._busy += 1
            self._last_activity = _real_monotonic()
        return Reservation(self)

    def _acquire(self) -> None:
        with self._lock:
            self._busy += 1
            self._local.tokens = getattr(self._local, "tokens", 0) + 1
            self._last_activity = _real_monotonic()

    def _release(self) -> None:
        with self._lock:
            self._busy -= 1
            self._local.tokens = getattr(self._local, "tokens", 0) - 1
            self._last_activity = _real_monotonic()
            self._lock.notify_all()

    # -- waiting -------------------------------------------------------------------------------
    def sleep(self, seconds: float) -> None:
        self.wait(None, seconds)

    def wait(self, event: threading.Event | None, timeout: float | None) -> bool:
        """Wait for ``event`` (if any) for at most ``timeout`` simulated seconds.

        Returns True when the event was set, False on timeout — like ``Event.wait``.
        """
        if timeout is None:
            with self.idle():
                return threading.Event.wait(event) if event is not None else True
        sleeper = _Sleeper(self.now() + max(0.0, timeout), next(self._seq), threading.Event())
        # The engine pulses events (set() then clear() at once) to interrupt waits: a set() that
        # happened during this wait counts even if the flag is already down again.
        generation = event.generation if isinstance(event, SimEvent) else 0
        if isinstance(event, SimEvent):
            event._waiters.add(sleeper.event)
        with self._lock:
            heapq.heappush(self._sleepers, sleeper)
            self._last_activity = _real_monotonic()
        try:
            with self.idle():
                while True:
                    if event is not None and (event.is_set() or getattr(event, "generation", 0) != generation):
                        return True
                    remaining = sleeper.wake_at - self.now()
                    if remaining <= 0:
                        return False
                    # A SimEvent wakes this sleeper when set; a plain Event is polled.
                    polled = event is not None and not isinstance(event, SimEvent)
                    sleeper.event.wait(min(remaining, 0.02) if polled else remaining)
                    sleeper.event.clear()
        finally:
            if isinstance(event, SimEvent):
                event._waiters.discard(sleeper.event)
            with self._lock:
                if sleeper in self._sleepers:
                    self._sleepers.remove(sleeper)
                    heapq.heapify(self._sleepers)
                self._last_activity = _real_monotonic()

    def pending_wakeups(self) -> list[float]:
        with self._lock:
            return sorted(s.wake_at for s in self._sleepers)

    # -- advancing -----------------------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        """Move simulated time forward by hand (used to let schedules fire in a demo)."""
        with self._lock:
            self._offset += seconds
            self.jumped_seconds += seconds
            for sleeper in self._sleepers:
                sleeper.event.set()

    def _advance_forever(self) -> None:
        while not self._stopped.wait(TICK_SECONDS):
            with self._lock:
                if not self._sleepers or self._busy > 0:
                    continue
                if _real_monotonic() - self._last_activity < self._settle:
                    continue
                earliest = self._sleepers[0]
                gap = earliest.wake_at - self.now()
                if gap > 0:
                    self._offset += gap
                    self.jumps += 1
                    self.jumped_seconds += gap
                for sleeper in self._sleepers:
                    if sleeper.wake_at <= self.now():
                        sleeper.event.set()
                self._last_activity = _real_monotonic()

    def stop(self) -> None:
        self._stopped.set()


class SimEvent(threading.Event):
    """``threading.Event`` whose timed ``wait`` runs on the simulated clock (installed per module)."""

    clock: SimClock | None = None

    def __init__(self) -> None:
        super().__init__()
        self._waiters: set[threading.Event] = set()
        self.generation = 0

    def set(self) -> None:
        self.generation += 1
        super().set()
        for waiter in list(self._waiters):
            waiter.set()

    def wait(self, timeout: float | None = None) -> bool:
        clock = SimEvent.clock
        if clock is None:
            return super().wait(timeout)
        return clock.wait(self, timeout)


class SimThread(threading.Thread):
    """An engine thread: counted as busy from ``start()`` until it ends, except while it waits."""

    clock: SimClock | None = None

    def start(self) -> None:
        clock = SimThread.clock
        self._reservation = clock.reserve() if clock is not None else None
        super().start()

    def run(self) -> None:
        if self._reservation is None:
            return super().run()
        with self._reservation.adopt():
            return super().run()


class SimCondition(threading.Condition):
    """A condition whose waiters do not count as busy (they wait for another thread's work)."""

    clock: SimClock | None = None

    def wait(self, timeout: float | None = None) -> bool:
        clock = SimCondition.clock
        if clock is None:
            return super().wait(timeout)
        with clock.idle():
            return super().wait(timeout)
