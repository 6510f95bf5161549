"""Plans a scheduled dispatch: which active alerts get a new execution, and under which name."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

# Execution names allow more, but ASCII letters, digits, - and _ also keep CloudWatch Logs happy.
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_READABLE_PART = 50  # + "-" + 10 hex + "-" + 16-character timestamp stays within the 80-character limit


def scheduled_time(event: Mapping[str, Any], now: datetime | None = None) -> datetime:
    """The schedule slot this dispatch belongs to: the EventBridge event's time, else now."""
    stamp = event.get("time") if isinstance(event, Mapping) else None
    moment = datetime.fromisoformat(stamp) if isinstance(stamp, str) else (now or datetime.now(timezone.utc))
    return moment.astimezone(timezone.utc)


def execution_name(alert_id: str, scheduled_at: datetime) -> str:
    """Same alert and slot give the same name, so a redelivered schedule event starts nothing new.

    The hash keeps two ids that read alike once cleaned ("a/b", "a:b") apart.
    """
    readable = _NAME_UNSAFE.sub("-", alert_id).strip("-")[:_READABLE_PART] or "alert"
    digest = hashlib.sha256(alert_id.encode()).hexdigest()[:10]
    return f"{readable}-{digest}-{scheduled_at.astimezone(timezone.utc):%Y%m%dT%H%M%SZ}"


def alert_id_of(execution_input: str | None) -> str | None:
    """The alert a running execution notifies, read from its input (whoever started it, whatever its name)."""
    try:
        document = json.loads(execution_input or "null")
    except ValueError:
        return None
    alert_id = document.get("alert_id") if isinstance(document, dict) else None
    return alert_id if isinstance(alert_id, str) else None


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
