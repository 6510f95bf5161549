"""The pattern constructs with a team's own functions (issue 24): what each grants the function it is given,
and the props it refuses at synthesis, naming the prop. The example app (examples/) synthesizes cdk-nag clean."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk import App, Duration, Environment, Stack, Validations  # noqa: E402
from aws_cdk import aws_dynamodb as dynamodb  # noqa: E402
from aws_cdk import aws_iam as iam  # noqa: E402
from aws_cdk import aws_lambda as lambda_  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from stacks.alert_notification.construct import AlertNotification  # noqa: E402
from stacks.common.team_function import InvalidProp, task_timeout_seconds  # noqa: E402
from stacks.job_poller.construct import JobPoller  # noqa: E402
from stacks.map_retry.construct import MapRetry  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENV = Environment(account="123456789012", region="us-east-1")
TEAM_ROLE_ARN = "arn:aws:iam::123456789012:role/team-runner"


def _function(scope, id_: str, timeout: Duration = Duration.seconds(30)) -> lambda_.Function:
    return lambda_.Function(
        scope,
        id_,
        runtime=lambda_.Runtime.PYTHON_3_13,
        code=lambda_.Code.from_inline("def lambda_handler(event, context):\n    return event\n"),
        handler="index.lambda_handler",
        timeout=timeout,
    )


def _table(scope) -> dynamodb.Table:
    return dynamodb.Table(
        scope, "TeamTable", partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING)
    )


def _imported(scope, id_: str, *, with_role: bool) -> lambda_.IFunction:
    return lambda_.Function.from_function_attributes(
        scope,
        id_,
        function_arn=f"arn:aws:lambda:us-east-1:123456789012:function:{id_}",
        role=iam.Role.from_role_arn(scope, f"{id_}Role", TEAM_ROLE_ARN) if with_role else None,
        same_environment=True,
    )


def _stack() -> Stack:
    return Stack(App(), "Team", env=ENV)


def _resources(template: dict, resource_type: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == resource_type}


def _statements(template: dict, role_logical_id: str) -> list[dict]:
    return [
        statement
        for policy in _resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role_logical_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _logical_id(stack: Stack, construct) -> str:
    return stack.resolve(construct.node.default_child.logical_id)


@pytest.fixture(scope="module")
def team_stack() -> tuple[Stack, dict, dict]:
    """One stack with the three constructs side by side, each given the team's functions."""
    app = App()
    stack = Stack(app, "Team", env=ENV)
    functions = {
        "processor": _function(stack, "Processor"),
        "runner": _function(stack, "Runner", Duration.minutes(5)),
        "callback_runner": _function(stack, "CallbackRunner", Duration.minutes(5)),
        "notifier": _function(stack, "Notifier", Duration.seconds(10)),
    }
    AlertNotification(stack, "Alerts", schedule="rate(1 hour)", notifier=functions["notifier"])
    MapRetry(stack, "MapRetry", item_processor=functions["processor"])
    JobPoller(
        stack,
        "JobPoller",
        export_table=_table(stack),
        job_runner=functions["runner"],
        callback_job_runner=functions["callback_runner"],
    )
    template = json.loads(json.dumps(app.synth().get_stack_by_name("Team").template))
    return stack, template, functions


def test_the_map_invokes_the_teams_processor_inline_and_the_chunk_processor_invokes_it_in_s3_mode(team_stack):
    # Given
    stack, template, functions = team_stack
    processor_arn = stack.resolve(functions["processor"].function_arn)
    functions_by_description = {
        f["Properties"].get("Description", ""): f for f in _resources(template, "AWS::Lambda::Function").values()
    }
    # Then: no demo processor was made
    assert not any("demo processor" in description for description in functions_by_description)
    # ...the chunk processor is told the team's processor and may invoke exactly it
    [chunk] = [f for d, f in functions_by_description.items() if d.startswith("Map retry-failed: processes one chunk")]
    assert chunk["Properties"]["Environment"]["Variables"]["ITEM_PROCESSOR_FUNCTION_NAME"] == processor_arn
    chunk_role = chunk["Properties"]["Role"]["Fn::GetAtt"][0]
    assert {"Action": "lambda:InvokeFunction", "Effect": "Allow", "Resource": processor_arn} in _statements(template, chunk_role)
    # ...and the machine's Process Item task names it
    [machine] = [m for m in _resources(template, "AWS::StepFunctions::StateMachine").values() if "Process Pending Items" in json.dumps(m)]
    assert processor_arn in machine["Properties"]["DefinitionString"]["Fn::Join"][1]


def test_the_teams_job_runner_gets_the_bucket_its_two_objects_and_no_async_retries(team_stack):
    # Given
    stack, template, functions = team_stack
    runner = template["Resources"][_logical_id(stack, functions["runner"])]
    runner_role = runner["Properties"]["Role"]["Fn::GetAtt"][0]
    [bucket] = [k for k in _resources(template, "AWS::S3::Bucket") if k == "JobBucket"]
    # Then: it finds the bucket where patterns_common.job_runner looks
    assert runner["Properties"]["Environment"]["Variables"]["JOB_BUCKET_NAME"] == {"Ref": bucket}
    # ...may put status.txt and result.json of any job, nothing else in the bucket
    puts = [s for s in _statements(template, runner_role) if s["Action"] == "s3:PutObject"]
    assert [sorted(json.dumps(r) for r in s["Resource"]) for s in puts] == [
        sorted(json.dumps({"Fn::Join": ["", [{"Fn::GetAtt": [bucket, "Arn"]}, f"/jobs/*/{name}"]]}) for name in ("result.json", "status.txt"))
    ]
    # ...Run Job starts it, and Lambda never retries it
    [run_job] = [f for f in _resources(template, "AWS::Lambda::Function").values() if f["Properties"].get("Description", "").startswith("Run Job")]
    assert run_job["Properties"]["Environment"]["Variables"]["JOB_RUNNER_FUNCTION_NAME"] == {"Ref": _logical_id(stack, functions["runner"])}
    configs = [c["Properties"] for c in _resources(template, "AWS::Lambda::EventInvokeConfig").values()]
    assert {"FunctionName": {"Ref": _logical_id(stack, functions["runner"])}, "MaximumRetryAttempts": 0, "Qualifier": "$LATEST"} in configs
    # ...and no demo runner was made
    assert not any("Demo job runner" in f["Properties"].get("Description", "") for f in _resources(template, "AWS::Lambda::Function").values())


def test_the_teams_callback_runner_may_report_to_the_callback_machine_only(team_stack):
    # Given
    stack, template, functions = team_stack
    role = template["Resources"][_logical_id(stack, functions["callback_runner"])]["Properties"]["Role"]["Fn::GetAtt"][0]
    # When
    reports = [{**s, "Action": sorted(s["Action"])} for s in _statements(template, role) if "states:SendTaskSuccess" in s["Action"]]
    # Then
    [callback_machine] = [
        k for k, m in _resources(template, "AWS::StepFunctions::StateMachine").items() if "Run Job And Wait For Callback" in json.dumps(m)
    ]
    assert reports == [{
        "Action": ["states:SendTaskFailure", "states:SendTaskHeartbeat", "states:SendTaskSuccess"],
        "Effect": "Allow",
        "Resource": {"Ref": callback_machine},
    }]


def test_the_export_poller_exports_the_table_it_is_given(team_stack):
    # Given
    _, template, _ = team_stack
    [table] = [k for k in _resources(template, "AWS::DynamoDB::Table") if k.startswith("TeamTable")]
    # Then
    [export_machine] = [m for m in _resources(template, "AWS::StepFunctions::StateMachine").values() if "Describe Export" in json.dumps(m)]
    assert {"Fn::GetAtt": [table, "Arn"]} in export_machine["Properties"]["DefinitionString"]["Fn::Join"][1]


def test_each_construct_exposes_its_machine_log_group_and_the_functions_it_made():
    # Given
    stack = _stack()
    # When
    map_retry = MapRetry(stack, "MapRetry")
    poller = JobPoller(stack, "JobPoller", export_table=_table(stack))
    # Then
    assert map_retry.state_machine is map_retry.machine.state_machine and map_retry.log_group is map_retry.machine.log_group
    assert set(map_retry.functions) == {"ItemProcessor", "ValidateItems", "SplitItems", "ChunkProcessor", "RecordPass", "RecordChunks"}
    assert map_retry.item_processor is map_retry.functions["ItemProcessor"]
    assert poller.state_machine is poller.poller.state_machine and poller.log_group is poller.poller.log_group
    assert set(poller.functions) == {"ValidateJobInput", "JobRunner", "RunJob", "GetJobStatus", "CallbackJobRunner"}
    assert poller.job_runner is poller.functions["JobRunner"]


def test_a_processor_that_outlives_the_process_item_task_is_refused_naming_the_prop():
    # Given: Process Item waits this long for one item
    limit = task_timeout_seconds("map_retry", "Process Item")
    stack = _stack()
    # When / Then
    with pytest.raises(InvalidProp, match=rf"^item_processor: Team/Slow has a {limit} s timeout; it must be under {limit} s"):
        MapRetry(stack, "MapRetry", item_processor=_function(stack, "Slow", Duration.seconds(limit)))


@pytest.mark.parametrize(
    "prop, problem",
    [("job_runner", "is not an aws_lambda.Function of this app"), ("callback_job_runner", "has no execution role")],
)
def test_a_runner_imported_by_arn_alone_is_refused_naming_the_prop(prop, problem):
    # Given: a function imported by ARN alone (CDK would drop the grants to it with only a warning)
    stack = _stack()
    runner = _imported(stack, "Imported", with_role=False)
    # When / Then
    with pytest.raises(InvalidProp, match=rf"^{prop}: Team/Imported {problem}"):
        JobPoller(stack, "JobPoller", export_table=_table(stack), **{prop: runner})


def test_an_imported_job_runner_is_refused_because_its_bucket_variable_cannot_be_set():
    # Given: imported with its role, so grants would work, but its environment is not this app's to set
    stack = _stack()
    runner = _imported(stack, "Imported", with_role=True)
    # When / Then
    with pytest.raises(InvalidProp, match=r"^job_runner: .*is not an aws_lambda.Function of this app .*; the construct must set its JOB_BUCKET_NAME"):
        JobPoller(stack, "JobPoller", export_table=_table(stack), job_runner=runner)


def test_an_imported_callback_runner_with_its_role_is_granted_sending_its_result():
    # Given
    stack = _stack()
    runner = _imported(stack, "Imported", with_role=True)
    # When
    JobPoller(stack, "JobPoller", export_table=_table(stack), callback_job_runner=runner)
    template = json.loads(json.dumps(stack.node.root.synth().get_stack_by_name("Team").template))
    # Then: the policy is attached to the imported role by name
    attached = [p["Properties"] for p in _resources(template, "AWS::IAM::Policy").values() if p["Properties"]["Roles"] == ["team-runner"]]
    assert [sorted(s["Action"]) for p in attached for s in p["PolicyDocument"]["Statement"]] == [
        ["states:SendTaskFailure", "states:SendTaskHeartbeat", "states:SendTaskSuccess"]
    ]


def test_a_runner_with_its_own_async_retries_is_refused_naming_the_prop():
    # Given: the team configured retries the poller must turn off
    stack = _stack()
    runner = _function(stack, "Runner")
    runner.configure_async_invoke(retry_attempts=2)
    # When / Then
    with pytest.raises(InvalidProp, match=r"^job_runner: Team/Runner already has an asynchronous invoke configuration"):
        JobPoller(stack, "JobPoller", export_table=_table(stack), job_runner=runner)


def test_without_a_table_to_export_the_poller_builds_without_the_export_machine():
    # Given: a team that wants the S3 poller (and the callback variant) only
    stack = _stack()
    # When
    poller = JobPoller(stack, "JobPoller")
    template = json.loads(json.dumps(stack.node.root.synth().get_stack_by_name("Team").template))
    # Then: two machines, neither exporting anything, and no DynamoDB permission anywhere
    machines = _resources(template, "AWS::StepFunctions::StateMachine").values()
    assert poller.export_poller is None and len(poller.state_machines) == len(machines) == 2
    assert not any("Describe Export" in json.dumps(m) for m in machines)
    assert "dynamodb:" not in json.dumps(_resources(template, "AWS::IAM::Policy"))


def test_the_poller_has_no_other_name_for_the_table_to_export():
    # Given
    stack = _stack()
    # When / Then: alert_table, once an alias of export_table, is no prop at all
    with pytest.raises(TypeError, match="alert_table"):
        JobPoller(stack, "JobPoller", alert_table=_table(stack))


def test_two_alert_setups_build_in_one_stack_and_the_first_keeps_its_table_id():
    # Given: a team's stack with one alert setup per team, each with its own Slack channel
    stack = _stack()
    AlertNotification(stack, "Alerts", schedule="rate(1 hour)", slack_webhook_secret_name="team/slack")
    AlertNotification(stack, "PaymentsAlerts", schedule="rate(1 hour)", slack_webhook_secret_name="payments/slack")
    # When: synthesized with cdk-nag, as the app is
    Validations.of(stack.node.root).add_plugins(AwsSolutionsChecks(stack.node.root))
    template = json.loads(json.dumps(stack.node.root.synth().get_stack_by_name("Team").template))
    # Then: two alert tables, the first under the logical id every deployed one has (a changed logical
    # id makes CloudFormation replace the table), the second under one of its own
    alert_tables = [k for k, t in _resources(template, "AWS::DynamoDB::Table").items() if "alarm_name" in json.dumps(t)]
    assert sorted(alert_tables) == ["AlertTable", "PaymentsAlertsAlertTable"]
    on_call_tables = [k for k, t in _resources(template, "AWS::DynamoDB::Table").items() if "schedule_id" in json.dumps(t)]
    assert sorted(on_call_tables) == ["OnCallTable", "PaymentsAlertsOnCallTable"]
    assert len(_resources(template, "AWS::StepFunctions::StateMachine")) == 2
    assert len(_resources(template, "AWS::Lambda::Url")) == 2


def test_the_example_app_builds_the_constructs_side_by_side_in_one_stack_cdk_nag_clean(tmp_path):
    # Given: examples/team_stack.py, imported as examples/app.py imports it
    spec = importlib.util.spec_from_file_location("team_stack", ROOT / "examples" / "team_stack.py")
    team_stack_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(team_stack_module)
    app = App(outdir=str(tmp_path))
    team = team_stack_module.TeamPatternsStack(app, "TeamPatternsStack", env=ENV)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    # When: synthesis fails on any unacknowledged cdk-nag finding
    template = json.loads((Path(app.synth().directory) / "TeamPatternsStack.template.json").read_text())
    # Then: every machine is there, each running the team's functions
    assert len(_resources(template, "AWS::StepFunctions::StateMachine")) >= 4
    assert {"MapRetryStateMachineArn", "JobPollerStateMachineArn", "AlertStateMachineArn"} <= set(template["Outputs"])
    assert all(team.node.try_find_child(name) is not None for name in ("MapRetry", "JobPoller", "Alerts"))


def test_the_alert_machine_notifies_through_the_teams_notifier_and_makes_no_slack_parts(team_stack):
    # Given
    stack, template, functions = team_stack
    notifier_arn = stack.resolve(functions["notifier"].function_arn)
    [machine_id] = [k for k, m in _resources(template, "AWS::StepFunctions::StateMachine").items() if "Notify User" in json.dumps(m)]
    machine = template["Resources"][machine_id]
    # Then: Notify User invokes the team's function, and the machine may invoke it
    assert notifier_arn in machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    machine_role = machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    invokes = [s for s in _statements(template, machine_role) if s["Action"] == "lambda:InvokeFunction"]
    assert any(notifier_arn in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]) for s in invokes)
    # ...with no Slack notifier, no idempotency table of its, no reference to a webhook secret
    descriptions = [f["Properties"].get("Description", "") for f in _resources(template, "AWS::Lambda::Function").values()]
    assert not any("Slack incoming webhook" in d for d in descriptions)
    assert not [k for k in _resources(template, "AWS::DynamoDB::Table") if k.startswith("AlertsIdempotencyTable")]
    assert "SLACK_WEBHOOK_SECRET_NAME" not in json.dumps(template)


def test_the_alert_construct_exposes_its_machine_log_group_and_the_functions_it_made():
    # Given
    stack = _stack()
    # When
    alerts = AlertNotification(stack, "Alerts", schedule="rate(1 hour)", slack_webhook_secret_name="team/slack")
    # Then: Slack stays the default
    assert alerts.notifier is alerts.functions["NotifyUser"]
    assert set(alerts.functions) == {
        "FetchAlertConfig", "ActionsEndpoint", "ActionsFollowUp", "FindWhoIsOnCall", "DeclaredOnCallSchedules",
        "HandoffNotice", "NotifyUser", "DispatchAlerts", "SmsReplies", "Contact"}
    assert alerts.log_group is not None and alerts.state_machine.node.path == "Team/Alerts/Machine/StateMachine"


@pytest.mark.parametrize("props", [{}, {"slack_webhook_secret_name": "team/slack", "notifier": True}])
def test_the_alert_construct_takes_exactly_one_of_slack_or_a_notifier(props):
    # Given
    stack = _stack()
    props = {k: _function(stack, "Notifier") if k == "notifier" else v for k, v in props.items()}
    # When / Then
    with pytest.raises(InvalidProp, match=r"^notifier: give exactly one of notifier .* or slack_webhook_secret_name"):
        AlertNotification(stack, "Alerts", schedule="rate(1 hour)", **props)


def test_a_notifier_that_outlives_the_notify_user_task_is_refused_naming_the_prop():
    # Given
    limit = task_timeout_seconds("alert_notification", "Notify User")
    stack = _stack()
    # When / Then
    with pytest.raises(InvalidProp, match=rf"^notifier: Team/Slow has a {limit} s timeout; it must be under {limit} s"):
        AlertNotification(stack, "Alerts", schedule="rate(1 hour)", notifier=_function(stack, "Slow", Duration.seconds(limit)))
