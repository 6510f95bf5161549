"""Corrections to moto's CloudWatch alarms: their first state, what a state change sets off and
records, and DescribeAlarmHistory."""

from __future__ import annotations

import datetime
from typing import Any, Callable

from emulator.cloudwatch.alarms import INITIAL_REASON, INSUFFICIENT_DATA, State, as_epoch, record_state

# The region whose CloudWatch holds the account's dashboards for every region.
DASHBOARDS_REGION = "us-east-1"


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
    actions, as an evaluation does; moto only stored the new state. Every change, SetAlarmState's
    or an evaluation's, is stamped later than the one before (moto stamped two changes under a
    paused clock alike) and recorded for DescribeAlarmHistory; SetAlarmState on a missing alarm is
    ResourceNotFound naming it (HTTP 404, as the API model gives the error).

    https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_SetAlarmState.html
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html
    """
    from moto.cloudwatch.exceptions import ResourceNotFound
    from moto.cloudwatch.models import Alarm, CloudWatchBackend
    from moto.core.utils import utcnow

    original = CloudWatchBackend.set_alarm_state

    def set_alarm_state(self: Any, alarm_name: str, reason: str, reason_data: str, state_value: str) -> None:
        model = self.alarms.get(alarm_name)
        if model is None:  # moto raised ResourceNotFound with no message: "An unspecified service error occurred"
            raise ResourceNotFound(f"Alarm {alarm_name} not found")
        previous = State.of(model)
        original(self, alarm_name, reason, reason_data, state_value)
        if previous.value != state_value:
            on_change(model, previous)

    def update_state(self: Any, reason: str, reason_data: str, state_value: str) -> None:
        record_state(self, State(state_value, reason, reason_data, as_epoch(utcnow())))

    CloudWatchBackend.set_alarm_state = set_alarm_state
    Alarm.update_state = update_state


def install_describe_alarm_history() -> None:
    """DescribeAlarmHistory answers each alarm's state changes, newest first unless ``ScanBy`` says
    ``TimestampAscending``, filtered by name, item type and dates, ``MaxRecords`` (default 100) a
    page; moto had no handler (HTTP 500). Only StateUpdate items are kept, and only while the alarm
    exists (AWS keeps a deleted alarm's history two weeks).

    https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_DescribeAlarmHistory.html
    """
    from moto.cloudwatch.responses import CloudWatchResponse
    from moto.core.responses import ActionResult

    def describe_alarm_history(self: Any) -> Any:
        name, kind = self._get_param("AlarmName"), self._get_param("HistoryItemType")
        types = self._get_param("AlarmTypes", [])
        start, end = self._get_param("StartDate"), self._get_param("EndDate")
        items = [item for alarm in self.cloudwatch_backend.alarms.values() if name in (None, alarm.name)
                 for item in alarm.history
                 if kind in (None, item["HistoryItemType"]) and (not types or item["AlarmType"] in types)
                 and (start is None or item["Timestamp"] >= _moment(start))
                 and (end is None or item["Timestamp"] <= _moment(end))]
        items.sort(key=lambda item: item["Timestamp"], reverse=self._get_param("ScanBy") != "TimestampAscending")
        first = int(self._get_param("NextToken") or 0)
        last = first + int(self._get_param("MaxRecords") or 100)
        result: dict[str, Any] = {"AlarmHistoryItems": items[first:last]}
        if last < len(items):
            result["NextToken"] = str(last)
        return ActionResult(result)

    CloudWatchResponse.describe_alarm_history = describe_alarm_history


def _moment(value: Any) -> datetime.datetime:
    """A request's date parameter (ISO 8601 text, or already a datetime) as an aware UTC datetime."""
    moment = value if isinstance(value, datetime.datetime) else datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def install_account_wide_dashboards() -> None:
    """Dashboards belong to the account, not to a region (their ARN has no region): one put in
    us-east-1 is listed, read and replaced from every region, and a stack that creates a dashboard
    under a name the account already uses fails, "Dashboard '<name>' already exists"; moto kept
    dashboards per region, so a second region's stack made a second one.
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Dashboards.html
    """
    from moto.cloudwatch.models import CloudWatchBackend, Dashboard, cloudwatch_backends
    from moto.core.exceptions import ServiceException

    original_init = CloudWatchBackend.__init__

    def init(self: Any, region_name: str, account_id: str) -> None:
        original_init(self, region_name, account_id)
        if region_name != DASHBOARDS_REGION:
            self.dashboards = cloudwatch_backends[account_id][DASHBOARDS_REGION].dashboards

    original_create = Dashboard.create_from_cloudformation_json.__func__

    def create(cls: Any, resource_name: str, cloudformation_json: dict, account_id: str, region_name: str,
               **kwargs: Any) -> Any:
        name = cloudformation_json.get("Properties", {}).get("DashboardName")
        if name and name in cloudwatch_backends[account_id][region_name].dashboards:
            raise ServiceException("AlreadyExists", f"Dashboard '{name}' already exists")
        return original_create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)

    CloudWatchBackend.__init__ = init
    Dashboard.create_from_cloudformation_json = classmethod(create)
