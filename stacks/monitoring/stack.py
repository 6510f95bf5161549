"""MonitoringStack: watches every state machine of the app and publishes the topic's ARN."""

from __future__ import annotations

from typing import Any, Sequence

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.common.failure_queue import FailureQueue
from stacks.common.watched_metric import WatchedMetric
from stacks.config import AppConfig
from stacks.monitoring.construct import ExecutionMonitoring


class MonitoringStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        config: AppConfig,
        state_machines: Sequence[sfn.IStateMachine],
        failure_queues: Sequence[FailureQueue] = (),
        watched_metrics: Sequence[WatchedMetric] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, description="Execution status events, alarms and dashboard", **kwargs)
        monitoring = ExecutionMonitoring(
            self,
            "ExecutionMonitoring",
            state_machines=state_machines,
            failure_queues=failure_queues,
            watched_metrics=watched_metrics,
            statuses=config.monitored_statuses,
            alert_email=config.alert_email,
        )
        CfnOutput(self, "StatusTopicArn", value=monitoring.topic.topic_arn)
