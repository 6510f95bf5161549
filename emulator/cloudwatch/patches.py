"""Corrections to moto's CloudWatch alarms: their first state, and what a state change sets off."""

from __future__ import annotations

from typing import Any, Callable

from emulator.cloudwatch.alarms import INITIAL_REASON, INSUFFICIENT_DATA, State


def install_initial_alarm_state() -> None:
    """PutMetricAlarm: "the alarm state is immediately set to INSUFFICIENT_DATA"; moto set OK.

    https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html
    """
    from moto.cloudwatch.models import Alarm

    original_init = Alarm.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.state_value, self.state_reason = INSUFFICIENT_DATA, INITIAL_REASON
        self.state_reason_data = None

    Alarm.__init__ = init


def install_alarm_state_changes(on_change: Callable[[Any, State], None]) -> None:
    """SetAlarmState that changes the state sends the state-change event and runs that state's
    actions, as an evaluation does; moto only stored the new state.

    https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_SetAlarmState.html
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html
    """
    from moto.cloudwatch.models import CloudWatchBackend

    original = CloudWatchBackend.set_alarm_state

    def set_alarm_state(self: Any, alarm_name: str, reason: str, reason_data: str, state_value: str) -> None:
        model = self.alarms.get(alarm_name)
        previous = State.of(model) if model is not None else None
        original(self, alarm_name, reason, reason_data, state_value)
        if previous is not None and previous.value != state_value:
            on_change(model, previous)

    CloudWatchBackend.set_alarm_state = set_alarm_state
