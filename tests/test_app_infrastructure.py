"""The app as a whole: four stacks, their interface outputs, nag clean, stable ids.

cfn-lint on these templates is tests/test_scanners_infrastructure.py's: it finds there exactly what
the templates acknowledge, so cfn-lint passes them as they are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stacks.config import AppConfig
from tests.app_config import CONTEXT, app_config
from tests.conftest import HANG_SECONDS, ROOT
from tests.parallel import VALIDATION

STACKS = ("AlertNotificationStack", "JobPollerStack", "MapRetryStack", "MonitoringStack")


def test_app_has_the_four_stacks_users_deploy_by_name(synthesized_app):
    # Then
    assert set(synthesized_app.templates) == set(STACKS)


@pytest.mark.parametrize(
    "stack, outputs",
    [
        ("AlertNotificationStack", {"StateMachineArn", "AlertTableName"}),
        ("JobPollerStack", {"StateMachineArn", "JobBucketName", "ExportPollerStateMachineArn", "CallbackStateMachineArn"}),
        ("MapRetryStack", {"StateMachineArn", "ItemsBucketName"}),
        ("MonitoringStack", {"StatusTopicArn"}),
    ],
)
def test_stack_publishes_its_interface_outputs(synthesized_app, stack, outputs):
    # Then: CfnOutput keys are what `aws cloudformation describe-stacks` shows users
    assert outputs <= set(synthesized_app.templates[stack].get("Outputs", {}))


@pytest.mark.parametrize(
    "stack, logical_id, resource_type",
    [
        ("AlertNotificationStack", "AlertTable", "AWS::DynamoDB::Table"),
        ("JobPollerStack", "JobBucket", "AWS::S3::Bucket"),
        ("MapRetryStack", "ItemsBucket", "AWS::S3::Bucket"),
    ],
)
def test_stateful_resources_keep_stable_logical_ids(synthesized_app, stack, logical_id, resource_type):
    # Then: renaming these would make CloudFormation replace (and lose) the data
    assert synthesized_app.templates[stack]["Resources"][logical_id]["Type"] == resource_type


def test_monitoring_watches_every_state_machine_of_the_app(synthesized_app):
    # Given: every machine the pattern stacks define
    machines = {
        (stack, logical_id)
        for stack, template in synthesized_app.templates.items()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
    }
    # Then: five machines, and the status rule names each (through a cross-stack import)
    assert len(machines) == 5
    rules = [r for r in synthesized_app.templates["MonitoringStack"]["Resources"].values() if r["Type"] == "AWS::Events::Rule"]
    watched = json.dumps([r["Properties"]["EventPattern"]["detail"]["stateMachineArn"] for r in rules])
    for _, logical_id in machines:
        assert logical_id in watched, logical_id


def test_every_lambda_runs_python_313_with_powertools_and_tracing(synthesized_app):
    functions = [
        resource
        for template in synthesized_app.templates.values()
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
    ]
    for function in functions:
        props = function["Properties"]
        assert props["Runtime"] == "python3.13"
        assert props["TracingConfig"] == {"Mode": "Active"}
        layers = json.dumps(props["Layers"])
        assert "AWSLambdaPowertoolsPythonV3-python313-x86_64" in layers


def test_the_powertools_layer_deployed_is_the_release_the_tests_run(synthesized_app):
    # Powertools: layer version 27 of AWSLambdaPowertoolsPythonV3-python313-x86_64 is release 3.23.0
    # (https://github.com/aws-powertools/powertools-lambda-python/issues/7689).
    from importlib.metadata import version

    assert version("aws-lambda-powertools") == "3.23.0"
    layers = [
        json.dumps(resource["Properties"]["Layers"])
        for template in synthesized_app.templates.values()
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
    ]
    assert layers and all(":017000801446:layer:AWSLambdaPowertoolsPythonV3-python313-x86_64:27" in layer for layer in layers)


def _shared_layers(synthesized_app) -> dict[str, Path]:
    """Each stack's shared layer (its LambdaLayers/Shared) and the asset directory it deploys."""
    found = {}
    for stack, template in synthesized_app.templates.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] == "AWS::Lambda::LayerVersion" and logical_id.startswith("LambdaLayersShared"):
                found[stack] = synthesized_app.outdir / f"asset.{resource['Properties']['Content']['S3Key'].removesuffix('.zip')}"
    return found


def test_the_shared_layer_ships_the_pinned_tzdata_the_synthesis_read(synthesized_app):
    # Lambda puts a layer's python/ on the path (Lambda Developer Guide, "Layer paths for each Lambda
    # runtime"), and zoneinfo falls back to the tzdata package there (docs.python.org zoneinfo,
    # "Data sources"). 2026.6 is the release requirements-shared-layer.txt pins.
    from importlib import resources

    layers = _shared_layers(synthesized_app)
    # Every stack with functions has one (Monitoring has none)
    assert set(layers) == {"AlertNotificationStack", "JobPollerStack", "MapRetryStack"}
    for stack, asset in layers.items():
        python = asset / "python"
        assert (python / "patterns_common" / "oncall.py").is_file(), stack
        assert (python / "tzdata-2026.6.dist-info" / "METADATA").is_file(), stack
        assert "__version__ = \"2026.6\"" in (python / "tzdata" / "__init__.py").read_text(), stack
        # The zone files are the ones synthesis reads from the venv's tzdata, byte for byte
        for zone in ("Europe/Berlin", "America/New_York", "Asia/Kolkata", "UTC"):
            shipped = (python / "tzdata" / "zoneinfo" / zone).read_bytes()
            assert shipped == resources.files("tzdata.zoneinfo").joinpath(zone).read_bytes(), (stack, zone)
        assert not list(python.rglob("__pycache__")), stack


def test_every_function_reads_zones_only_from_the_shared_layers_tzdata(synthesized_app):
    # PYTHONTZPATH empty: zoneinfo searches no directory, so not the image's /usr/share/zoneinfo, and
    # uses only the tzdata package (docs.python.org zoneinfo, "Environment configuration").
    functions = {
        logical_id: resource["Properties"]
        for template in synthesized_app.templates.values()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function"
    }
    assert len(functions) >= 20
    for logical_id, props in functions.items():
        assert props["Environment"]["Variables"]["PYTHONTZPATH"] == "", logical_id
        assert any("LambdaLayersShared" in json.dumps(layer) for layer in props["Layers"]), logical_id


def test_a_venv_without_the_pinned_tzdata_fails_synthesis_naming_both_releases(tmp_path, monkeypatch):
    # Given: a pin the venv does not hold
    from aws_cdk import App, Stack

    from stacks.common import zone_data
    from stacks.common.python_function import shared_layer

    pins = tmp_path / "requirements-shared-layer.txt"
    pins.write_text("tzdata==2019.1\n")
    monkeypatch.setattr(zone_data, "SHARED_LAYER_REQUIREMENTS", pins)
    # When / Then: the layer's bundling refuses it, saying what to run
    with pytest.raises(RuntimeError, match=r"tzdata 2019\.1 is pinned in requirements-shared-layer\.txt for the shared "
                                           r"layer, but 2026\.6 is installed .*run `make setup`"):
        shared_layer(Stack(App(outdir=str(tmp_path / "out")), "Layer"))


def test_a_powertools_release_without_a_known_layer_version_fails_synthesis(tmp_path, monkeypatch):
    # Given: the pin moved to a release whose layer version nobody wrote down
    from stacks.common import python_function

    pins = tmp_path / "requirements-powertools-layer.txt"
    pins.write_text("aws-lambda-powertools[all]==3.24.0\n")
    monkeypatch.setattr(python_function, "POWERTOOLS_REQUIREMENTS", pins)
    # When / Then
    with pytest.raises(ValueError, match="Powertools 3.24.0 is pinned"):
        python_function.powertools_layer_version()


def _layer_arn_in(region: str | None) -> str:
    from aws_cdk import App, Environment, Stack

    from stacks.common import python_function

    app = App(context={"@aws-cdk/core:enablePartitionLiterals": True})
    stack = Stack(app, "Layers", env=Environment(account="123456789012", region=region) if region else None)
    return stack.resolve(python_function.powertools_layer_arn(stack))


@pytest.mark.parametrize(
    ("region", "arn"),
    [
        # The Powertools install page lists the publisher per partition and region:
        # https://docs.aws.amazon.com/powertools/python/latest/getting-started/install/
        ("eu-west-1", "arn:aws:lambda:eu-west-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python313-x86_64:27"),
        ("cn-north-1", "arn:aws-cn:lambda:cn-north-1:498634801083:layer:AWSLambdaPowertoolsPythonV3-python313-x86_64:27"),
        ("us-gov-west-1", "arn:aws-us-gov:lambda:us-gov-west-1:165093116878:layer:AWSLambdaPowertoolsPythonV3-python313-x86_64:27"),
    ],
)
def test_the_powertools_layer_is_the_one_published_in_the_stacks_partition_and_region(region, arn):
    assert _layer_arn_in(region) == arn


def test_a_region_where_no_powertools_layer_is_published_fails_synthesis():
    # Ningxia is in the China partition, but Powertools publishes its layer in cn-north-1 only.
    with pytest.raises(ValueError, match="no AWSLambdaPowertoolsPythonV3-python313-x86_64 layer is published in cn-northwest-1"):
        _layer_arn_in("cn-northwest-1")


def test_an_environment_agnostic_stack_looks_the_publisher_up_at_deploy_time():
    # Given: no region at synthesis, so the template must pick the account in the region it lands in
    arn = json.dumps(_layer_arn_in(None))
    # Then: the commercial account in the aws partition, else the region's from a mapping
    assert '{"Fn::If": ["CommercialPartition", "017000801446", {"Fn::FindInMap": ["PowertoolsLayerPublisher", {"Ref": "AWS::Region"}, "Account"]}]}' in arn


def test_every_state_machine_is_standard_with_inline_definition_logs_and_xray(synthesized_app):
    machines = [
        resource["Properties"]
        for template in synthesized_app.templates.values()
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    for props in machines:
        # Inline DefinitionString: the local emulator ignores DefinitionS3Location/Substitutions
        assert "DefinitionString" in props and "DefinitionSubstitutions" not in props
        assert props.get("StateMachineType", "STANDARD") == "STANDARD"
        assert props["TracingConfiguration"] == {"Enabled": True}
        # Error events without execution data: no input, output or task token in the logs
        # (tests/test_job_poller_execution.py reads what an execution logs)
        assert props["LoggingConfiguration"]["Level"] == "ERROR"
        assert props["LoggingConfiguration"]["IncludeExecutionData"] is False


def test_every_log_group_has_retention(synthesized_app):
    for template in synthesized_app.templates.values():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] == "AWS::Logs::LogGroup":
                assert resource["Properties"].get("RetentionInDays"), logical_id


def test_config_rejects_unknown_monitored_status():
    with pytest.raises(ValueError, match="monitoredStatuses"):
        app_config(monitored_statuses=("FAILED", "EXPLODED"))


def test_config_reads_context_including_json_text_from_the_command_line():
    # Given: `cdk -c monitoredStatuses='["FAILED"]'` passes text, cdk.json passes a list
    context = {**CONTEXT, "monitoredStatuses": '["FAILED"]', "alertEmail": "ops@example.com"}
    # When
    config = AppConfig.from_context(context.get)
    # Then
    assert config.monitored_statuses == ("FAILED",)
    assert config.alert_email == "ops@example.com"
    assert config.slack_webhook_secret_name == CONTEXT["slackWebhookSecretName"]


def test_config_reads_the_slack_workspace_and_refuses_what_is_not_a_workspace_id():
    # Slack's workspace IDs are T and capitals or digits (the team_id of a slash command's form)
    assert AppConfig.from_context(CONTEXT.get).slack_team_id is None
    assert AppConfig.from_context({**CONTEXT, "slackTeamId": "T0001ABCD"}.get).slack_team_id == "T0001ABCD"
    with pytest.raises(ValueError, match="slackTeamId must be a Slack workspace ID"):
        AppConfig.from_context({**CONTEXT, "slackTeamId": "my-workspace"}.get)


def test_config_names_every_setting_cdk_json_lacks():
    # Given: settings live only in cdk.json's context, so a context without them cannot build the app
    context = {key: value for key, value in CONTEXT.items() if key not in ("alertSchedule", "slackWebhookSecretName")}
    # Then
    with pytest.raises(ValueError, match="must set slackWebhookSecretName, alertSchedule"):
        AppConfig.from_context(context.get)


def test_both_alert_failure_queues_raise_an_alarm_on_the_status_topic(synthesized_app):
    # Given: the app's monitoring template and the queues the alert stack exports to it
    monitoring = synthesized_app.templates["MonitoringStack"]["Resources"]
    [topic] = [k for k, v in monitoring.items() if v["Type"] == "AWS::SNS::Topic"]
    alarms = {
        v["Properties"]["AlarmName"]: v["Properties"]
        for v in monitoring.values()
        if v["Type"] == "AWS::CloudWatch::Alarm" and isinstance(v["Properties"]["AlarmName"], str)
    }
    # Then: one alarm per queue, on the failures sent to it, notifying the topic that people subscribe to
    for name, queue in (
        ("MonitoringStack-AlertScheduleDeadLettered", "ScheduleDeadLetterQueue"),
        ("MonitoringStack-AlertDispatchFailed", "DispatchFailureQueue"),
    ):
        alarm = alarms[name]
        assert alarm["MetricName"] == "NumberOfMessagesSent" and alarm["Namespace"] == "AWS/SQS"
        assert alarm["Threshold"] == 1 and alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert queue in json.dumps(alarm["Dimensions"])  # the import of the alert stack's queue name
        assert alarm["AlarmActions"] == [{"Ref": topic}]


# -- a new account, a second region, a second copy -------------------------------------------------


def _synthesize(outdir: Path, *, region: str = "us-east-1", **context: str) -> dict[str, dict]:
    """The whole app as `cdk synth -c key=value` builds it in ``region``: stack name -> template."""
    from aws_cdk import App, Environment

    from stacks.composition import add_stacks

    app = App(outdir=str(outdir), context={**CONTEXT, **context})
    add_stacks(app, AppConfig.from_context(app.node.try_get_context), env=Environment(account="123456789012", region=region))
    assembly = app.synth()
    return {stack.stack_name: stack.template for stack in assembly.stacks}


def test_the_app_as_the_emulator_deploys_it_passes_cdks_builtin_template_validation(tmp_path):
    """`make test` synthesizes with CDK's built-in CloudFormation validation off (tests/parallel.py: it
    would repeat this check at every synthesis); it is made here, on the context the emulator deploys
    with, by app.py in a process of its own, as the `cdk` CLI runs it: the context in CDK_CONTEXT_JSON,
    the assembly's directory in CDK_OUTDIR (https://docs.aws.amazon.com/cdk/v2/guide/apps.html), and no
    CDK_VALIDATION.

    aws-cdk-lib validates every synthesized template against its default rules unless CDK_VALIDATION
    is "false", and cdk.json's ``@aws-cdk/core:validateAgainstDefaultRules`` makes a finding fail the
    synthesis instead of warning (https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.CloudFormationValidatePluginProps.html).
    """
    from emulator.server import ACCOUNT_ID, REGION
    from emulator.session import APP_CONTEXT

    assert CONTEXT["@aws-cdk/core:validateAgainstDefaultRules"] is True
    environment = {name: value for name, value in os.environ.items() if name != VALIDATION}
    environment.update(CDK_CONTEXT_JSON=json.dumps({**CONTEXT, **APP_CONTEXT}), CDK_OUTDIR=str(tmp_path),
                       CDK_DEFAULT_ACCOUNT=ACCOUNT_ID, CDK_DEFAULT_REGION=REGION)
    synthesis = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=environment, capture_output=True, text=True,
                               timeout=HANG_SECONDS)
    assert synthesis.returncode == 0, synthesis.stderr  # a finding fails the synthesis
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [(r["pluginName"], r["conclusion"]) for r in report["pluginReports"] if r["conclusion"] != "success"] == []


@pytest.fixture(scope="module")
def staging_and_prod(tmp_path_factory) -> tuple[dict[str, dict], dict[str, dict]]:
    return tuple(_synthesize(tmp_path_factory.mktemp(stage), stage=stage) for stage in ("staging", "prod"))


def _references_only(value: object, template: dict) -> bool:
    """A Ref or GetAtt of a resource of the same template: names another resource, is no name itself."""
    if isinstance(value, dict) and len(value) == 1:
        [(function, argument)] = value.items()
        target = argument if function == "Ref" else argument[0] if function == "Fn::GetAtt" else None
        return target in template["Resources"]
    return False


# Properties whose key ends in Name but name no resource of their own: CloudWatch metric and
# namespace names, DynamoDB index and attribute names, an SNS topic's display name (shown in
# messages, not unique), an inline policy's name (unique only within its role:
# https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-iam-policy.html).
NOT_PHYSICAL_NAMES = {"MetricName", "Namespace", "IndexName", "AttributeName", "DisplayName", "PolicyName"}


def _names(templates: dict[str, dict]) -> dict[str, set[str]]:
    """Every stack name, export name and explicit physical name of a synthesized app, found generically."""
    names: dict[str, set[str]] = {"stack": set(templates), "export": set(), "physical": set()}
    for template in templates.values():
        for output in template.get("Outputs", {}).values():
            if "Export" in output:
                names["export"].add(json.dumps(output["Export"]["Name"]))
        for resource in template["Resources"].values():
            for key, value in resource.get("Properties", {}).items():
                if key.endswith("Name") and key not in NOT_PHYSICAL_NAMES and not _references_only(value, template):
                    names["physical"].add(f"{resource['Type']} {json.dumps(value)}")
    return names


def test_two_stages_share_no_stack_export_or_physical_name(staging_and_prod):
    # Given: `cdk synth -c stage=staging` and `-c stage=prod` in one account and region
    staging, prod = (_names(templates) for templates in staging_and_prod)
    # Then: each kind of name is there to compare (the app exports, names alarms, topics, log groups)
    for kind in ("stack", "export", "physical"):
        assert staging[kind] and prod[kind], kind
        # ... and the copies share none: CloudFormation refuses a second stack, export or named
        # resource of the same name in one account and region
        assert staging[kind].isdisjoint(prod[kind]), (kind, staging[kind] & prod[kind])
    assert {"staging-AlertNotificationStack", "staging-JobPollerStack", "staging-MapRetryStack", "staging-MonitoringStack"} == staging["stack"]


def test_every_name_of_a_copy_carries_its_stage_and_without_one_none_does(synthesized_app, staging_and_prod):
    # Given: the staging copy, and the app without -c stage
    staging, default = _names(staging_and_prod[0]), _names(synthesized_app.templates)
    # Then: the copy's every stack, export and physical name has its stage in it
    for kind, names in staging.items():
        assert all("staging" in name for name in names), (kind, [n for n in names if "staging" not in n])
    # ... and without a stage the stacks keep the names the emulator, the docs and the bench use
    assert default["stack"] == set(STACKS)
    assert all(json.loads(name).split(":")[0] in STACKS for name in default["export"])


# Resource types whose names AWS scopes to the account, not the region (CloudWatch dashboards:
# "All dashboards in your account are global, not region-specific", AWS::CloudWatch::Dashboard
# reference; IAM is a global service), or to every account (S3 bucket names).
ACCOUNT_WIDE_NAMES = {
    "AWS::CloudWatch::Dashboard": "DashboardName",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
    "AWS::IAM::User": "UserName",
    "AWS::IAM::Group": "GroupName",
    "AWS::IAM::InstanceProfile": "InstanceProfileName",
    "AWS::S3::Bucket": "BucketName",
}


def _account_wide_names(templates: dict[str, dict]) -> dict[str, str]:
    return {
        json.dumps(resource["Properties"][ACCOUNT_WIDE_NAMES[resource["Type"]]]): resource["Type"]
        for template in templates.values()
        for resource in template["Resources"].values()
        if ACCOUNT_WIDE_NAMES.get(resource["Type"]) in resource.get("Properties", {})
    }


def test_a_second_region_shares_no_name_aws_scopes_to_the_account(synthesized_app, tmp_path):
    # Given: the app synthesized for us-east-1 (CDK_DEFAULT_REGION=us-east-1) and for eu-west-1
    first = _account_wide_names(synthesized_app.templates)
    second = _account_wide_names(_synthesize(tmp_path, region="eu-west-1"))
    # Then: the dashboard is named in both, and no account-wide name is the same in the two regions
    assert list(first.values()).count("AWS::CloudWatch::Dashboard") == 1
    assert list(second.values()).count("AWS::CloudWatch::Dashboard") == 1
    assert set(first).isdisjoint(second), set(first) & set(second)


def test_the_default_app_reserves_no_concurrency(synthesized_app):
    # Lambda keeps 100 of the account's concurrency unreserved and new accounts often have a quota of
    # 10, so any reservation fails there ("Configuring reserved concurrency",
    # https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html)
    reserved = [
        (stack, logical_id)
        for stack, template in synthesized_app.templates.items()
        for logical_id, resource in template["Resources"].items()
        if "ReservedConcurrentExecutions" in resource.get("Properties", {})
    ]
    functions = [r for t in synthesized_app.templates.values() for r in t["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert functions and reserved == []


def test_the_action_endpoint_is_alarmed_on_the_status_topic_instead(synthesized_app):
    # Given: the monitoring template and the endpoint's function in the alert stack
    monitoring = synthesized_app.templates["MonitoringStack"]["Resources"]
    [topic] = [k for k, v in monitoring.items() if v["Type"] == "AWS::SNS::Topic"]
    alert = synthesized_app.templates["AlertNotificationStack"]["Resources"]
    [endpoint] = [k for k, v in alert.items() if v["Type"] == "AWS::Lambda::Function" and "ActionsEndpoint" in k]
    # When: the alarms on the endpoint's Lambda metrics (AWS/Lambda, dimension FunctionName)
    alarms = {
        v["Properties"]["MetricName"]: v["Properties"]
        for v in monitoring.values()
        if v["Type"] == "AWS::CloudWatch::Alarm" and v["Properties"]["Namespace"] == "AWS/Lambda"
    }
    # Then: a flood (more instances at once than a click takes), a throttle, an error each notify the topic
    assert set(alarms) == {"ConcurrentExecutions", "Throttles", "Errors"}
    for metric, alarm in alarms.items():
        assert [d["Name"] for d in alarm["Dimensions"]] == ["FunctionName"]
        assert endpoint in json.dumps(alarm["Dimensions"])  # the import of the endpoint's name
        assert alarm["AlarmActions"] == [{"Ref": topic}]
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarms["Throttles"]["Threshold"] == alarms["Errors"]["Threshold"] == 1
    assert alarms["ConcurrentExecutions"]["Statistic"] == "Maximum" and alarms["ConcurrentExecutions"]["Threshold"] > 1


@pytest.mark.parametrize("stage", ["staging", "prod", "team-a2", "A"])
def test_config_accepts_a_stage_that_can_prefix_a_stack_name(stage):
    assert AppConfig.from_context({**CONTEXT, "stage": stage}.get).stage == stage


@pytest.mark.parametrize("stage", ["2024", "team_a", "prod.eu", "staging-", "-x", "a" * 21, "stáging"])
def test_config_refuses_a_stage_no_stack_name_can_start_with(stage):
    # CloudFormation stack names: [A-Za-z][-A-Za-z0-9]{0,127}
    # (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_CreateStack.html)
    with pytest.raises(ValueError, match=r"^stage must be 1 to 20 letters, digits or hyphens"):
        AppConfig.from_context({**CONTEXT, "stage": stage}.get)


def test_config_without_a_stage_or_with_an_empty_one_has_none():
    assert AppConfig.from_context(CONTEXT.get).stage is None
    assert AppConfig.from_context({**CONTEXT, "stage": ""}.get).stage is None


@pytest.mark.parametrize("given, reserved", [(None, None), ("10", 10), (25, 25)])
def test_config_reads_the_endpoint_reservation_from_text_or_a_number(given, reserved):
    # Given: `cdk -c actionEndpointReservedConcurrency=10` passes text, cdk.json a number
    config = AppConfig.from_context({**CONTEXT, "actionEndpointReservedConcurrency": given}.get)
    # Then
    assert config.action_endpoint_reserved_concurrency == reserved


@pytest.mark.parametrize("given", ["ten", "0", 0, -5, 2.5, True])
def test_config_refuses_a_reservation_that_is_not_a_positive_whole_number(given):
    with pytest.raises(ValueError, match=r"^actionEndpointReservedConcurrency must be a whole number of at least 1"):
        AppConfig.from_context({**CONTEXT, "actionEndpointReservedConcurrency": given}.get)
