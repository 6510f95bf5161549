"""One stack of a team's app: the Map retry, the job poller and the alert notification, each running the
team's own function (in functions/), built side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from stacks.alert_notification.construct import AlertNotification
from stacks.common.nag import acknowledge
from stacks.job_poller.construct import JobPoller
from stacks.map_retry.construct import MapRetry

FUNCTIONS = Path(__file__).resolve().parent / "functions"
# The team's weekly rotation, handing off on Mondays at 09:00 in Lisbon (docs/on-call-schedules.md).
TEAM_ON_CALL = {
    "schedule_id": "team-weekly",
    "time_zone": "Europe/Lisbon",
    "layers": [{"members": ["U0TEAM0001", "U0TEAM0002"], "start": "2026-11-02T09:00", "shift": "P1W"}],
}


class TeamFunction(Construct):
    """How this team writes a Lambda function: its own role, which starts with writing its log group only."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        source: str,
        timeout: Duration,
        layers: list[lambda_.ILayerVersion] | None = None,
        environment: dict[str, str] | None = None,
    ) -> None:
        super().__init__(scope, id_)
        log_group = logs.LogGroup(self, "Logs", retention=logs.RetentionDays.ONE_WEEK, removal_policy=RemovalPolicy.DESTROY)
        self.role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=lambda_.Runtime.PYTHON_3_13,
            code=lambda_.Code.from_asset(str(FUNCTIONS / source), exclude=["__pycache__"]),
            handler="handler.lambda_handler",
            timeout=timeout,
            role=self.role,
            log_group=log_group,
            layers=layers or [],
            environment=environment,
        )
        acknowledge(self, {"AwsSolutions::AwsSolutions-L1": "The team's functions run on Python 3.13, as the patterns' do."})


class TeamPatternsStack(Stack):
    def __init__(self, scope: Construct, id_: str, **kwargs: Any) -> None:
        super().__init__(scope, id_, description="A team's app: the Step Functions patterns with its own functions", **kwargs)

        # Map retry: the team's processor; the Map retries only the items it failed.
        processor = TeamFunction(self, "ItemProcessor", source="item_processor", timeout=Duration.seconds(30))
        map_retry = MapRetry(self, "MapRetry", item_processor=processor.function)

        # Job poller: the team's runner reports through patterns_common.job_runner, in the layer the
        # construct offers; the export poller exports the team's own table.
        runner = TeamFunction(
            self, "JobRunner", source="job_runner", timeout=Duration.minutes(5), layers=[JobPoller.job_runner_layer(self)]
        )
        orders = dynamodb.Table(
            self,
            "OrdersTable",
            partition_key=dynamodb.Attribute(name="order_id", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=True),
            removal_policy=RemovalPolicy.DESTROY,
        )
        poller = JobPoller(self, "JobPoller", job_runner=runner.function, export_table=orders)

        # Alert notification: the team's notifier puts each notification on the team's queue, not Slack.
        undelivered = sqs.Queue(self, "UndeliveredNotifications", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True)
        notifications = sqs.Queue(
            self,
            "Notifications",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=5, queue=undelivered),
        )
        notifier = TeamFunction(
            self,
            "Notifier",
            source="notifier",
            timeout=Duration.seconds(10),
            environment={"NOTIFICATION_QUEUE_URL": notifications.queue_url},
        )
        notifications.grant_send_messages(notifier.function)
        alerts = AlertNotification(
            self,
            "Alerts",
            schedule="rate(1 hour)",
            notifier=notifier.function,
            # Written into the on-call table at deploy; an alert's escalation names it schedule:team-weekly.
            schedules=[TEAM_ON_CALL],
        )

        CfnOutput(self, "AlertStateMachineArn", value=alerts.state_machine.state_machine_arn)
        CfnOutput(self, "AlertTableName", value=alerts.table.table_name)
        CfnOutput(self, "OnCallTableName", value=alerts.on_call.table.table_name)
        CfnOutput(self, "NotificationQueueUrl", value=notifications.queue_url)
        CfnOutput(self, "MapRetryStateMachineArn", value=map_retry.state_machine.state_machine_arn)
        CfnOutput(self, "ItemsBucketName", value=map_retry.bucket.bucket_name)
        CfnOutput(self, "JobPollerStateMachineArn", value=poller.state_machine.state_machine_arn)
        CfnOutput(self, "JobBucketName", value=poller.bucket.bucket_name)
