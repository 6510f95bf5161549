"""AlertNotificationStack: composes the alert notification pattern and publishes its outputs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from stacks.alert_notification.construct import AlertNotification
from stacks.config import AppConfig


class AlertNotificationStack(Stack):
    def __init__(self, scope: Construct, id_: str, *, config: AppConfig, **kwargs: Any) -> None:
        super().__init__(scope, id_, description="Alert notification nested-loop state machine", **kwargs)
        pattern = AlertNotification(
            self,
            "AlertNotification",
            slack_webhook_secret_name=config.slack_webhook_secret_name,
            schedule=config.alert_schedule,
            slack_signing_secret_name=config.slack_signing_secret_name,
            slack_team_id=config.slack_team_id,
            actions_reserved_concurrency=config.action_endpoint_reserved_concurrency,
        )
        self.state_machines = pattern.state_machines
        self.failure_queues = pattern.failure_queues
        self.watched_metrics = pattern.watched_metrics
        CfnOutput(self, "StateMachineArn", value=pattern.state_machine.state_machine_arn)
        CfnOutput(self, "AlertTableName", value=pattern.table.table_name)
        CfnOutput(
            self,
            "OnCallTableName",
            value=pattern.on_call.table.table_name,
            description="On-call schedules, one item per schedule (key schedule_id); escalation names them schedule:<id>",
        )
        CfnOutput(
            self,
            "AlertActionsUrl",
            value=pattern.actions.url,
            description="Endpoint of the Acknowledge/Resolve links; a Slack app's interactivity Request URL",
        )
