"""Alert notification pattern (seeds 000/001): nested-loop machine, its table, its functions, its schedule."""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.common.nag import acknowledge_wildcard_resource
from stacks.common.python_function import PythonFunction
from stacks.common.state_machine import StandardStateMachine


class AlertNotification(Construct):
    def __init__(self, scope: Construct, id_: str, *, slack_webhook_secret_name: str, schedule: str) -> None:
        super().__init__(scope, id_)
        self.table = dynamodb.Table(
            self,
            "AlertTable",
            partition_key=dynamodb.Attribute(name="alert_id", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.RETAIN,
        )
        # Stateful: the logical id must never change, or CloudFormation replaces the table.
        self.table.node.default_child.override_logical_id("AlertTable")

        # Powertools idempotency records of the notifier: short-lived, removed by TTL.
        self.idempotency_table = dynamodb.Table(
            self,
            "IdempotencyTable",
            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            time_to_live_attribute="expiration",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.DESTROY,
        )
        # The secret is created by whoever deploys (it holds a credential), so it is only referenced.
        webhook_secret = secretsmanager.Secret.from_secret_name_v2(self, "SlackWebhook", slack_webhook_secret_name)

        fetch_config = PythonFunction(
            self,
            "FetchAlertConfig",
            source="alert_config",
            description="Reads and validates an alert's notification config",
            timeout=Duration.seconds(10),
            environment={"ALERT_TABLE_NAME": self.table.table_name},
        )
        self.table.grant(fetch_config.function, "dynamodb:GetItem")

        notify_user = PythonFunction(
            self,
            "NotifyUser",
            source="alert_notifier",
            description="Posts one alert notification to the Slack incoming webhook",
            # Two 5 s requests and a Retry-After pause of up to 5 s fit with room to spare.
            timeout=Duration.seconds(20),
            environment={
                "SLACK_WEBHOOK_SECRET_NAME": slack_webhook_secret_name,
                "IDEMPOTENCY_TABLE_NAME": self.idempotency_table.table_name,
            },
        )
        # Read on this one secret only: a secret ARN ends in a random "-XXXXXX" that grant_read matches.
        webhook_secret.grant_read(notify_user.function)
        self.idempotency_table.grant(
            notify_user.function, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"
        )

        machine = StandardStateMachine(
            self,
            "Machine",
            machine="alert_notification",
            substitutions={
                "FetchAlertConfigFunctionArn": fetch_config.function.function_arn,
                "NotifyUserFunctionArn": notify_user.function.function_arn,
                "AlertTableName": self.table.table_name,
            },
            comment="Notifies an alert's users on Slack, round after round, while the alert is active",
        )
        machine.allow_invoke(fetch_config.function, notify_user.function)
        self.table.grant(machine.state_machine, "dynamodb:GetItem")
        self.state_machine = machine.state_machine
        self.state_machines: list[sfn.IStateMachine] = [self.state_machine]

        dispatcher = PythonFunction(
            self,
            "DispatchAlerts",
            source="alert_dispatcher",
            description="Starts one alert-notification execution per active alert on a schedule",
            timeout=Duration.minutes(2),
            environment={
                "ALERT_TABLE_NAME": self.table.table_name,
                "STATE_MACHINE_ARN": self.state_machine.state_machine_arn,
            },
        )
        self.table.grant(dispatcher.function, "dynamodb:Scan")
        dispatcher.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["states:StartExecution", "states:ListExecutions"],
                resources=[self.state_machine.state_machine_arn],
            )
        )
        executions = Stack.of(self).format_arn(
            service="states",
            resource="execution",
            resource_name=f"{self.state_machine.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        dispatcher.function.add_to_role_policy(
            iam.PolicyStatement(actions=["states:DescribeExecution"], resources=[executions])
        )
        acknowledge_wildcard_resource(
            dispatcher,
            executions,
            "DescribeExecution on this machine's executions only (to read which alert a running "
            "execution is for); their names are not known in advance.",
        )
        events.Rule(
            self,
            "Schedule",
            description="Starts an alert-notification execution for every active alert",
            schedule=events.Schedule.expression(schedule),
            targets=[
                targets.LambdaFunction(dispatcher.function, retry_attempts=2, max_event_age=Duration.minutes(30))
            ],
        )
