"""Simulated clock: time jumps ahead to the next wake-up whenever nothing in the emulator is working.

Simulated time is real time plus an offset. Every Wait state, retry back-off, task/heartbeat/
machine timeout and Lambda ``time.sleep`` registers a wake-up time and blocks on this clock. A
background thread moves the offset forward to the earliest wake-up once the emulator is quiet:
no busy token is held (a request being served, a Lambda handler computing, an engine thread
running) and no progress was reported for a short settle period. With nothing to wait for,
simulated time simply follows real time, so the clock never runs ahead of work that is still
happening.

Busy tokens pass from hand to hand without a gap, so a slow host cannot make time jump early:
a thread started by the engine gets its token from the thread that starts it; a sleeper woken
(by time or by its event) gets one from whoever wakes it; and an engine thread calling the
endpoint lends its tokens to the request (``lend``/``borrow``), so they are released while the
request's handler waits on this clock (a Lambda's ``time.sleep``) and held while it works.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Iterator

_real_time = time.time
_real_monotonic = time.monotonic

# How long the emulator must be quiet before the clock jumps. Engine steps between two progress
# reports take well under a millisecond; the margin covers a loaded two-core machine.
SETTLE_SECONDS = 0.03
TICK_SECONDS = 0.005
# HTTP header naming the busy tokens an engine thread lends to its request (see SimClock.lend).
LOAN_HEADER = "x-emulator-loan"


class _Holder:
    """The busy tokens of one thread (or of a thread about to start)."""

    def __init__(self, count: int = 0) -> None:
        self.count = count


class Reservation:
    def __init__(self, clock: "SimClock", holder: _Holder) -> None:
        self._clock = clock
        self._holder = holder

    def cancel(self) -> None:
        """Give the token back unused (the thread never started)."""
        with self._clock._lock:
            self._clock._busy -= self._holder.count
            self._holder.count = 0

    @contextlib.contextmanager
    def adopt(self) -> Iterator[None]:
        """Run the calling (new) thread on the reserved token, released when the block ends."""
        clock = self._clock
        clock._local.holder = self._holder
        try:
            yield
        finally:
            clock._release()


@dataclass(order=True)
class _Sleeper:
    wake_at: float
    seq: int
    event: threading.Event = field(compare=False)
    woken: bool = field(default=False, compare=False)  # holds a token handed over by its waker

    __hash__ = object.__hash__  # seq is unique: equal only to itself


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
        self._loans: dict[str, _Holder] = {}
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
        """Give back this thread's busy tokens, and those lent to it, while it only waits."""
        holders = [self._holder(), *getattr(self._local, "borrowed", ())]
        with self._lock:
            counts = [holder.count for holder in holders]
            for holder in holders:
                self._busy -= holder.count
                holder.count = 0
            self._last_activity = _real_monotonic()
        try:
            yield
        finally:
            with self._lock:
                for holder, count in zip(holders, counts):
                    holder.count += count
                    self._busy += count
                self._last_activity = _real_monotonic()

    def reserve(self) -> "Reservation":
        """Take a busy token now, for a thread that starts later to adopt (async invocations)."""
        holder = _Holder(1)
        with self._lock:
            self._busy += 1
            self._last_activity = _real_monotonic()
        return Reservation(self, holder)

    @contextlib.contextmanager
    def lend(self) -> Iterator[str]:
        """Hold a busy token across a call to the endpoint, lending this thread's tokens to the
        request that carries the returned key in LOAN_HEADER (see ``borrow``)."""
        key = uuid.uuid4().hex
        self._acquire()
        with self._lock:
            self._loans[key] = self._holder()
        try:
            yield key
        finally:
            with self._lock:
                del self._loans[key]
            self._release()

    @contextlib.contextmanager
    def borrow(self, key: str | None) -> Iterator[None]:
        """Serve a request whose caller lent its tokens: this thread's waits release them too."""
        with self._lock:
            holder = self._loans.get(key) if key else None
        if holder is None:
            yield
            return
        borrowed = getattr(self._local, "borrowed", ())
        self._local.borrowed = (*borrowed, holder)
        try:
            yield
        finally:
            self._local.borrowed = borrowed

    def _holder(self) -> _Holder:
        holder = getattr(self._local, "holder", None)
        if holder is None:
            holder = self._local.holder = _Holder()
        return holder

    def _acquire(self) -> None:
        with self._lock:
            self._busy += 1
            self._holder().count += 1
            self._last_activity = _real_monotonic()

    def _release(self) -> None:
        with self._lock:
            self._busy -= 1
            self._holder().count -= 1
            self._last_activity = _real_monotonic()
            self._lock.notify_all()

    # -- waiting -------------------------------------------------------------------------------
    def sleep(self, seconds: float) -> None:
        self.wait(None, seconds)

    def wait(self, event: threading.Event | None, timeout: float | None) -> bool:
        """Wait for ``event`` (if any) for at most ``timeout`` simulated seconds (None: no limit).

        Returns True when the event was set, False on timeout — like ``Event.wait``.
        """
        if timeout is None and not isinstance(event, SimEvent):
            with self.idle():
                return threading.Event.wait(event) if event is not None else True
        wake_at = math.inf if timeout is None else self.now() + max(0.0, timeout)
        sleeper = _Sleeper(wake_at, next(self._seq), threading.Event())
        with self._lock:
            if timeout is not None:
                heapq.heappush(self._sleepers, sleeper)
            if isinstance(event, SimEvent):
                event._waiters.add(sleeper)
            self._last_activity = _real_monotonic()
        try:
            with self.idle():
                while True:
                    if event is not None and event.is_set():
                        return True
                    remaining = sleeper.wake_at - self.now()
                    if remaining <= 0:
                        return False
                    self._unhand(sleeper)  # back to sleep: nothing to keep busy for
                    # A SimEvent wakes this sleeper when set; a plain Event is polled.
                    if event is not None and not isinstance(event, SimEvent):
                        sleeper.event.wait(min(remaining, 0.02))
                    else:
                        sleeper.event.wait(None if remaining == math.inf else remaining)
                    sleeper.event.clear()
        finally:
            with self._lock:
                if isinstance(event, SimEvent):
                    event._waiters.discard(sleeper)
                if sleeper in self._sleepers:
                    self._sleepers.remove(sleeper)
                    heapq.heapify(self._sleepers)
                self._last_activity = _real_monotonic()
            self._unhand(sleeper)  # this thread holds its own tokens again

    def _wake(self, sleeper: _Sleeper) -> None:
        """Wake ``sleeper`` with a busy token it keeps until it runs (call with the lock held)."""
        if not sleeper.woken:
            sleeper.woken = True
            self._busy += 1
        sleeper.event.set()

    def _unhand(self, sleeper: _Sleeper) -> None:
        with self._lock:
            if sleeper.woken:
                sleeper.woken = False
                self._busy -= 1
                self._last_activity = _real_monotonic()
                self._lock.notify_all()

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
                self._wake(sleeper)

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
                        self._wake(sleeper)
                self._last_activity = _real_monotonic()

    def stop(self) -> None:
        self._stopped.set()


class SimEvent(threading.Event):
    """``threading.Event`` whose waits run on the simulated clock (installed per module)."""

    clock: SimClock | None = None

    def __init__(self) -> None:
        super().__init__()
        self._waiters: set[_Sleeper] = set()

    def set(self) -> None:
        super().set()
        clock = SimEvent.clock
        if clock is None:
            return
        with clock._lock:
            for waiter in list(self._waiters):
                clock._wake(waiter)

    def wait(self, timeout: float | None = None) -> bool:
        clock = SimEvent.clock
        if clock is None:
            return super().wait(timeout)
        return clock.wait(self, timeout)


class SimThread(threading.Thread):
    """``threading.Thread`` that is busy on the simulated clock from ``start()`` until it ends,
    except while it waits on the clock (installed in the engine's modules)."""

    clock: SimClock | None = None

    def start(self) -> None:
        clock = SimThread.clock
        self._reservation = clock.reserve() if clock is not None else None
        try:
            super().start()
        except BaseException:
            if self._reservation is not None:
                self._reservation.cancel()
            raise

    def run(self) -> None:
        if self._reservation is None:
            super().run()
            return
        with self._reservation.adopt():
            super().run()
