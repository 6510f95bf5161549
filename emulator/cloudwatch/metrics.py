"""Metric datapoints: where they come from and how an alarm finds its own. Plain logic, no AWS client.

- ``execution_metrics``: what Step Functions publishes in ``AWS/States`` when an execution starts
  or ends, per ``StateMachineArn`` (procedure-cw-metrics.html, "Execution metrics").
- ``queue_metrics``: what SQS pushes to ``AWS/SQS`` for a queue once a minute
  (sqs-available-cloudwatch-metrics.html).
- ``emf_metric_data``: the metrics CloudWatch Logs extracts from an embedded-metric-format line
  (CloudWatch_Embedded_Metric_Format_Specification.html), as Powertools' Metrics prints them.
- ``MetricStore``: every datapoint by metric (namespace, name and exact dimension set, as CloudWatch
  tells metrics apart), sorted by time, summed into an alarm's periods.
"""

from __future__ import annotations

import bisect
import datetime as _datetime
import json
from typing import Any

from emulator.cloudwatch.alarms import Aggregate, Alarm, as_epoch, period_start

STATES_NAMESPACE = "AWS/States"
SQS_NAMESPACE = "AWS/SQS"
SQS_INTERVAL = 60  # seconds between two samples of a queue's depth
# Execution status -> the count metric Step Functions publishes for it.
STATUS_METRICS = {
    "SUCCEEDED": "ExecutionsSucceeded",
    "FAILED": "ExecutionsFailed",
    "TIMED_OUT": "ExecutionsTimedOut",
    "ABORTED": "ExecutionsAborted",
}

MetricKey = tuple[str, str, frozenset]


def _utc(epoch: float) -> _datetime.datetime:
    # moto keeps metric timestamps as naive UTC datetimes.
    return _datetime.datetime.fromtimestamp(epoch, _datetime.timezone.utc).replace(tzinfo=None)


def execution_metrics(status: str, machine_arn: str, *, now: float, start: float, redriven: bool) -> list[dict]:
    """PutMetricData entries for an execution that just entered ``status`` (RUNNING: started or redriven)."""
    dimensions = [{"Name": "StateMachineArn", "Value": machine_arn}]

    def datum(name: str, value: float, unit: str) -> dict:
        return {"MetricName": name, "Dimensions": dimensions, "Value": value, "Unit": unit, "Timestamp": _utc(now)}

    if status == "RUNNING":
        return [datum("ExecutionsRedriven" if redriven else "ExecutionsStarted", 1.0, "Count")]
    if status not in STATUS_METRICS:
        return []
    return [datum(STATUS_METRICS[status], 1.0, "Count"), datum("ExecutionTime", round((now - start) * 1000), "Milliseconds")]


def queue_metrics(queue_name: str, *, visible: int, not_visible: int, delayed: int, now: float) -> list[dict]:
    """PutMetricData entries for a queue's depth at ``now``, per ``QueueName``."""
    dimensions = [{"Name": "QueueName", "Value": queue_name}]
    return [
        {"MetricName": name, "Dimensions": dimensions, "Value": float(value), "Unit": "Count", "Timestamp": _utc(now)}
        for name, value in (("ApproximateNumberOfMessagesVisible", visible),
                            ("ApproximateNumberOfMessagesNotVisible", not_visible),
                            ("ApproximateNumberOfMessagesDelayed", delayed))
    ]


def emf_metric_data(line: str) -> list[tuple[str, list[dict]]]:
    """(namespace, PutMetricData entries) for each metric directive of an EMF line; [] for any other line.

    Each dimension set of a directive makes a metric of its own; a member that is a list holds
    several values of one metric. The document's ``_aws.Timestamp`` (milliseconds) dates them.
    """
    line = line.strip()
    if not line.startswith("{") or '"_aws"' not in line:
        return []
    try:
        document = json.loads(line)
        metadata = document["_aws"]
        moment = _utc(float(metadata["Timestamp"]) / 1000)
        directives = metadata["CloudWatchMetrics"]
    except (ValueError, KeyError, TypeError):
        return []  # not an EMF document; CloudWatch Logs keeps it as a plain log event
    found: list[tuple[str, list[dict]]] = []
    for directive in directives:
        entries = []
        for metric in directive.get("Metrics", []):
            value = document.get(metric.get("Name"))
            values = value if isinstance(value, list) else [value]
            numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if not numbers:
                continue
            for dimension_set in directive.get("Dimensions", []) or [[]]:
                if not all(isinstance(document.get(name), str) for name in dimension_set):
                    continue
                entries.append({
                    "MetricName": metric["Name"],
                    "Dimensions": [{"Name": name, "Value": document[name]} for name in dimension_set],
                    "Values": numbers,
                    "Unit": metric.get("Unit", "None"),
                    "Timestamp": moment,
                })
        if entries:
            found.append((directive["Namespace"], entries))
    return found


class MetricStore:
    """Datapoints by metric, read from moto's list as it grows (``index``)."""

    def __init__(self) -> None:
        # key -> (times, datapoints), both sorted by time; a datapoint is (epoch, unit, datum)
        self._series: dict[MetricKey, tuple[list[float], list[tuple[float, Any, Any]]]] = {}
        self._indexed = 0
        self._source: int | None = None

    def index(self, source_id: int, data: list[Any]) -> None:
        """Take in moto datapoints (``MetricDatum`` / ``MetricAggregatedDatum``) not seen yet."""
        if source_id != self._source:  # a new backend: start again
            self._series.clear()
            self._indexed, self._source = 0, source_id
        new = data[self._indexed:]
        self._indexed += len(new)
        for datum in new:
            key = (datum.namespace, datum.name, frozenset((d.name, d.value) for d in datum.dimensions))
            times, points = self._series.setdefault(key, ([], []))
            at = as_epoch(datum.timestamp)
            position = bisect.bisect_right(times, at)
            times.insert(position, at)
            points.insert(position, (at, datum.unit, datum))

    def periods(self, alarm: Alarm, since: float, until: float) -> dict[int, Aggregate]:
        """The alarm's metric summed into its periods, for datapoints in [since, until)."""
        key = (alarm.namespace, alarm.metric_name, frozenset(alarm.dimensions))
        times, points = self._series.get(key, ([], []))
        periods: dict[int, Aggregate] = {}
        for at, unit, datum in points[bisect.bisect_left(times, since):bisect.bisect_left(times, until)]:
            if alarm.unit and unit != alarm.unit:
                continue
            aggregate = periods.setdefault(period_start(at, alarm.period), Aggregate())
            if hasattr(datum, "value"):
                aggregate.add(float(datum.value))
            else:
                aggregate.add_statistics(datum.sample_count, datum.sum, datum.min, datum.max)
        return periods
