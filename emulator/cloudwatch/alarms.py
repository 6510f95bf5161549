"""What a metric alarm decides and says, as CloudWatch documents it: plain logic, no AWS client.

- ``evaluate``: the alarm's state from the last ``EvaluationPeriods`` periods of its metric
  (alarm-evaluation.html: Period, EvaluationPeriods, DatapointsToAlarm for "M out of N",
  ComparisonOperator, Threshold; alarms-and-missing-data.html: TreatMissingData).
- ``state_change_event``: the "CloudWatch Alarm State Change" event EventBridge receives
  (cloudwatch-and-eventbridge.html, "Single Metric Alarm").
- ``sns_notification``: the subject and JSON message an alarm action publishes to an SNS topic
  (Notify_Users_Alarm_Changes.html; the single-metric example AWS keeps in aws-lambda-go's
  events/testdata/cloudwatch-alarm-sns-payload-single-metric.json).
"""

from __future__ import annotations

import datetime as _datetime
import json
import math
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from emulator.events.envelope import aws_event

ALARM, OK, INSUFFICIENT_DATA = "ALARM", "OK", "INSUFFICIENT_DATA"
STATE_CHANGE = "CloudWatch Alarm State Change"
INITIAL_REASON = "Unchecked: Initial alarm creation"
# Comparison operator: (test of value against threshold, words in a state reason).
COMPARISONS: dict[str, tuple[Callable[[float, float], bool], str]] = {
    "GreaterThanOrEqualToThreshold": (lambda v, t: v >= t, "greater than or equal to"),
    "GreaterThanThreshold": (lambda v, t: v > t, "greater than"),
    "LessThanThreshold": (lambda v, t: v < t, "less than"),
    "LessThanOrEqualToThreshold": (lambda v, t: v <= t, "less than or equal to"),
}
SUBJECT_LIMIT = 100  # SNS Publish refuses a longer Subject
# The names alarm notifications give regions (the emulator runs in one).
REGION_NAMES = {"us-east-1": "US East (N. Virginia)", "us-west-2": "US West (Oregon)", "eu-west-1": "EU (Ireland)"}


@dataclass(frozen=True)
class State:
    value: str
    reason: str
    reason_data: str | None
    timestamp: float  # epoch seconds

    @classmethod
    def of(cls, model: Any) -> "State":
        """The state of moto's alarm ``model``."""
        return cls(model.state_value, model.state_reason, model.state_reason_data, as_epoch(model.state_updated_timestamp))


@dataclass(frozen=True)
class Alarm:
    """A metric alarm's configuration, read from moto's model (``Alarm.of``) or written by a test."""

    name: str
    arn: str
    namespace: str
    metric_name: str
    period: int
    evaluation_periods: int
    threshold: float
    comparison_operator: str
    statistic: str | None = None
    extended_statistic: str | None = None
    datapoints_to_alarm: int | None = None
    treat_missing_data: str | None = None
    dimensions: tuple[tuple[str, str], ...] = ()
    description: str | None = None
    unit: str | None = None
    alarm_actions: tuple[str, ...] = ()
    ok_actions: tuple[str, ...] = ()
    insufficient_data_actions: tuple[str, ...] = ()
    actions_enabled: bool = True
    configuration_updated: float = 0.0
    evaluate_low_sample_count_percentile: str | None = None

    @classmethod
    def of(cls, model: Any) -> "Alarm":
        updated = model.configuration_updated_timestamp
        return cls(
            name=model.name,
            arn=model.alarm_arn,
            namespace=model.namespace,
            metric_name=model.metric_name,
            period=int(model.period or 0),
            evaluation_periods=int(model.evaluation_periods or 0),
            threshold=float(model.threshold or 0.0),
            comparison_operator=model.comparison_operator,
            statistic=model.statistic,
            extended_statistic=model.extended_statistic,
            datapoints_to_alarm=int(model.datapoints_to_alarm) if model.datapoints_to_alarm else None,
            treat_missing_data=model.treat_missing_data,
            dimensions=tuple((d.name, d.value) for d in model.dimensions),
            description=model.description,
            unit=model.unit,
            alarm_actions=tuple(model.alarm_actions or ()),
            ok_actions=tuple(model.ok_actions or ()),
            insufficient_data_actions=tuple(model.insufficient_data_actions or ()),
            actions_enabled=bool(model.actions_enabled),
            configuration_updated=as_epoch(updated) if updated is not None else 0.0,
            evaluate_low_sample_count_percentile=model.evaluate_low_sample_count_percentile,
        )

    @property
    def stat(self) -> str:
        return self.extended_statistic or self.statistic or "Average"

    @property
    def evaluable(self) -> bool:
        """A single-metric alarm with a static threshold: what ``evaluate`` decides."""
        return bool(self.metric_name) and self.period > 0 and self.comparison_operator in COMPARISONS

    def actions_for(self, state: str) -> tuple[str, ...]:
        return {ALARM: self.alarm_actions, OK: self.ok_actions, INSUFFICIENT_DATA: self.insufficient_data_actions}[state]


@dataclass
class Aggregate:
    """The datapoints of one period: enough for every statistic an alarm can use."""

    count: float = 0.0
    total: float = 0.0
    minimum: float = math.inf
    maximum: float = -math.inf
    values: list[float] = field(default_factory=list)  # single values, for percentiles

    def add(self, value: float, count: float = 1.0) -> None:
        self.count += count
        self.total += value * count
        self.minimum = min(self.minimum, value)
        self.maximum = max(self.maximum, value)
        self.values.extend([value] * int(count))

    def add_statistics(self, count: float, total: float, minimum: float, maximum: float) -> None:
        self.count += count
        self.total += total
        self.minimum = min(self.minimum, minimum)
        self.maximum = max(self.maximum, maximum)

    def statistic(self, stat: str) -> float | None:
        if self.count <= 0:
            return None
        if stat == "SampleCount":
            return self.count
        if stat == "Sum":
            return self.total
        if stat == "Average":
            return self.total / self.count
        if stat == "Minimum":
            return self.minimum
        if stat == "Maximum":
            return self.maximum
        if stat.startswith("p") and self.values:
            # Nearest rank: the smallest value with at least p% of the values at or below it.
            ordered = sorted(self.values)
            rank = math.ceil(float(stat[1:]) / 100 * len(ordered))
            return ordered[min(max(rank, 1), len(ordered)) - 1]
        return None


def period_start(epoch: float, period: int) -> int:
    """The start of the period ``epoch`` falls in; periods are aligned to the epoch."""
    return int(epoch // period * period)


def evaluate(alarm: Alarm, periods: dict[int, Aggregate], at: int, current: State) -> State | None:
    """The alarm's state when evaluated at ``at`` (a period boundary), or None to keep ``current``.

    The datapoints are the last ``EvaluationPeriods`` whole periods before ``at``. ``ALARM`` when at
    least ``DatapointsToAlarm`` (default ``EvaluationPeriods``) of them breach. A missing datapoint
    is, by ``TreatMissingData``: ``breaching`` or ``notBreaching`` as named; ``ignore``: unknown, so
    the state is kept unless the datapoints present decide it either way; ``missing`` (the
    default): left out, so the datapoints present decide (all present breaching is ALARM when fewer
    than M are present) and with none present the alarm is ``INSUFFICIENT_DATA``.
    """
    test, words = COMPARISONS[alarm.comparison_operator]
    n = alarm.evaluation_periods
    m = alarm.datapoints_to_alarm or n
    starts = [at - k * alarm.period for k in range(n, 0, -1)]  # oldest first
    values = [periods[s].statistic(alarm.stat) if s in periods else None for s in starts]
    present = [(s, v) for s, v in zip(starts, values) if v is not None]
    breaching = sum(1 for _, v in present if test(v, alarm.threshold))
    missing = n - len(present)
    treat = alarm.treat_missing_data or "missing"
    if treat == "breaching":
        breaching += missing
    if treat == "missing":
        if not present:
            # Already INSUFFICIENT_DATA is no change: nothing to record, send or run.
            return None if current.value == INSUFFICIENT_DATA else _insufficient(alarm, starts, at, missing)
        needed = min(m, len(present))
    elif treat == "ignore" and missing and m - missing <= breaching < m:
        return None  # the missing datapoints could go either way
    else:
        needed = m
    value = ALARM if breaching >= needed else OK
    if value == current.value:
        return None
    counted = breaching if value == ALARM else len(present) - breaching
    reason = _threshold_reason(alarm, value, current.value, present, counted, n, m, words, missing, treat)
    return State(value, reason, _reason_data(alarm, starts, at, present), float(at))


def _threshold_reason(alarm: Alarm, value: str, previous: str, present: list[tuple[int, float]], counted: int,
                      n: int, m: int, words: str, missing: int, treat: str) -> str:
    if not present:
        kind = "Breaching" if treat == "breaching" else "NonBreaching"
        s = "s" if missing != 1 else ""
        return (f"Threshold Crossed: no datapoints were received for {missing} period{s} and {missing} missing "
                f"datapoint{s} {'were' if s else 'was'} treated as [{kind}].")
    shown = ", ".join(f"{_number(v)} ({_reason_time(s)})" for s, v in reversed(present))
    negation = "" if value == ALARM else "not "
    verb = "was" if counted == 1 else "were"
    need = m if value == ALARM else n - m + 1
    return (f"Threshold Crossed: {counted} out of the last {n} datapoints [{shown}] {verb} {negation}{words} the "
            f"threshold ({_number(alarm.threshold)}) (minimum {need} datapoint{'s' if need != 1 else ''} for "
            f"{previous} -> {value} transition).")


def _insufficient(alarm: Alarm, starts: list[int], at: int, missing: int) -> State:
    s = "s were" if missing != 1 else " was"
    return State(INSUFFICIENT_DATA, f"Insufficient Data: {missing} datapoint{s} unknown.",
                 _reason_data(alarm, starts, at, []), float(at))


def _reason_data(alarm: Alarm, starts: list[int], at: int, present: list[tuple[int, float]]) -> str:
    data = {
        "version": "1.0",
        "queryDate": state_timestamp(at),
        "startDate": state_timestamp(starts[0]),
        ("extendedStatistic" if alarm.extended_statistic else "statistic"): alarm.stat,
        "period": alarm.period,
        "recentDatapoints": [v for _, v in present],
        "threshold": alarm.threshold,
        "evaluatedDatapoints": [{"timestamp": state_timestamp(s), "value": v} for s, v in reversed(present)],
    }
    return json.dumps(data, separators=(",", ":"))


# -- what others receive ---------------------------------------------------------------------------
def state_change_event(alarm: Alarm, previous: State, current: State, account: str, region: str) -> dict:
    """The EventBridge event for ``alarm`` going from ``previous`` to ``current``."""
    return aws_event(
        source="aws.cloudwatch", detail_type=STATE_CHANGE, account=account, region=region, at=current.timestamp,
        resources=[alarm.arn],
        detail={
            "alarmName": alarm.name,
            "state": _state_detail(current),
            "previousState": _state_detail(previous),
            "configuration": _configuration(alarm),
        },
    )


def _state_detail(state: State) -> dict:
    detail = {"value": state.value, "reason": state.reason, "timestamp": state_timestamp(state.timestamp)}
    if state.reason_data:
        detail["reasonData"] = state.reason_data
    return detail


def _configuration(alarm: Alarm) -> dict:
    metric_stat: dict[str, Any] = {
        "metric": {"namespace": alarm.namespace, "name": alarm.metric_name, "dimensions": dict(alarm.dimensions)},
        "period": alarm.period,
        "stat": alarm.stat,
    }
    if alarm.unit:
        metric_stat["unit"] = alarm.unit
    configuration: dict[str, Any] = {
        # The example's id is a UUID; one per alarm keeps it the same from one event to the next.
        "metrics": [{"id": str(uuid.uuid5(uuid.NAMESPACE_URL, alarm.arn)), "metricStat": metric_stat, "returnData": True}],
    }
    if alarm.description:
        configuration = {"description": alarm.description, **configuration}
    return configuration


def sns_notification(alarm: Alarm, previous: State, current: State, account: str, region: str) -> tuple[str, str]:
    """(Subject, Message) of the SNS notification an alarm action publishes."""
    region_name = REGION_NAMES.get(region, region)
    message = {
        "AlarmName": alarm.name,
        "AlarmDescription": alarm.description,
        "AWSAccountId": account,
        "AlarmConfigurationUpdatedTimestamp": state_timestamp(alarm.configuration_updated),
        "NewStateValue": current.value,
        "NewStateReason": current.reason,
        "StateChangeTime": state_timestamp(current.timestamp),
        "Region": region_name,
        "AlarmArn": alarm.arn,
        "OldStateValue": previous.value,
        "OKActions": list(alarm.ok_actions),
        "AlarmActions": list(alarm.alarm_actions),
        "InsufficientDataActions": list(alarm.insufficient_data_actions),
        "Trigger": {
            "MetricName": alarm.metric_name,
            "Namespace": alarm.namespace,
            "StatisticType": "ExtendedStatistic" if alarm.extended_statistic else "Statistic",
            "Statistic": alarm.stat if alarm.extended_statistic else alarm.stat.upper(),
            "Unit": alarm.unit,
            "Dimensions": [{"value": value, "name": name} for name, value in alarm.dimensions],
            "Period": alarm.period,
            "EvaluationPeriods": alarm.evaluation_periods,
            "DatapointsToAlarm": alarm.datapoints_to_alarm or alarm.evaluation_periods,
            "ComparisonOperator": alarm.comparison_operator,
            "Threshold": alarm.threshold,
            "TreatMissingData": alarm.treat_missing_data or "missing",
            "EvaluateLowSampleCountPercentile": alarm.evaluate_low_sample_count_percentile or "",
        },
    }
    subject = f'{current.value}: "{alarm.name}" in {region_name}'
    # SNS refuses a subject over 100 characters, yet alarms with longer names (CDK's generated
    # ones) notify on AWS; how CloudWatch shortens the subject is not documented, so cut it.
    return subject[:SUBJECT_LIMIT], json.dumps(message, separators=(",", ":"))


# -- history ---------------------------------------------------------------------------------------
def next_state_time(previous: float, now: float) -> float:
    """When a state change made at ``now`` is stamped: CloudWatch's state timestamps (milliseconds)
    strictly increase, so a change never shares the time of the one before it, even on a paused
    simulated clock (a reader that drops a repeat of the latest timestamp would drop it)."""
    return max(round(now * 1000), round(previous * 1000) + 1) / 1000


def record_state(model: Any, state: State) -> State:
    """Give moto's alarm ``model`` the new ``state`` as CloudWatch records a change (its time made
    later than the last one's, a StateUpdate in its history); returns the state it left.

    Only a change of state value is a StateUpdate: DescribeAlarmHistory lists an alarm's state
    transitions, and SetAlarmState acts only "when the updated state differs from the previous
    value" (API_SetAlarmState.html); CloudWatch records no "Alarm updated from OK to OK".
    """
    previous = State.of(model)
    at = next_state_time(previous.timestamp, state.timestamp)
    model.state_value, model.state_reason, model.state_reason_data = state.value, state.reason, state.reason_data
    model.state_updated_timestamp = _utc(at).replace(tzinfo=None)
    if state.value != previous.value:
        model.history.append(history_item(model.name, previous, State.of(model)))
    return previous


def history_item(name: str, old: State, new: State) -> dict:
    """The AlarmHistoryItem of a state change, as DescribeAlarmHistory answers it (HistoryData as
    the AWS CLI reference's describe-alarm-history example shows it)."""
    return {
        "AlarmName": name,
        "AlarmType": "MetricAlarm",
        "Timestamp": _utc(new.timestamp),
        "HistoryItemType": "StateUpdate",
        "HistorySummary": f"Alarm updated from {old.value} to {new.value}",
        "HistoryData": json.dumps({"version": "1.0", "oldState": _history_state(old), "newState": _history_state(new)},
                                  separators=(",", ":")),
    }


def _history_state(state: State) -> dict:
    data = {"stateValue": state.value, "stateReason": state.reason}
    if state.reason_data:
        data["stateReasonData"] = json.loads(state.reason_data)
    return data


# -- formats ---------------------------------------------------------------------------------------
def _utc(epoch: float) -> _datetime.datetime:
    return _datetime.datetime.fromtimestamp(epoch, _datetime.timezone.utc)


def state_timestamp(epoch: float) -> str:
    """CloudWatch's state timestamps: 2019-10-02T17:04:40.985+0000."""
    moment = _utc(epoch)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}+0000"


def _reason_time(epoch: float) -> str:
    return _utc(epoch).strftime("%d/%m/%y %H:%M:%S")


def _number(value: float) -> str:
    return repr(float(value))


def as_epoch(moment: _datetime.datetime) -> float:
    """A moto timestamp (naive means UTC) as epoch seconds."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_datetime.timezone.utc)
    return moment.timestamp()
