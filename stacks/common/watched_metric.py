"""Metrics a pattern asks the monitoring to alarm on, beside its machines and failure queues."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_cloudwatch as cloudwatch


@dataclass(frozen=True)
class WatchedMetric:
    """An alarm (MonitoringStack, on the status topic) when ``metric`` reaches ``threshold`` in a period.

    The alarm lives with the topic rather than with the metric's resource: an alarm in the pattern's
    stack notifying the monitoring stack's topic would make each stack import from the other.
    """

    metric: cloudwatch.IMetric
    threshold: float
    alarm_id: str
    description: str
