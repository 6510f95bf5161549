"""What a CloudWatch alarm's state change does to the alerts that name it, with no AWS client.

The event is EventBridge's "CloudWatch Alarm State Change" (source aws.cloudwatch), whose detail
holds ``alarmName``, ``state`` and ``previousState`` {``value``, ``timestamp``}
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html).
ALARM raises the alerts (a new occurrence: active, a new execution at once), OK resolves them;
INSUFFICIENT_DATA says nothing about the thing watched (metrics have gaps, and missing data moves an
alarm there by default), so a change to it changes nothing and a change from it back to ALARM
raises only if the alarm's last occurrence had ended. docs/alert-lifecycle.md has the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

RAISE, RESOLVE = "raise", "resolve"
_EFFECTS = {"ALARM": RAISE, "OK": RESOLVE}
# The state a raise must come from to open a new occurrence whatever the alert item says.
_ENDED = "OK"


class InvalidAlarmEvent(Exception):
    """The event is not a CloudWatch alarm state change this handler can read."""


@dataclass(frozen=True)
class AlarmChange:
    alarm_name: str
    state: str
    # When the alarm entered the state, as CloudWatch wrote it ("2026-11-24T13:40:05.123+0000"): the
    # same for every delivery of one change, so it orders changes and names the execution it starts.
    state_timestamp: str
    changed_at: datetime
    previous_state: str | None = None  # absent from an event that has no previousState

    @property
    def effect(self) -> str | None:
        return _EFFECTS.get(self.state)

    @property
    def reopens(self) -> bool:
        """A raise from OK: the last occurrence is over even if its OK was never applied (lost, or late).
        From INSUFFICIENT_DATA (or unknown), the alert item says whether an occurrence is still open."""
        return self.state == "ALARM" and self.previous_state == _ENDED


def read_alarm_change(event: Mapping[str, Any]) -> AlarmChange:
    detail = event.get("detail") if isinstance(event, Mapping) else None
    if not isinstance(detail, Mapping) or event.get("detail-type") != "CloudWatch Alarm State Change":
        raise InvalidAlarmEvent("not a CloudWatch Alarm State Change event")
    name, state = detail.get("alarmName"), detail.get("state")
    if not isinstance(name, str) or not name or not isinstance(state, Mapping):
        raise InvalidAlarmEvent("the event names no alarm or state")
    value, stamp = state.get("value"), state.get("timestamp")
    if not isinstance(value, str) or not isinstance(stamp, str):
        raise InvalidAlarmEvent("the event's state has no value or timestamp")
    try:
        # Equivalent mutants: from Python 3.11 the fromisoformat below also reads CloudWatch's form.
        changed_at = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f%z")  # pragma: no mutate
    except ValueError:
        try:
            changed_at = datetime.fromisoformat(stamp)
        except ValueError:
            raise InvalidAlarmEvent(f"the state timestamp {stamp!r} is not a time") from None
    if changed_at.tzinfo is None:
        raise InvalidAlarmEvent(f"the state timestamp {stamp!r} has no time zone")
    previous = detail.get("previousState")
    previous_value = previous.get("value") if isinstance(previous, Mapping) else None
    return AlarmChange(name, value, stamp, changed_at, previous_value if isinstance(previous_value, str) else None)


def is_redelivery(old_item: Mapping[str, Any] | None, change: AlarmChange) -> bool:
    """A refused raise whose item already holds this very change: the event came again, so its
    execution may still have to be started (StartExecution under the same name starts nothing twice)."""
    return old_item is not None and old_item.get("alarm_state_at") == change.state_timestamp
