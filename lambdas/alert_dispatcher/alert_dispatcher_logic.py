"""Plans a scheduled dispatch: which active alerts get a new execution (named by patterns_common.alert_executions)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from patterns_common.alert_executions import alert_key, alert_key_of


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
        document = json.loads(execution_input or "null")
    except ValueError:
        return None
    alert_id = document.get("alert_id") if isinstance(document, dict) else None
    return alert_id if isinstance(alert_id, str) else None


class DispatchFailed(Exception):
    """Some alerts got no execution; the class name is the error the on-failure record carries."""


def failure_message(failed: Mapping[str, str], attempted: int) -> str:
    """Names every alert that was not started and why (the dispatch failure queue's record shows it)."""
    listed = ", ".join(f"{alert_id} ({error})" for alert_id, error in sorted(failed.items()))
    return f"{len(failed)} of {attempted} alerts were not started: {listed}"


@dataclass(frozen=True)
class DispatchPlan:
    to_start: list[str]
    already_running: list[str]


def plan_dispatch(active_alert_ids: Iterable[str], running_alert_ids: Iterable[str]) -> DispatchPlan:
    active = sorted(set(active_alert_ids))
    running = set(running_alert_ids)
    return DispatchPlan(
        to_start=[alert_id for alert_id in active if alert_id not in running],
        already_running=[alert_id for alert_id in active if alert_id in running],
    )
