"""Plans a scheduled dispatch: which active alerts get a new execution, and when (named by
patterns_common.alert_executions).

An alert whose CloudWatch alarm is OK is not paged, whatever its item says: the item may be active
because it was written without a status, or because the alarm's OK could not be applied.

Alerts are started a few seconds apart (each execution waits its start delay before its first
round), so the alerts of one dispatch do not all post to the one Slack webhook in the same second.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from patterns_common.alert_executions import alert_key, alert_key_of

# Slack takes about one message per second per channel and allows short bursts
# (https://api.slack.com/docs/rate-limits): a few alerts start at once, then one every few seconds,
# closer together when there are many, all within a quarter of the hourly schedule (the alerts
# re-notified are ones already notified).
START_BURST = 3
START_SPACING_SECONDS = 5
MAX_START_SPREAD_SECONDS = 900
# DescribeAlarms takes at most 100 alarm names per call, each of 1 to 255 characters (CloudWatch API
# Reference, DescribeAlarms): a longer name on an item names no alarm, and must not fail the dispatch.
DESCRIBE_ALARMS_BATCH = 100
MAX_ALARM_NAME_LENGTH = 255


def scheduled_time(event: Mapping[str, Any], now: datetime | None = None) -> datetime:
    """The schedule slot this dispatch belongs to: the EventBridge event's time, else now."""
    stamp = event.get("time") if isinstance(event, Mapping) else None
    moment = datetime.fromisoformat(stamp) if isinstance(stamp, str) else (now or datetime.now(timezone.utc))
    return moment.astimezone(timezone.utc)


def running_alert_ids(active_alert_ids: Iterable[str], running_names: Mapping[str, str]) -> tuple[set[str], list[str]]:
    """Which active alerts the running executions (``name -> ARN``) are for, from their names alone.

    Returns the alert ids found and the ARNs of the executions whose names the dispatcher did not
    write (started by hand): only those need DescribeExecution to read their input.
    """
    by_key = {alert_key(alert_id): alert_id for alert_id in active_alert_ids}
    found, unknown = set(), []
    for name, arn in running_names.items():
        key = alert_key_of(name)
        if key is None:
            unknown.append(arn)
        elif key in by_key:
            found.add(by_key[key])
    return found, unknown


def alert_id_of(execution_input: str | None) -> str | None:
    """The alert a running execution notifies, read from its input (whoever started it, whatever its name)."""
    try:
        document = json.loads(execution_input)
    except (TypeError, ValueError):  # no input (None), or not JSON
        return None
    alert_id = document.get("alert_id") if isinstance(document, dict) else None
    return alert_id if isinstance(alert_id, str) else None


class DispatchFailed(Exception):
    """Some alerts got no execution; the class name is the error the on-failure record carries."""


def failure_message(failed: Mapping[str, str], attempted: int) -> str:
    """Names every alert that was not started and why (the dispatch failure queue's record shows it)."""
    listed = ", ".join(f"{alert_id} ({error})" for alert_id, error in sorted(failed.items()))
    return f"{len(failed)} of {attempted} alerts were not started: {listed}"


def start_delays(count: int) -> list[int]:
    """The start delay of each of ``count`` alerts started by one dispatch, in the order started."""
    spaced = count - START_BURST
    spacing = min(START_SPACING_SECONDS, MAX_START_SPREAD_SECONDS / spaced) if spaced > 0 else 0
    return [int(max(0, index - START_BURST + 1) * spacing) for index in range(count)]


def execution_input(alert_id: str, start_delay_seconds: int) -> dict[str, Any]:
    """What the machine is started with: the alert, and the delay when there is one."""
    return {"alert_id": alert_id, **({"start_delay_seconds": start_delay_seconds} if start_delay_seconds else {})}


def alarm_name_of(item: Mapping[str, Any]) -> str | None:
    """The alarm an alert item names, if its ``alarm_name`` can be an alarm's name."""
    name = item.get("alarm_name")
    return name if isinstance(name, str) and 0 < len(name) <= MAX_ALARM_NAME_LENGTH else None


def batches(names: Iterable[str], size: int = DESCRIBE_ALARMS_BATCH) -> list[list[str]]:
    """The distinct ``names``, sorted, in lists of at most ``size``."""
    distinct = sorted(set(names))
    return [distinct[start : start + size] for start in range(0, len(distinct), size)]


def alarm_ok_alert_ids(alarm_names: Mapping[str, str], alarm_states: Mapping[str, str]) -> set[str]:
    """The alerts (``alert id -> alarm name``) whose alarm is OK (``alarm name -> state``).

    Only OK silences an alert: ALARM and INSUFFICIENT_DATA (which says nothing about what is watched),
    like an alarm that no longer exists, leave the item's status to decide.
    """
    return {alert_id for alert_id, alarm in alarm_names.items() if alarm_states.get(alarm) == "OK"}


@dataclass(frozen=True)
class DispatchPlan:
    to_start: list[str]
    already_running: list[str]
    alarm_ok: list[str]


def plan_dispatch(
    active_alert_ids: Iterable[str], running_alert_ids: Iterable[str], alarm_ok: Iterable[str] = ()
) -> DispatchPlan:
    quiet = set(alarm_ok)
    active = sorted(set(active_alert_ids))
    running = set(running_alert_ids)
    return DispatchPlan(
        to_start=[alert_id for alert_id in active if alert_id not in running and alert_id not in quiet],
        already_running=[alert_id for alert_id in active if alert_id in running and alert_id not in quiet],
        alarm_ok=[alert_id for alert_id in active if alert_id in quiet],
    )
