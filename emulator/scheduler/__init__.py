"""EventBridge Scheduler, firing: one-time ``at()`` schedules invoke their Lambda target on the simulated clock.

moto's ``scheduler`` backend stores schedules and fires none. Here, as the EventBridge Scheduler User
Guide describes it ("Schedule types"): ``at(yyyy-mm-ddThh:mm:ss)`` is read as wall-clock time in the
schedule's ``ScheduleExpressionTimezone`` (UTC when absent), and the schedule fires once, within the
minute after that instant, when the simulated clock has passed it; it invokes its Lambda target
asynchronously with the target's ``Input``, if the target's ``RoleArn`` may ``lambda:InvokeFunction``
on it (otherwise nothing is invoked and ``refused`` records why). A schedule updated to a new
expression fires again at its new time. ``rate()`` and ``cron()`` schedules are not fired.

As with scheduled rules (emulator/events), firing is off by default: tests and the demo say which
schedules fire (``fire_on_clock``); ``LocalAws(auto_schedules=True)`` fires every one. Nothing waits
on the clock for a schedule, so an idle emulator's instant clock does not jump to it.
"""

from __future__ import annotations

import fnmatch
import json
import re
import threading
from datetime import datetime, timezone
from typing import Any, Callable
from urllib.parse import unquote
from zoneinfo import ZoneInfo

from emulator.clock import SimClock

_AT = re.compile(r"^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$")


def at_instant(expression: str, time_zone: str | None) -> float | None:
    """The epoch second an ``at()`` expression names in ``time_zone``; None for rate/cron."""
    match = _AT.match(expression.strip())
    if match is None:
        return None
    local = datetime.fromisoformat(match.group(1)).replace(tzinfo=ZoneInfo(time_zone or "UTC"))
    return local.astimezone(timezone.utc).timestamp()


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
    """Fires due one-time schedules of moto's scheduler backend."""

    def __init__(self, clock: SimClock, account_id: str, region: str, invoke: Callable[[Any, bytes], None],
                 auto_schedules: bool = False) -> None:
        self.clock = clock
        self.account_id = account_id
        self.region = region
        self._invoke = invoke
        self.fired: list[dict] = []  # {"schedule", "at", "target", "input"}
        self.refused: list[dict] = []  # {"schedule", "reason"}
        self._done: set[tuple] = set()
        self._names: set[str] | None = None if auto_schedules else set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        threading.Thread(target=self._run, name="scheduler", daemon=True).start()

    def fire_on_clock(self, names: set[str] | None) -> None:
        """Let these schedules (None: every one) fire as the simulated clock passes their time."""
        with self._lock:
            self._names = None if names is None else set(names)

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            try:
                from moto.scheduler.models import scheduler_backends

                groups = list(scheduler_backends[self.account_id][self.region].schedule_groups.values())
                schedules = [schedule for group in groups for schedule in list(group.schedules.values())]
            except Exception:  # noqa: BLE001 - the backend may be mid-reset between runs
                continue
            for schedule in schedules:
                with self._lock:
                    enabled = self._names is None or schedule.name in self._names
                if enabled and (schedule.state or "ENABLED") == "ENABLED":
                    self._fire_if_due(schedule)

    def _fire_if_due(self, schedule: Any) -> None:
        at = at_instant(schedule.schedule_expression, schedule.schedule_expression_timezone)
        key = (schedule.arn, schedule.schedule_expression, schedule.schedule_expression_timezone, json.dumps(schedule.target, sort_keys=True))
        if at is None or key in self._done or self.clock.now() < at:
            return
        self._done.add(key)
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

    def _role_policies(self, role_arn: str) -> list[Any]:
        from moto.iam.models import iam_backends

        iam = iam_backends[self.account_id]["aws"]
        role = next((r for r in iam.roles.values() if r.arn == role_arn), None)
        if role is None:
            return []
        managed = [version.document for policy in role.managed_policies.values() for version in policy.versions
                   if version.version_id == policy.default_version_id]
        return [*role.policies.values(), *managed]
