"""EventBridge Scheduler one-time schedules that invoke a function once, armed at most once by name.

Handoff notices and a person's later contact rules are each a one-time schedule: ``at()`` in UTC
(EventBridge Scheduler User Guide, "Schedule types"; Scheduler fires within its minute), no flexible
window, deleted by Scheduler once it has fired (``ActionAfterCompletion: DELETE``), in a schedule group
of its own. Its name is derived from what it is for, so arming it again (a retry, a re-arm) finds the
name taken (ConflictException) and changes nothing: it counts as armed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any


@dataclass(frozen=True)
class Target:
    """What a group's schedules invoke, as which role, and where what they could not deliver goes."""

    group: str
    function_arn: str
    role_arn: str
    dead_letter_arn: str


def at_expression(instant: datetime) -> str:
    """``at(yyyy-mm-ddThh:mm:ss)`` of ``instant`` in UTC (API Reference, CreateSchedule: ScheduleExpression)."""
    return f"at({instant.astimezone(timezone.utc):%Y-%m-%dT%H:%M:%S})"


def create_once(scheduler: Any, target: Target, name: str, expression: str, payload: dict[str, Any]) -> bool:
    """Create the one-time schedule; False when one of that name exists already (armed, possibly due:
    left as it is). ``scheduler`` is the caller's boto3 Scheduler client."""
    try:
        scheduler.create_schedule(
            Name=name,
            GroupName=target.group,
            ScheduleExpression=expression,
            ScheduleExpressionTimezone="UTC",
            FlexibleTimeWindow={"Mode": "OFF"},
            ActionAfterCompletion="DELETE",
            Target={
                "Arn": target.function_arn,
                "RoleArn": target.role_arn,
                "Input": json.dumps(payload),
                # A schedule's dead-letter queue (User Guide, "Configuring a dead-letter queue").
                "DeadLetterConfig": {"Arn": target.dead_letter_arn},
            },
        )
    except scheduler.exceptions.ConflictException:
        return False
    return True
