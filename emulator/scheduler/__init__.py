"""EventBridge Scheduler, firing: ``at()``, ``rate()`` and ``cron()`` schedules invoke their Lambda target on the simulated clock.

moto's ``scheduler`` backend stores schedules and fires none. Here, as the EventBridge Scheduler User
Guide describes them ("Schedule types"), each in the schedule's ``ScheduleExpressionTimezone`` (UTC
when absent):

- ``at(yyyy-mm-ddThh:mm:ss)`` is wall-clock time in the zone; the schedule fires once, when the
  simulated clock has passed it. With ``ActionAfterCompletion: DELETE`` it is then deleted.
- ``rate(value minutes|hours|days)`` fires first when it is created ("If you do not provide a
  StartDate, your schedule starts invoking its target immediately"; here: when the emulator first
  sees it), then every period after; a day is 24 hours whatever the clocks do.
- ``cron(minutes hours day-of-month month day-of-week year)`` fires at each wall-clock time in the
  zone that matches (``*``, ``?``, lists, ranges, ``/`` steps, month and day names; day-of-week 1 is
  Sunday). A time the clocks skip in spring does not fire; a time they repeat in autumn fires once,
  the first time. ``L``, ``W`` and ``#`` are not played: such a schedule is refused (``refused``).

A firing invokes the Lambda target asynchronously with the target's ``Input`` if the target's
``RoleArn`` may ``lambda:InvokeFunction`` on it (otherwise nothing is invoked and ``refused`` records
why). A schedule updated to a new expression fires on its new expression. The scheduler is one of the
clock's timers (emulator/clock): an advance or a jump stops at each occurrence, so none is passed;
should the clock run past several between two looks (a high speed), the schedule fires once, and next
at its first occurrence after now.
Not played: ``StartDate``/``EndDate``, flexible time windows, retries and dead-letter queues.

As with scheduled rules (emulator/events), firing is off by default: tests and the demo say which
schedules fire (``fire_on_clock``, names or fnmatch patterns); ``LocalAws(auto_schedules=True)``
fires every one. A recurring schedule not let fire moves on past its occurrences without firing.
Nothing waits on the clock for a schedule, so an idle emulator's instant clock does not jump to it;
a jump to a later wake-up stops at it first.
``armed()`` lists every enabled schedule with its next firing (``python -m emulator clock status``).
"""

from __future__ import annotations

import fnmatch
import json
import re
import threading
from datetime import date, datetime, timedelta, timezone
from typing import Any, Callable
from urllib.parse import unquote
from zoneinfo import ZoneInfo

from emulator.clock import SimClock

_AT = re.compile(r"^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$")
_RATE = re.compile(r"^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$")
_CRON = re.compile(r"^cron\((.+)\)$")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
_MONTHS = {name: n for n, name in enumerate(("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"), 1)}
_WEEKDAYS = {name: n for n, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"), 1)}
# (lowest, highest, names) of minutes, hours, day-of-month, month, day-of-week, year
_CRON_FIELDS = ((0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS), (1, 7, _WEEKDAYS), (1970, 2199, {}))
_CRON_HORIZON_DAYS = 366 * 8  # a cron naming no day within it (31 FEB) never fires


class UnplayedExpression(ValueError):
    """A schedule expression the emulator does not fire."""


def at_instant(expression: str, time_zone: str | None) -> float | None:
    """The epoch second an ``at()`` expression names in ``time_zone``; None for rate/cron."""
    match = _AT.match(expression.strip())
    if match is None:
        return None
    local = datetime.fromisoformat(match.group(1)).replace(tzinfo=ZoneInfo(time_zone or "UTC"))
    return local.astimezone(timezone.utc).timestamp()


def rate_seconds(expression: str) -> int | None:
    """The period of a ``rate()`` expression in seconds; None for at/cron."""
    match = _RATE.match(expression.strip())
    if match is None:
        return None
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2).rstrip("s")]


def next_cron(expression: str, time_zone: str | None, after: float) -> float | None:
    """The first instant after ``after`` whose wall-clock time in ``time_zone`` the ``cron()`` matches;
    None for at/rate. A skipped (spring) time is no occurrence; a repeated (autumn) one is its first."""
    match = _CRON.match(expression.strip())
    if match is None:
        return None
    fields = match.group(1).split()
    if len(fields) != 6:
        raise UnplayedExpression(f"cron() takes 6 fields, got {len(fields)}: {expression}")
    minutes, hours, days, months, weekdays, years = (
        _cron_values(text, *spec) for text, spec in zip(fields, _CRON_FIELDS))
    if (days is None) == (weekdays is None):
        raise UnplayedExpression(f"cron() needs ? in exactly one of day-of-month and day-of-week: {expression}")
    zone = ZoneInfo(time_zone or "UTC")
    start = datetime.fromtimestamp(after, timezone.utc).astimezone(zone)
    for offset in range(_CRON_HORIZON_DAYS):
        day = start.date() + timedelta(days=offset)
        if day.year not in years or day.month not in months:
            continue
        if days is not None and day.day not in days:
            continue
        if weekdays is not None and day.isoweekday() % 7 + 1 not in weekdays:  # 1 is Sunday
            continue
        for hour in sorted(hours):
            for minute in sorted(minutes):
                instant = _wall_clock_instant(day, hour, minute, zone)
                if instant is not None and instant > after:
                    return instant
    return None


def _wall_clock_instant(day: date, hour: int, minute: int, zone: ZoneInfo) -> float | None:
    """The instant of a wall-clock time (its first, if the clocks repeat it); None if they skip it."""
    local = datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)
    instant = local.astimezone(timezone.utc)
    if instant.astimezone(zone).replace(tzinfo=None) != local.replace(tzinfo=None):
        return None
    return instant.timestamp()


def _cron_values(text: str, lowest: int, highest: int, names: dict[str, int]) -> set[int] | None:
    """The values one cron field matches; None for ``?`` (the other day field decides)."""
    if text == "?":
        return None
    values: set[int] = set()
    for part in text.upper().split(","):
        bare = part
        for name in names:  # JUL and WED hold an L and a W of their own
            bare = bare.replace(name, "")
        if any(mark in bare for mark in ("L", "W", "#")):
            raise UnplayedExpression(f"cron() field {text!r}: L, W and # are not played by the emulator")
        span, _, step = part.partition("/")
        if span == "*":
            first, last = lowest, highest
        else:
            low, _, high = span.partition("-")
            first = _cron_value(low, names)
            last = _cron_value(high, names) if high else (highest if step else first)
        if not lowest <= first <= last <= highest:
            raise UnplayedExpression(f"cron() field {text!r} is outside {lowest}-{highest}")
        values.update(range(first, last + 1, int(step) if step else 1))
    return values


def _cron_value(text: str, names: dict[str, int]) -> int:
    if text in names:
        return names[text]
    if not text.isdigit():
        raise UnplayedExpression(f"cron() value {text!r} is not a number or a name")
    return int(text)


def role_allows(documents: list[Any], action: str, resource: str) -> bool:
    """Whether any Allow statement of these IAM policy documents grants ``action`` on ``resource`` (no Deny used here)."""
    for document in documents:
        if isinstance(document, str):
            document = json.loads(unquote(document))
        statements = document.get("Statement", [])
        for statement in statements if isinstance(statements, list) else [statements]:
            if statement.get("Effect") != "Allow":
                continue
            actions = statement.get("Action", [])
            resources = statement.get("Resource", [])
            actions = actions if isinstance(actions, list) else [actions]
            resources = resources if isinstance(resources, list) else [resources]
            if any(fnmatch.fnmatchcase(action, a) for a in actions) and any(fnmatch.fnmatchcase(resource, r) for r in resources):
                return True
    return False


class Scheduler:
    """Fires the due schedules of moto's scheduler backend."""

    def __init__(self, clock: SimClock, account_id: str, region: str, invoke: Callable[[Any, bytes], None],
                 auto_schedules: bool = False) -> None:
        self.clock = clock
        self.account_id = account_id
        self.region = region
        self._invoke = invoke
        self.fired: list[dict] = []  # {"schedule", "at", "target", "input"}
        self.refused: list[dict] = []  # {"schedule", "reason"}
        # One schedule as created or updated (a re-created name is a new schedule) -> its next firing (None: done)
        self._next: dict[tuple, float | None] = {}
        self._names: set[str] | None = None if auto_schedules else set()
        self._lock = threading.Lock()
        self._firing = threading.Lock()  # the poll and the clock's advance step schedules one at a time
        self._stop = threading.Event()
        clock.add_timer(self)
        threading.Thread(target=self._run, name="scheduler", daemon=True).start()

    def fire_on_clock(self, names: set[str] | None) -> None:
        """Let these schedules (names or fnmatch patterns; None: every one) fire as the simulated clock passes their time."""
        with self._lock:
            self._names = None if names is None else set(names)

    def stop(self) -> None:
        self._stop.set()
        self.clock.remove_timer(self)

    def armed(self) -> list[dict]:
        """Every enabled schedule with a firing to come: name, group, expression, zone, next (simulated epoch), soonest first."""
        listed = []
        for schedule in self._schedules():
            with self._lock:
                due = self._next.get(_key(schedule))
            if (schedule.state or "ENABLED") == "ENABLED" and due is not None:
                listed.append({"name": schedule.name, "group": schedule.group_name, "expression": schedule.schedule_expression,
                               "time_zone": schedule.schedule_expression_timezone or "UTC", "next": due})
        return sorted(listed, key=lambda entry: entry["next"])

    def _schedules(self) -> list[Any]:
        for _ in range(3):  # a schedule created or deleted while the groups are listed: list them again
            try:
                from moto.scheduler.models import scheduler_backends

                groups = list(scheduler_backends[self.account_id][self.region].schedule_groups.values())
                return [schedule for group in groups for schedule in list(group.schedules.values())]
            except Exception:  # noqa: BLE001 - the backend may be mid-reset between runs
                continue
        return []

    def _enabled(self, schedule: Any) -> bool:
        """Let fire on the clock (fire_on_clock)."""
        with self._lock:
            return self._names is None or any(fnmatch.fnmatchcase(schedule.name, n) for n in self._names)

    def next_due(self, until: float) -> float | None:
        """The clock's timer (emulator.clock.Timed): the soonest firing of a schedule let fire."""
        dues = []
        for schedule in self._schedules():
            with self._lock:
                due = self._next.get(_key(schedule))
            if due is not None and (schedule.state or "ENABLED") == "ENABLED" and self._enabled(schedule):
                dues.append(due)
        return min(dues, default=None)

    def fire_due(self) -> None:
        """Learn new schedules' first firings, and fire those the clock has reached."""
        with self._firing:
            for schedule in self._schedules():
                if (schedule.state or "ENABLED") == "ENABLED":
                    self._step(schedule, self._enabled(schedule))

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.fire_due()

    def _step(self, schedule: Any, enabled: bool) -> None:
        """Learn a new schedule's first firing; fire it once due (if enabled) and learn its next."""
        key, now = _key(schedule), self.clock.now()
        with self._lock:
            known = key in self._next
            due = self._next.get(key)
        if not known:
            try:
                due = self._first(schedule, now)
            except UnplayedExpression as unplayed:
                self.refused.append({"schedule": schedule.name, "reason": str(unplayed)})
                due = None
            with self._lock:
                self._next[key] = due
        if due is None or now < due:
            return
        one_time = at_instant(schedule.schedule_expression, schedule.schedule_expression_timezone) is not None
        if one_time and not enabled:
            return  # fires once let: a test arms a one-time schedule, then lets it fire
        with self._lock:
            self._next[key] = None if one_time else self._following(schedule, due, now)
        if enabled:
            self._fire(schedule)
        if one_time and schedule.action_after_completion == "DELETE":
            self._delete(schedule)

    def _first(self, schedule: Any, now: float) -> float | None:
        expression, zone = schedule.schedule_expression, schedule.schedule_expression_timezone
        at = at_instant(expression, zone)
        if at is not None:
            return at
        if rate_seconds(expression) is not None:
            return now  # "starts invoking its target immediately"
        nxt = next_cron(expression, zone, now - 1)  # a cron matching this very second fires in it
        if nxt is None and not _CRON.match(expression.strip()):
            raise UnplayedExpression(f"not an at(), rate() or cron() expression: {expression}")
        return nxt

    def _following(self, schedule: Any, due: float, now: float) -> float | None:
        """The first occurrence after ``now`` (missed ones are skipped: the clock jumped)."""
        expression, zone = schedule.schedule_expression, schedule.schedule_expression_timezone
        period = rate_seconds(expression)
        if period is not None:
            return due + ((now - due) // period + 1) * period
        return next_cron(expression, zone, now)

    def _fire(self, schedule: Any) -> None:
        target = schedule.target
        with self.clock.busy():
            if target["Arn"].split(":")[2] != "lambda":
                self.refused.append({"schedule": schedule.name, "reason": f"the emulator fires Lambda targets only, not {target['Arn']}"})
                return
            if not role_allows(self._role_policies(target.get("RoleArn", "")), "lambda:InvokeFunction", target["Arn"]):
                self.refused.append({"schedule": schedule.name, "reason": f"{target.get('RoleArn')} may not lambda:InvokeFunction {target['Arn']}"})
                return
            from moto.awslambda.models import lambda_backends

            function = lambda_backends[self.account_id][self.region].get_function(target["Arn"])
            payload = target.get("Input", "{}")
            self.fired.append({"schedule": schedule.name, "at": self.clock.now(), "target": target["Arn"], "input": payload})
            self._invoke(function, payload.encode())

    def _delete(self, schedule: Any) -> None:
        """ActionAfterCompletion DELETE: the one-time schedule goes once it has invoked its target."""
        from moto.scheduler.models import scheduler_backends

        group = scheduler_backends[self.account_id][self.region].schedule_groups.get(schedule.group_name)
        if group is not None and group.schedules.get(schedule.name) is schedule:
            group.schedules.pop(schedule.name)

    def _role_policies(self, role_arn: str) -> list[Any]:
        from moto.iam.models import iam_backends

        iam = iam_backends[self.account_id]["aws"]
        role = next((r for r in iam.roles.values() if r.arn == role_arn), None)
        if role is None:
            return []
        managed = [version.document for policy in role.managed_policies.values() for version in policy.versions
                   if version.version_id == policy.default_version_id]
        return [*role.policies.values(), *managed]


def _key(schedule: Any) -> tuple:
    """One schedule as created or last updated: a new expression, zone or target is a new firing plan."""
    return (schedule.arn, id(schedule), schedule.schedule_expression, schedule.schedule_expression_timezone,
            json.dumps(schedule.target, sort_keys=True))
