"""AlertNotificationStack: composes the alert notification pattern and publishes its outputs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_dynamodb as dynamodb
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
            existing_alert_table=self._adopted("AdoptedAlertTable", config.alert_table_name),
            existing_on_call_table=self._adopted("AdoptedOnCallTable", config.on_call_table_name),
            existing_people_table=self._adopted("AdoptedPeopleTable", config.people_table_name),
            sms_origination_identity=config.sms_origination_identity,
            email_from=config.alert_email_from,
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
            "PeopleTableName",
            value=pattern.people.table.table_name,
            description="People, one item per person (key member): contact methods and notification rules",
        )
        CfnOutput(
            self,
            "SmsRepliesTopicArn",
            value=pattern.people.replies_topic.topic_arn,
            description="Point your End User Messaging number's two-way SMS channel here: replies acknowledge and resolve",
        )
        CfnOutput(
            self,
            "AlertActionsUrl",
            value=pattern.actions.url,
            description="Endpoint of the Acknowledge/Resolve links; a Slack app's interactivity Request URL",
        )

    def _adopted(self, id_: str, table_name: str | None) -> dynamodb.ITable | None:
        """The kept table named by a context key, or None to create one. By name alone: the tables are
        encrypted with the AWS managed key, which needs no grant, and the alert table's index is
        granted by its own ARN (alarms.py), so no index is named here."""
        return dynamodb.Table.from_table_name(self, id_, table_name) if table_name is not None else None
