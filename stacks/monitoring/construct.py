"""Execution monitoring (seed 003): status-change events and alarms to one encrypted topic."""

from __future__ import annotations

from typing import Sequence

import jsii
from aws_cdk import Annotations, Arn, ArnFormat, Duration, Names, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.common.failure_queue import FailureQueue, failure_queue
from stacks.common.python_function import METRICS_NAMESPACE
from stacks.common.watched_metric import WatchedMetric

STATUS_CHANGE = "Step Functions Execution Status Change"
# The id of the synth warning for a topic nobody is subscribed to (Annotations.acknowledge_warning takes it).
NO_ALERT_EMAIL_WARNING = "step-functions-patterns:noAlertEmail"
# EventBridge's own maxima: a notification that cannot be published yet is retried for a day.
RETRY_ATTEMPTS = 185
MAX_EVENT_AGE = Duration.hours(24)
PERIOD = Duration.minutes(5)
# The seed's seven per-machine metrics (AWS/States, dimension StateMachineArn), one graph each.
DASHBOARD_GRAPHS = (
    ("Executions started", "metric_started"),
    ("Executions succeeded", "metric_succeeded"),
    ("Executions failed", "metric_failed"),
    ("Executions aborted", "metric_aborted"),
    ("Executions timed out", "metric_timed_out"),
    ("Executions throttled", "metric_throttled"),
    ("Execution time (ms, average)", "metric_time"),
)
# The app's own business metrics (Powertools Metrics, EMF), graphed with SEARCH so that each
# dimension value (each function) is a line: (title, dimension names, metric names). None has a
# dimension per alert: each value would be a custom metric billed on its own; the alert id is in
# the metric's log line instead.
BUSINESS_GRAPHS = (
    ("Notifications", "service", ("NotificationsSent", "NotificationsFailed")),
    ("Map items retried and given up", "service", ("MapItemsRetried", "MapItemsGivenUp")),
    ("Jobs timed out", "service", ("JobsTimedOut",)),
)


def _field(path: str) -> str:
    return events.EventField.from_path(path)


# The SNS message, one JSON object. Values that may hold quotes or newlines (error, cause) or that
# are numbers/null (dates) stand alone, so EventBridge writes them as JSON values; only strings
# that cannot contain a quote (names, ARNs, status, region) are spliced into longer strings.
MESSAGE = events.RuleTargetInput.from_object(
    {
        "summary": f"Step Functions execution {_field('$.detail.name')} {_field('$.detail.status')}",
        "consoleUrl": (
            f"https://{_field('$.region')}.console.aws.amazon.com/states/home?region={_field('$.region')}"
            f"#/v2/executions/details/{_field('$.detail.executionArn')}"
        ),
        "status": _field("$.detail.status"),
        "stateMachineArn": _field("$.detail.stateMachineArn"),
        "execution": _field("$.detail.name"),
        "executionArn": _field("$.detail.executionArn"),
        "error": _field("$.detail.error"),
        "cause": _field("$.detail.cause"),
        "startDate": _field("$.detail.startDate"),
        "stopDate": _field("$.detail.stopDate"),
        "time": _field("$.time"),
    }
)


@jsii.implements(events.IRuleTarget)
class _TopicTarget:
    """The topic as a rule target with a DLQ and retries.

    ``aws_events_targets.SnsTopic`` would also grant events.amazonaws.com publish and key use with
    no condition; ExecutionMonitoring grants both itself, limited to this rule and this topic.
    """

    def __init__(self, topic: sns.ITopic, dead_letter_queue: sqs.IQueue) -> None:
        self._topic = topic
        self._dead_letter_queue = dead_letter_queue

    def bind(self, _rule: events.IRuleRef, _id: str | None = None) -> events.RuleTargetConfig:
        return events.RuleTargetConfig(
            arn=self._topic.topic_arn,
            input=MESSAGE,
            dead_letter_config=events.CfnRule.DeadLetterConfigProperty(arn=self._dead_letter_queue.queue_arn),
            retry_policy=events.CfnRule.RetryPolicyProperty(
                maximum_retry_attempts=RETRY_ATTEMPTS,
                maximum_event_age_in_seconds=int(MAX_EVENT_AGE.to_seconds()),
            ),
            target_resource=self._topic,
        )


class ExecutionMonitoring(Construct):
    """Watches ``state_machines``: one status-change rule, three alarms each, one dashboard, one topic;
    and an alarm per failure queue and per watched metric, on the same topic."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        state_machines: Sequence[sfn.IStateMachine],
        statuses: Sequence[str],
        failure_queues: Sequence[FailureQueue] = (),
        watched_metrics: Sequence[WatchedMetric] = (),
        alert_email: str | None,
    ) -> None:
        super().__init__(scope, id_)
        stack = Stack.of(self)
        self.key = kms.Key(
            self,
            "TopicKey",
            description="Encrypts the execution status topic",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        # Named so the key policy can name the topic: with a generated name the key and the
        # topic would reference each other.
        topic_name = f"{stack.stack_name}-execution-status"
        self.topic = sns.Topic(
            self,
            "StatusTopic",
            topic_name=topic_name,
            display_name="Step Functions execution status",
            master_key=self.key,
            enforce_ssl=True,
        )
        # SNS calls KMS for its publishers with the topic ARN as encryption context, so this
        # condition limits both services to this topic. aws:SourceArn/aws:SourceAccount are not
        # dependable in the KMS request EventBridge makes through SNS (a miss would drop every
        # notification silently); the topic policy's publish statements carry them instead.
        topic_arn = stack.format_arn(
            service="sns", resource=topic_name, arn_format=ArnFormat.NO_RESOURCE_NAME
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="PublishersEncryptForTheStatusTopicOnly",
                principals=[
                    iam.ServicePrincipal("events.amazonaws.com"),
                    iam.ServicePrincipal("cloudwatch.amazonaws.com"),
                ],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"kms:EncryptionContext:aws:sns:topicArn": topic_arn}},
            )
        )
        if alert_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alert_email))
        else:
            # Printed by every `cdk synth` and `cdk deploy`, without failing them: a subscriber may be
            # added outside the app (acknowledge the warning then).
            Annotations.of(self.topic).add_warning_v2(
                NO_ALERT_EMAIL_WARNING,
                "No e-mail is subscribed to the execution status topic: every failure and dead-letter "
                "alarm notifies nobody. Deploy with -c alertEmail=you@example.com (docs/deploying.md).",
            )
        self.dead_letter_queue = self._dead_letter_queue()
        self.rule = self._status_rule(state_machines, statuses)
        self.alarms = [
            *(alarm for machine in state_machines for alarm in self._machine_alarms(machine)),
            self._dead_letter_alarm(),
            *(self._failure_queue_alarm(failure_queue) for failure_queue in failure_queues),
            *(self._watched_metric_alarm(watched) for watched in watched_metrics),
        ]
        action = cw_actions.SnsAction(self.topic)
        for alarm in self.alarms:
            alarm.add_alarm_action(action)
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "ArnEquals": {"aws:SourceArn": [alarm.alarm_arn for alarm in self.alarms]},
                    "StringEquals": {"aws:SourceAccount": stack.account},
                },
            )
        )
        self.dashboard = self._dashboard(state_machines)

    def _dead_letter_queue(self) -> sqs.Queue:
        return failure_queue(self, "NotificationDeadLetterQueue")

    def _status_rule(self, machines: Sequence[sfn.IStateMachine], statuses: Sequence[str]) -> events.Rule:
        rule = events.Rule(
            self,
            "StatusChangeRule",
            description="Step Functions execution status changes of the app's machines to the status topic",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=[STATUS_CHANGE],
                detail={
                    "status": list(statuses),
                    "stateMachineArn": [machine.state_machine_arn for machine in machines],
                },
            ),
        )
        rule.add_target(_TopicTarget(self.topic, self.dead_letter_queue))
        from_this_rule = {"ArnEquals": {"aws:SourceArn": rule.rule_arn}}
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="StatusRulePublishes",
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions=from_this_rule,
            )
        )
        self.dead_letter_queue.add_to_resource_policy(
            iam.PolicyStatement(
                sid="StatusRuleDeadLetters",
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                actions=["sqs:SendMessage"],
                resources=[self.dead_letter_queue.queue_arn],
                conditions=from_this_rule,
            )
        )
        return rule

    def _machine_alarms(self, machine: sfn.IStateMachine) -> list[cloudwatch.Alarm]:
        name = _machine_name(machine)
        scope = Construct(self, Names.node_unique_id(machine.node))
        return [
            _alarm(
                scope,
                metric.metric_name,
                metric,
                f"{Stack.of(self).stack_name}-{name}-{metric.metric_name}",
                f"{metric.metric_name} >= 1 in 5 minutes for state machine {name}. The status topic "
                "carries each execution's error, cause and console link.",
            )
            for metric in (
                machine.metric_failed(period=PERIOD),
                machine.metric_timed_out(period=PERIOD),
                machine.metric_throttled(period=PERIOD),
            )
        ]

    def _dead_letter_alarm(self) -> cloudwatch.Alarm:
        # A dead-lettered notification is one nobody received: say so through the alarm path,
        # which does not depend on the rule's permission to publish.
        return _queue_alarm(
            self,
            "NotificationsDeadLettered",
            self.dead_letter_queue,
            f"{Stack.of(self).stack_name}-StatusNotificationsDeadLettered",
            "Execution status notifications could not be published to the status topic; they wait "
            "in the dead-letter queue (14 days).",
        )

    def _failure_queue_alarm(self, failure_queue: FailureQueue) -> cloudwatch.Alarm:
        return _queue_alarm(
            self,
            failure_queue.alarm_id,
            failure_queue.queue,
            f"{Stack.of(self).stack_name}-{failure_queue.alarm_id}",
            failure_queue.description,
        )

    def _watched_metric_alarm(self, watched: WatchedMetric) -> cloudwatch.Alarm:
        return _alarm(
            self,
            watched.alarm_id,
            watched.metric,
            f"{Stack.of(self).stack_name}-{watched.alarm_id}",
            watched.description,
            threshold=watched.threshold,
        )

    def _dashboard(self, machines: Sequence[sfn.IStateMachine]) -> cloudwatch.Dashboard:
        stack = Stack.of(self)
        # Named because people open it by name. Dashboards are global to the account (unlike the
        # alarms, topic and log groups, which are regional), so the name carries the region too: the
        # same stack in a second region would otherwise fail with "already exists".
        dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"{stack.stack_name}-{stack.region}-executions"
        )
        dashboard.add_widgets(cloudwatch.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=24))
        dashboard.add_widgets(
            *(
                cloudwatch.GraphWidget(
                    title=title,
                    width=12,
                    left=[
                        getattr(machine, method)(period=PERIOD, label=_machine_name(machine))
                        for machine in machines
                    ],
                )
                for title, method in DASHBOARD_GRAPHS
            )
        )
        dashboard.add_widgets(
            *(
                cloudwatch.GraphWidget(
                    title=title,
                    width=8,
                    left=[
                        cloudwatch.MathExpression(
                            expression=f"SEARCH('{{{METRICS_NAMESPACE},{dimensions}}} MetricName=\"{name}\"', 'Sum', {int(PERIOD.to_seconds())})",
                            label=name,
                            period=PERIOD,
                        )
                        for name in names
                    ],
                )
                for title, dimensions, names in BUSINESS_GRAPHS
            )
        )
        return dashboard


def _alarm(
    scope: Construct, id_: str, metric: cloudwatch.IMetric, name: str, description: str, *, threshold: float = 1
) -> cloudwatch.Alarm:
    """Alarm as soon as one datapoint reaches ``threshold`` (1: any); no data is the healthy state."""
    return cloudwatch.Alarm(
        scope,
        id_,
        metric=metric,
        alarm_name=name,
        alarm_description=description,
        threshold=threshold,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )


def _queue_alarm(scope: Construct, id_: str, queue: sqs.IQueue, name: str, description: str) -> cloudwatch.Alarm:
    """Alarm for every period in which a failure arrives on ``queue``, however many wait there already.

    On the queue's depth (ApproximateNumberOfMessagesVisible) an alarm would stay in ALARM from the
    first failure until someone empties the queue, which nothing reads: every later failure would be
    silent. NumberOfMessagesSent counts what the services send (EventBridge, the scheduler and
    Lambda's on-failure destination call SendMessage; only SQS's own redrive goes uncounted:
    https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html),
    so the alarm goes back to OK in the next quiet period and notifies again on the next failure.
    """
    return _alarm(
        scope,
        id_,
        queue.metric_number_of_messages_sent(period=PERIOD, statistic="Sum"),
        name,
        f"{description} The alarm fires once for each 5 minutes in which failures arrive.",
    )


def _machine_name(machine: sfn.IStateMachine) -> str:
    """The machine's name taken from its ARN, which is all another stack exports."""
    return Arn.split(machine.state_machine_arn, ArnFormat.COLON_RESOURCE_NAME).resource_name
