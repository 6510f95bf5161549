"""Alerts raised and resolved by CloudWatch alarms: an EventBridge rule on alarm state changes and its function.

Any alarm in the account and region can raise an alert: the alert item names it (``alarm_name``),
and the function finds the items on the table's alarm-name index. ALARM and OK are matched by the
rule; INSUFFICIENT_DATA never invokes the function.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.alert_notification.slack_webhook import let_post_to_slack
from stacks.common.failure_queue import FailureQueue, failure_queue
from stacks.common.nag import acknowledge_wildcard_resource
from stacks.common.python_function import PythonFunction
from stacks.common.scanners import acknowledge_rule_permission

# https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html
ALARM_STATE_CHANGES = events.EventPattern(
    source=["aws.cloudwatch"],
    detail_type=["CloudWatch Alarm State Change"],
    detail={"state": {"value": ["ALARM", "OK"]}},
)
# An alarm change is urgent: retried for minutes, not hours, then kept for a person.
RETRY_ATTEMPTS = 8
MAX_EVENT_AGE = Duration.minutes(15)


class AlarmRaisedAlerts(Construct):
    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        table: dynamodb.ITable,
        alarm_index_name: str,
        state_machine: sfn.IStateMachine,
        executions: str,
        webhook_secret: secretsmanager.ISecret | None,
    ) -> None:
        super().__init__(scope, id_)
        handler = PythonFunction(
            self,
            "ApplyAlarmChange",
            source="alert_alarms",
            description="Raises (ALARM) or resolves (OK) the alerts that name a CloudWatch alarm",
            timeout=Duration.seconds(30),
            environment={
                "ALERT_TABLE_NAME": table.table_name,
                "ALARM_INDEX_NAME": alarm_index_name,
                "STATE_MACHINE_ARN": state_machine.state_machine_arn,
            },
        )
        function = handler.function
        # The index by its own ARN: Table.grant would add <table>/index/* for every index.
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["dynamodb:Query"], resources=[f"{table.table_arn}/index/{alarm_index_name}"])
        )
        table.grant(function, "dynamodb:UpdateItem")
        state_machine.grant_start_execution(function)
        # Stopping the execution of an alert's earlier occurrence when the alarm raises it again.
        stop_earlier = iam.PolicyStatement(actions=["states:StopExecution"], resources=[executions])
        function.add_to_role_policy(stop_earlier)
        acknowledge_wildcard_resource(
            handler,
            executions,
            "StopExecution on this machine's executions only (the one escalating an alert's earlier "
            "occurrence, named on the alert item when the alarm raises it again); their names are not known in advance.",
        )
        let_post_to_slack(function, webhook_secret)  # the follow-up post when an alarm resolves an alert

        failures = failure_queue(self, "FailureQueue")
        function.configure_async_invoke(
            retry_attempts=2, max_event_age=MAX_EVENT_AGE, on_failure=destinations.SqsDestination(failures)
        )
        rule = events.Rule(
            self,
            "AlarmStateChanges",
            description="Raises or resolves the alerts that name a CloudWatch alarm when it enters ALARM or OK",
            event_pattern=ALARM_STATE_CHANGES,
            targets=[
                targets.LambdaFunction(
                    function, retry_attempts=RETRY_ATTEMPTS, max_event_age=MAX_EVENT_AGE, dead_letter_queue=failures
                )
            ],
        )
        acknowledge_rule_permission(rule, "function")
        self.function = function
        self.failure_queue = FailureQueue(
            failures,
            "AlarmChangeNotApplied",
            "An alarm state change could not be applied to the alerts naming the alarm (after EventBridge's "
            "and Lambda's retries): an alert was not raised or resolved. The event or the record (its "
            "error names the alerts) waits in the alarm change failure queue (14 days).",
        )
