"""MonitoringStack template: status rule, transformer, DLQ, alarms, dashboard, key and topic policies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template
from aws_cdk.cx_api import SynthesisMessageLevel
from cdk_nag import AwsSolutionsChecks

from stacks.common.nag import acknowledge
from stacks.config import AppConfig
from stacks.monitoring.stack import MonitoringStack
from tests.app_config import app_config

ALPHA = "arn:aws:states:us-east-1:123456789012:stateMachine:alpha"
BETA = "arn:aws:states:us-east-1:123456789012:stateMachine:beta"
ALARMED_METRICS = ("ExecutionsFailed", "ExecutionsTimedOut", "ExecutionThrottled")


def _stand_in_machine(scope: Stack) -> sfn.StateMachine:
    """A real machine in another stack, so its ARN reaches MonitoringStack as a cross-stack token."""
    machine = sfn.StateMachine(
        scope,
        "Gamma",
        definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(scope, "Stand In")),
        tracing_enabled=True,
        logs=sfn.LogOptions(destination=logs.LogGroup(scope, "GammaLogs"), level=sfn.LogLevel.ALL),
    )
    acknowledge(
        machine, {"AwsSolutions::AwsSolutions-IAM5[Resource::*]": "Test stand-in: log delivery and X-Ray."}
    )
    return machine


def synth(
    config: AppConfig,
    *,
    machine_arns: tuple[str, ...] = (ALPHA, BETA),
    real_machine: bool = False,
    outdir: Path | None = None,
) -> dict:
    """Synthesize MonitoringStack alone (with cdk-nag) watching stand-ins for the app's machines."""
    app = App(outdir=str(outdir) if outdir else None)
    machines_stack = Stack(app, "Machines")
    machines: list[sfn.IStateMachine] = [
        sfn.StateMachine.from_state_machine_arn(machines_stack, f"Imported{i}", arn)
        for i, arn in enumerate(machine_arns)
    ]
    if real_machine:
        machines.append(_stand_in_machine(machines_stack))
    stack = MonitoringStack(app, "MonitoringStack", config=config, state_machines=machines)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged cdk-nag finding
    return Template.from_stack(stack).to_json()


@pytest.fixture(scope="module")
def template() -> dict:
    return synth(app_config(alert_email="ops@example.com"), real_machine=True)


def resources(template: dict, resource_type: str) -> list[dict]:
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == resource_type]


def logical_id(template: dict, resource_type: str) -> str:
    (found,) = [k for k, r in template["Resources"].items() if r["Type"] == resource_type]
    return found


def the_rule(template: dict) -> dict:
    (rule,) = resources(template, "AWS::Events::Rule")
    return rule


def test_rule_matches_status_changes_of_the_configured_statuses_and_every_machine(template):
    # When
    pattern = the_rule(template)["EventPattern"]
    # Then
    assert pattern["source"] == ["aws.states"]
    assert pattern["detail-type"] == ["Step Functions Execution Status Change"]
    assert pattern["detail"]["status"] == ["FAILED", "TIMED_OUT", "ABORTED"]
    arns = pattern["detail"]["stateMachineArn"]
    assert arns[:2] == [ALPHA, BETA]
    # The real machine lives in another stack: its ARN is imported, not copied
    assert len(arns) == 3 and "Fn::ImportValue" in arns[2]


def test_rule_uses_the_monitored_statuses_from_config():
    # Given
    config = app_config(monitored_statuses=("FAILED", "SUCCEEDED"))
    # When
    pattern = the_rule(synth(config))["EventPattern"]
    # Then
    assert pattern["detail"]["status"] == ["FAILED", "SUCCEEDED"]


def test_rule_targets_the_topic_with_a_transformer_dead_letter_queue_and_retries(template):
    # When
    (target,) = the_rule(template)["Targets"]
    # Then
    assert target["Arn"] == {"Ref": logical_id(template, "AWS::SNS::Topic")}
    queue_arn = {"Fn::GetAtt": [logical_id(template, "AWS::SQS::Queue"), "Arn"]}
    assert target["DeadLetterConfig"]["Arn"] == queue_arn
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": 86400}


def test_transformer_reads_every_field_a_person_needs(template):
    # When
    (target,) = the_rule(template)["Targets"]
    paths = target["InputTransformer"]["InputPathsMap"]
    # Then
    assert paths == {
        "detail-name": "$.detail.name",
        "detail-status": "$.detail.status",
        "detail-stateMachineArn": "$.detail.stateMachineArn",
        "detail-executionArn": "$.detail.executionArn",
        "detail-error": "$.detail.error",
        "detail-cause": "$.detail.cause",
        "detail-startDate": "$.detail.startDate",
        "detail-stopDate": "$.detail.stopDate",
        "region": "$.region",
        "time": "$.time",
    }


def test_transformer_template_is_json_with_free_text_fields_unquoted(template):
    # When
    (target,) = the_rule(template)["Targets"]
    input_template = target["InputTransformer"]["InputTemplate"]
    # Then: error and cause may hold quotes and newlines; unquoted, EventBridge writes them as JSON values
    assert '"error":<detail-error>' in input_template
    assert '"cause":<detail-cause>' in input_template
    assert '"startDate":<detail-startDate>' in input_template
    assert '"stopDate":<detail-stopDate>' in input_template
    assert (
        '"consoleUrl":"https://<region>.console.aws.amazon.com/states/home?region=<region>'
        '#/v2/executions/details/<detail-executionArn>"'
    ) in input_template
    assert input_template.startswith('{"summary":"Step Functions execution <detail-name> <detail-status>"')


def test_dead_letter_queue_is_encrypted_ssl_only_and_only_the_rule_may_send(template):
    # Given
    rule_arn = {"Fn::GetAtt": [logical_id(template, "AWS::Events::Rule"), "Arn"]}
    # When
    (queue,) = resources(template, "AWS::SQS::Queue")
    (policy,) = resources(template, "AWS::SQS::QueuePolicy")
    statements = policy["PolicyDocument"]["Statement"]
    # Then
    assert queue["SqsManagedSseEnabled"] is True
    assert queue["MessageRetentionPeriod"] == 14 * 24 * 3600
    (deny,) = [s for s in statements if s["Effect"] == "Deny"]
    assert deny["Action"] == "sqs:*" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    (send,) = [s for s in statements if s["Effect"] == "Allow"]
    assert send["Principal"] == {"Service": "events.amazonaws.com"}
    assert send["Action"] == "sqs:SendMessage"
    assert send["Condition"] == {"ArnEquals": {"aws:SourceArn": rule_arn}}


def machine_alarms(template: dict) -> list[dict]:
    return [a for a in resources(template, "AWS::CloudWatch::Alarm") if a["Namespace"] == "AWS/States"]


def test_three_alarms_per_machine_on_the_states_metrics_with_the_machine_dimension(template):
    # When
    alarms = machine_alarms(template)
    # Then
    assert len(alarms) == 3 * 3
    for arn, name in ((ALPHA, "alpha"), (BETA, "beta")):
        dimensions = [{"Name": "StateMachineArn", "Value": arn}]
        mine = {a["MetricName"]: a for a in alarms if a["Dimensions"] == dimensions}
        assert set(mine) == set(ALARMED_METRICS)
        for metric, alarm in mine.items():
            assert alarm["AlarmName"] == f"MonitoringStack-{name}-{metric}"
            assert name in alarm["AlarmDescription"]


def test_machine_alarms_fire_on_one_execution_and_treat_missing_data_as_healthy(template):
    # Given
    topic = {"Ref": logical_id(template, "AWS::SNS::Topic")}
    for alarm in machine_alarms(template):
        # Then
        assert alarm["Statistic"] == "Sum" and alarm["Period"] == 300
        assert alarm["Threshold"] == 1 and alarm["EvaluationPeriods"] == 1
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["TreatMissingData"] == "notBreaching"
        assert alarm["AlarmActions"] == [topic]


def test_the_real_machine_alarm_names_use_its_name_from_the_imported_arn(template):
    # When
    gamma = [a for a in machine_alarms(template) if "Fn::ImportValue" in json.dumps(a["Dimensions"])]
    # Then: the name is cut out of the ARN in CloudFormation, so no second export is needed
    assert len(gamma) == 3
    assert all("Fn::Select" in json.dumps(a["AlarmName"]) for a in gamma)


def test_dead_lettered_notifications_raise_an_alarm_to_the_topic(template):
    # When
    (alarm,) = [a for a in resources(template, "AWS::CloudWatch::Alarm") if a["Namespace"] == "AWS/SQS"]
    # Then
    assert alarm["AlarmActions"] == [{"Ref": logical_id(template, "AWS::SNS::Topic")}]
    assert notifications(alarm, failures_at_minute=[2]) == 1


def queue_datapoint(metric: str, statistic: str, sent_minutes: list[int], period_start: int, period: int) -> float | None:
    """What SQS reports for a queue nothing reads, to which messages were sent at ``sent_minutes``
    (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html)."""
    end = period_start + period
    if metric == "NumberOfMessagesSent" and statistic == "Sum":
        return float(sum(1 for minute in sent_minutes if period_start <= minute * 60 < end))
    if metric == "ApproximateNumberOfMessagesVisible" and statistic == "Maximum":
        return float(sum(1 for minute in sent_minutes if minute * 60 < end))  # kept 14 days, never received
    raise AssertionError(f"no model of {statistic} {metric}")


def notifications(alarm: dict, failures_at_minute: list[int], hours: int = 2) -> int:
    """How many times the alarm enters ALARM (its actions run on that transition only) over ``hours``,
    evaluated as CloudWatch does for one evaluation period of ``Period`` seconds
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html)."""
    assert alarm["EvaluationPeriods"] == 1 and alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    state, entered_alarm = "OK", 0
    for start in range(0, hours * 3600, alarm["Period"]):
        value = queue_datapoint(alarm["MetricName"], alarm["Statistic"], failures_at_minute, start, alarm["Period"])
        breaching = value >= alarm["Threshold"]
        new_state = "ALARM" if breaching else "OK"
        entered_alarm += state != "ALARM" and new_state == "ALARM"
        state = new_state
    return entered_alarm


def test_every_failure_queue_alarm_notifies_each_new_failure_while_older_ones_wait(synthesized_app):
    # Given: the app's eight failure-queue alarms (status notifications, schedule, dispatch, alarm changes,
    # handoff notices, SMS replies, contact attempts, follow-ups)
    monitoring = synthesized_app.templates["MonitoringStack"]
    alarms = [a for a in resources(monitoring, "AWS::CloudWatch::Alarm") if a["Namespace"] == "AWS/SQS"]
    assert len(alarms) == 8
    for alarm in alarms:
        # When: a failure arrives, and another half an hour later while the first is still queued
        # Then: two notifications, one per failure (on the queue's depth, the second was silent)
        assert notifications(alarm, failures_at_minute=[2, 33]) == 2, alarm["AlarmName"]
        # ... and failures within the same five minutes make one
        assert notifications(alarm, failures_at_minute=[2, 3]) == 1, alarm["AlarmName"]


def test_dashboard_graphs_the_seven_seed_metrics_for_every_machine(template):
    # When
    (dashboard,) = resources(template, "AWS::CloudWatch::Dashboard")
    body = json.dumps(dashboard["DashboardBody"])
    # Then
    for metric in (
        "ExecutionsStarted",
        "ExecutionsSucceeded",
        "ExecutionsFailed",
        "ExecutionsAborted",
        "ExecutionsTimedOut",
        "ExecutionThrottled",
        "ExecutionTime",
    ):
        assert body.count(f'\\"AWS/States\\",\\"{metric}\\",\\"StateMachineArn\\"') == 3, metric
    assert body.count(ALPHA) == 7 and body.count(BETA) == 7
    assert '\\"type\\":\\"alarm\\"' in body


def test_dashboard_graphs_the_business_metrics_the_functions_publish(template):
    # When: the dashboard's JSON text (its Fn::Join parts that are text)
    (dashboard,) = resources(template, "AWS::CloudWatch::Dashboard")
    body = "".join(part for part in dashboard["DashboardBody"]["Fn::Join"][1] if isinstance(part, str))
    # Then: one SEARCH per metric the handlers emit (tests/emf.py reads them), in their namespace
    for dimensions, metric in [
        ("service", "NotificationsSent"),
        ("service", "NotificationsFailed"),
        ("service", "MapItemsRetried"),
        ("service", "MapItemsGivenUp"),
        ("service", "JobsTimedOut"),
    ]:
        assert f"SEARCH('{{StepFunctionsPatterns,{dimensions}}} MetricName=\\\"{metric}\\\"', 'Sum', 300)" in body, metric


def key_statement(template: dict, service: str) -> dict:
    (key,) = resources(template, "AWS::KMS::Key")
    (statement,) = [
        s
        for s in key["KeyPolicy"]["Statement"]
        if service in json.dumps(s["Principal"].get("Service", []))
    ]
    return statement


@pytest.mark.parametrize("service", ["events.amazonaws.com", "cloudwatch.amazonaws.com"])
def test_key_lets_eventbridge_and_cloudwatch_encrypt_for_the_status_topic_only(template, service):
    # When
    statement = key_statement(template, service)
    # Then
    assert statement["Effect"] == "Allow"
    assert sorted(statement["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"]
    condition = statement["Condition"]["StringEquals"]["kms:EncryptionContext:aws:sns:topicArn"]
    assert json.dumps(condition).endswith(':MonitoringStack-execution-status"]]}')


def test_the_key_condition_names_the_topic_that_is_deployed(template):
    # Then: the ARN in the key policy must be the topic's, or every publish fails silently
    (topic,) = resources(template, "AWS::SNS::Topic")
    assert topic["TopicName"] == "MonitoringStack-execution-status"
    assert topic["KmsMasterKeyId"] == {"Fn::GetAtt": [logical_id(template, "AWS::KMS::Key"), "Arn"]}


def topic_statements(template: dict) -> list[dict]:
    (policy,) = resources(template, "AWS::SNS::TopicPolicy")
    return policy["PolicyDocument"]["Statement"]


def test_topic_refuses_publishing_without_ssl(template):
    # Then
    (deny,) = [s for s in topic_statements(template) if s["Effect"] == "Deny"]
    assert deny["Action"] == "sns:Publish" and deny["Principal"] == "*"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_topic_lets_only_the_rule_and_the_alarms_publish(template):
    # Given
    rule_arn = {"Fn::GetAtt": [logical_id(template, "AWS::Events::Rule"), "Arn"]}
    alarm_ids = {k for k, r in template["Resources"].items() if r["Type"] == "AWS::CloudWatch::Alarm"}
    # When
    allows = {s["Principal"]["Service"]: s for s in topic_statements(template) if s["Effect"] == "Allow"}
    # Then
    assert set(allows) == {"events.amazonaws.com", "cloudwatch.amazonaws.com"}
    assert allows["events.amazonaws.com"]["Condition"] == {"ArnEquals": {"aws:SourceArn": rule_arn}}
    alarms = allows["cloudwatch.amazonaws.com"]["Condition"]
    assert {arn["Fn::GetAtt"][0] for arn in alarms["ArnEquals"]["aws:SourceArn"]} == alarm_ids
    assert alarms["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}


def test_email_subscription_when_an_address_is_configured(template):
    # Then
    (subscription,) = resources(template, "AWS::SNS::Subscription")
    assert subscription["Protocol"] == "email" and subscription["Endpoint"] == "ops@example.com"


def test_no_subscription_without_an_address():
    # When
    template = synth(app_config())
    # Then
    assert resources(template, "AWS::SNS::Subscription") == []


def test_stack_publishes_the_status_topic_arn(template):
    # Then
    assert template["Outputs"]["StatusTopicArn"]["Value"] == {"Ref": logical_id(template, "AWS::SNS::Topic")}


def test_target_publishes_through_the_topic_policy_not_a_role(template):
    # Then: no role to assume, so the topic and key policies above are the whole grant
    assert resources(template, "AWS::IAM::Role") == []
    assert "RoleArn" not in the_rule(template)["Targets"][0]


def synth_warnings(config: AppConfig) -> list[str]:
    """The warnings the cloud assembly carries for MonitoringStack: what `cdk synth` and `cdk deploy` print."""
    app = App()
    machine = sfn.StateMachine.from_state_machine_arn(Stack(app, "Machines"), "Imported", ALPHA)
    MonitoringStack(app, "MonitoringStack", config=config, state_machines=[machine])
    artifact = app.synth().get_stack_artifact("MonitoringStack")
    return [message.entry.data for message in artifact.messages if message.level == SynthesisMessageLevel.WARNING]


def test_synth_warns_loudly_without_failing_when_no_one_is_told_of_failures():
    # Given no alertEmail, the topic every failure and dead-letter alarm notifies has no subscriber
    [warning] = synth_warnings(app_config(alert_email=None))
    assert "notifies nobody" in warning and "-c alertEmail=" in warning
    # Given one, nothing to say
    assert synth_warnings(app_config(alert_email="ops@example.com")) == []


def test_template_passes_cfn_lint(tmp_path):
    # Given
    synth(app_config(alert_email="ops@example.com"), real_machine=True, outdir=tmp_path)
    # When
    cfn_lint = str(Path(sys.executable).parent / "cfn-lint")
    result = subprocess.run(
        [cfn_lint, "--format", "parseable", str(tmp_path / "MonitoringStack.template.json")],
        capture_output=True,
        text=True,
    )
    # Then
    assert result.returncode == 0, result.stdout + result.stderr
