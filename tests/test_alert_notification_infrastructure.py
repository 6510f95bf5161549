"""AlertNotificationStack template: outputs, machine, least-privilege grants, schedule, idempotency table."""

from __future__ import annotations

import functools
import json
from collections import deque

import pytest
from aws_cdk import App, Validations
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks

from stacks.alert_notification.stack import AlertNotificationStack
from stacks.common.definitions import definition_path
from stacks.config import AppConfig
from tests.app_config import CONTEXT, app_config

ASL = json.loads(definition_path("alert_notification").read_text())
STATES = ASL["States"]
LAMBDA_SERVICE_ERRORS = {
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
}


@functools.cache
def synthesize(config: AppConfig) -> Template:
    """Only this stack, in a fresh app, with cdk-nag: synth() raises on any unacknowledged finding.
    Once per config in a process (a Template is only read): four files check the default one."""
    app = App()
    stack = AlertNotificationStack(app, "AlertNotificationStack", config=config)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    return Template.from_stack(stack)


@pytest.fixture(scope="module")
def template() -> Template:
    return synthesize(app_config())


def logical_id(template: Template, resource_type: str, id_contains: str) -> str:
    [found] = [key for key in template.find_resources(resource_type) if id_contains in key]
    return found


def function_id(template: Template, name: str) -> str:
    return logical_id(template, "AWS::Lambda::Function", name)


def policy_statements(template: Template, role_contains: str) -> list[dict]:
    policy_id = logical_id(template, "AWS::IAM::Policy", role_contains)
    return template.to_json()["Resources"][policy_id]["Properties"]["PolicyDocument"]["Statement"]


def statements_for(template: Template, role_contains: str, *, table: str | None = None) -> dict[str, object]:
    """action -> resource, for every statement of a role except its log and X-Ray writes (only those
    on ``table``'s items, or none of the on-call or people tables', when ``table`` is given)."""
    granted = {}
    for statement in policy_statements(template, role_contains):
        resource = json.dumps(statement["Resource"])
        if table is not None and any((table == other) != (other in resource) for other in ("OnCallTable", "PeopleTable")):
            continue
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        for action in actions:
            if action.split(":")[0] not in ("logs", "xray"):
                granted[action] = statement["Resource"]
    return granted


def resources_granted(template: Template, role_contains: str, action: str) -> list[object]:
    """Every resource a role is granted ``action`` on, whichever statements grant it."""
    found: list[object] = []
    for statement in policy_statements(template, role_contains):
        if action in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]):
            resource = statement["Resource"]
            found += resource if isinstance(resource, list) else [resource]
    return sorted(found, key=json.dumps)


# -- interface -------------------------------------------------------------------------------------


def test_stack_publishes_the_machine_arn_and_the_table_name(template):
    machine = logical_id(template, "AWS::StepFunctions::StateMachine", "Machine")
    template.has_output("StateMachineArn", {"Value": {"Ref": machine}})
    template.has_output("AlertTableName", {"Value": {"Ref": "AlertTable"}})


def test_alert_table_keeps_its_logical_id_key_and_is_retained(template):
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": Match.object_like({"KeySchema": [{"AttributeName": "alert_id", "KeyType": "HASH"}]}),
            "DeletionPolicy": "Retain",
        },
    )
    assert "AlertTable" in template.find_resources("AWS::DynamoDB::Table")


def test_construct_exposes_its_machine_for_monitoring():
    app = App()
    stack = AlertNotificationStack(app, "AlertNotificationStack", config=app_config())
    assert len(stack.state_machines) == 1
    assert stack.state_machines[0].node.path.startswith("AlertNotificationStack/AlertNotification/")


# -- machine ---------------------------------------------------------------------------------------


def test_machine_definition_is_the_asl_file_with_every_placeholder_filled(template):
    # Given: an inline DefinitionString, Fn::Join of text and deploy-time references
    [machine] = template.find_resources("AWS::StepFunctions::StateMachine").values()
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    text = "".join(part for part in parts if isinstance(part, str))
    references = [part for part in parts if not isinstance(part, str)]
    # Then
    assert "${" not in text
    assert '"StartAt": "Fetch Alert Config"' in text
    assert {"Fn::GetAtt": [function_id(template, "FetchAlertConfig"), "Arn"]} in references
    assert {"Fn::GetAtt": [function_id(template, "NotifyUser"), "Arn"]} in references
    assert {"Ref": "AlertTable"} in references


def all_states(states: dict = STATES) -> dict[str, dict]:
    """Every state by name, the Map's iteration states included."""
    found = {}
    for name, state in states.items():
        found[name] = state
        if "ItemProcessor" in state:
            found |= all_states(state["ItemProcessor"]["States"])
    return found


def test_state_names_read_as_sentences():
    assert ASL["StartAt"] == "Fetch Alert Config"
    for name, state in all_states().items():
        assert name[0].isupper() and " " in name, name
        assert name.endswith("?") == (state["Type"] == "Choice"), name


def targets(state: dict) -> set[str]:
    found = {state.get("Next"), state.get("Default")}
    found |= {choice["Next"] for choice in state.get("Choices", [])}
    found |= {catch["Next"] for catch in state.get("Catch", [])}
    return found - {None}


@pytest.mark.parametrize("machine", [ASL, STATES["Notify This Round's Users"]["ItemProcessor"]], ids=["machine", "map"])
def test_every_transition_targets_an_existing_state_and_every_state_is_reachable(machine):
    # Then: the seed pointed at a state "NotifyOverflow" that did not exist
    states = machine["States"]
    for name, state in states.items():
        assert targets(state) <= set(states), (name, targets(state) - set(states))
    reached, queue = set(), deque([machine["StartAt"]])
    while queue:
        name = queue.popleft()
        if name not in reached:
            reached.add(name)
            queue.extend(targets(states[name]))
    assert reached == set(states)


def test_a_round_notifies_its_users_in_one_inline_map_a_few_at_a_time():
    # Then: an inline Map (one transition per notification), bounded so a round keeps Slack's pace
    [round_map] = [state for state in STATES.values() if state["Type"] == "Map"]
    assert round_map["ItemProcessor"]["ProcessorConfig"]["Mode"] == "INLINE"
    assert 1 <= round_map["MaxConcurrency"] <= 5


def test_every_lambda_task_has_a_timeout_and_retries_lambda_service_errors():
    lambda_tasks = {n: s for n, s in all_states().items() if s.get("Resource") == "arn:aws:states:::lambda:invoke"}
    assert set(lambda_tasks) == {"Fetch Alert Config", "Find Who Is On Call", "Notify User"}
    for name, task in lambda_tasks.items():
        assert isinstance(task.get("TimeoutSeconds"), int), name
        retried = {error for retrier in task["Retry"] for error in retrier["ErrorEquals"]}
        assert LAMBDA_SERVICE_ERRORS <= retried, name


# -- functions and grants --------------------------------------------------------------------------


def test_machine_invokes_exactly_its_three_functions_and_reads_and_releases_only_the_alert_table(template):
    granted = statements_for(template, "MachineStateMachineRole")
    assert granted == {
        "lambda:InvokeFunction": [
            {"Fn::GetAtt": [function_id(template, "FetchAlertConfig"), "Arn"]},
            {"Fn::GetAtt": [function_id(template, "NotifyUser"), "Arn"]},
            {"Fn::GetAtt": [function_id(template, "FindWhoIsOnCall"), "Arn"]},
        ],
        "dynamodb:GetItem": [{"Fn::GetAtt": ["AlertTable", "Arn"]}],
        "dynamodb:UpdateItem": [{"Fn::GetAtt": ["AlertTable", "Arn"]}],
    }


def test_fetch_function_reads_and_claims_on_the_alert_table_reads_the_link_key_and_describes_only_this_machine(template):
    granted = statements_for(template, "FetchAlertConfigRoleDefaultPolicy")
    key = {"Ref": logical_id(template, "AWS::SecretsManager::Secret", "SigningKey")}
    assert granted == {
        "dynamodb:GetItem": [{"Fn::GetAtt": ["AlertTable", "Arn"]}],
        "dynamodb:UpdateItem": [{"Fn::GetAtt": ["AlertTable", "Arn"]}],
        "secretsmanager:GetSecretValue": key,
        "secretsmanager:DescribeSecret": key,
    }
    [claim_check] = policy_statements(template, "FetchAlertConfigClaimCheck")
    assert claim_check["Action"] == "states:DescribeExecution"
    machine = logical_id(template, "AWS::StepFunctions::StateMachine", "Machine")
    assert json.dumps({"Fn::GetAtt": [machine, "Name"]}) in json.dumps(claim_check["Resource"])


def test_notifier_reads_only_the_named_secret_and_writes_only_the_idempotency_table(template):
    # Given
    idempotency = logical_id(template, "AWS::DynamoDB::Table", "IdempotencyTable")
    secret_arn = {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":secretsmanager:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                # A secret's ARN ends in "-" and six random characters
                f":secret:{CONTEXT['slackWebhookSecretName']}-??????",
            ],
        ]
    }
    # Then: besides reading a person's rules and arming them (tests/test_alert_contact_infrastructure.py)
    arming = ("PeopleTable", "Contact")
    posting = {
        action: statement["Resource"]
        for statement in policy_statements(template, "NotifyUserRole")
        if not any(name in json.dumps(statement["Resource"]) for name in arming)
        for action in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
        if action.split(":")[0] not in ("logs", "xray")
    }
    assert posting == {
        "secretsmanager:GetSecretValue": secret_arn,
        "secretsmanager:DescribeSecret": secret_arn,
        **{
            f"dynamodb:{action}": [{"Fn::GetAtt": [idempotency, "Arn"]}]
            for action in ("GetItem", "PutItem", "UpdateItem", "DeleteItem")
        },
    }
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": Match.object_like(
                    {"SLACK_WEBHOOK_SECRET_NAME": CONTEXT["slackWebhookSecretName"], "IDEMPOTENCY_TABLE_NAME": {"Ref": idempotency}}
                )
            }
        },
    )


def test_the_only_secret_the_stack_creates_is_the_generated_action_link_key(template):
    # The webhook secret holds a credential and is created by whoever deploys; the signing key of the
    # action links is generated by Secrets Manager at deploy time, so no value is in the template.
    [secret] = template.find_resources("AWS::SecretsManager::Secret").values()
    assert "SecretString" not in secret["Properties"]
    assert secret["Properties"]["GenerateSecretString"]["PasswordLength"] >= 32


def test_secret_name_comes_from_config():
    custom = synthesize(app_config(slack_webhook_secret_name="team-x/webhook", alert_schedule="rate(5 minutes)"))
    policies = json.dumps(custom.find_resources("AWS::IAM::Policy"))
    assert ":secret:team-x/webhook-??????" in policies and "alert-notifier" not in policies
    custom.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(5 minutes)"})


def test_idempotency_table_is_encrypted_expires_records_and_is_keyed_on_id(template):
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": Match.object_like(
                {
                    "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                    "SSESpecification": {"SSEEnabled": True},
                    "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True},
                    "BillingMode": "PAY_PER_REQUEST",
                }
            ),
            "DeletionPolicy": "Delete",
        },
    )


def test_notifier_waits_for_slack_less_than_its_task_timeout(template):
    notifier = template.to_json()["Resources"][function_id(template, "NotifyUser")]["Properties"]
    assert notifier["Timeout"] < all_states()["Notify User"]["TimeoutSeconds"]
    fetch = template.to_json()["Resources"][function_id(template, "FetchAlertConfig")]["Properties"]
    assert fetch["Timeout"] < STATES["Fetch Alert Config"]["TimeoutSeconds"]


# -- schedule and dispatcher -----------------------------------------------------------------------


def test_an_eventbridge_rule_runs_the_dispatcher_on_the_default_schedule(template):
    # The one Scheduler schedule the stack creates re-arms the handoff notices; the dispatcher's is a rule
    [rearm] = template.find_resources("AWS::Scheduler::Schedule").values()
    assert rearm["Properties"]["Target"]["Arn"] == {"Fn::GetAtt": [function_id(template, "HandoffNotice"), "Arn"]}
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(1 hour)",
            "State": "ENABLED",
            "Targets": [Match.object_like({"Arn": {"Fn::GetAtt": [function_id(template, "DispatchAlerts"), "Arn"]}})],
        },
    )
    template.has_resource_properties(
        "AWS::Lambda::Permission",
        {
            "Action": "lambda:InvokeFunction",
            "Principal": "events.amazonaws.com",
            "FunctionName": {"Fn::GetAtt": [function_id(template, "DispatchAlerts"), "Arn"]},
        },
    )


def test_an_undeliverable_schedule_event_is_retried_then_kept_in_an_encrypted_dead_letter_queue(template):
    # EventBridge: a target's RetryPolicy (at most 185 attempts, 24 h) and DeadLetterConfig, an SQS
    # queue (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html).
    queue = logical_id(template, "AWS::SQS::Queue", "ScheduleDeadLetterQueue")
    [rule] = [r for r in template.find_resources("AWS::Events::Rule").values() if "ScheduleExpression" in r["Properties"]]
    [target] = rule["Properties"]["Targets"]
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [queue, "Arn"]}}
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 8, "MaximumEventAgeInSeconds": 3600}
    properties = template.to_json()["Resources"][queue]["Properties"]
    assert properties["SqsManagedSseEnabled"] is True
    assert properties["MessageRetentionPeriod"] == 14 * 86400


def test_a_failed_dispatch_is_retried_twice_then_recorded_on_the_dispatch_failure_queue(template):
    # Lambda asynchronous invocation: EventInvokeConfig with an on-failure destination
    # (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html).
    queue = logical_id(template, "AWS::SQS::Queue", "DispatchFailureQueue")
    template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {
            "FunctionName": {"Ref": function_id(template, "DispatchAlerts")},
            "MaximumRetryAttempts": 2,
            "MaximumEventAgeInSeconds": 3600,
            "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": [queue, "Arn"]}}},
        },
    )
    granted = statements_for(template, "DispatchAlertsRole")
    assert granted["sqs:SendMessage"] == {"Fn::GetAtt": [queue, "Arn"]}


def test_dispatcher_may_start_and_list_only_this_machine_scan_only_the_alert_table_and_read_alarms(template):
    machine = logical_id(template, "AWS::StepFunctions::StateMachine", "Machine")
    granted = statements_for(template, "DispatchAlertsRole")
    assert granted.pop("dynamodb:Scan") == [{"Fn::GetAtt": ["AlertTable", "Arn"]}]
    assert granted.pop("states:StartExecution") == {"Ref": machine}
    assert granted.pop("states:ListExecutions") == {"Ref": machine}
    describe = json.dumps(granted.pop("states:DescribeExecution"))
    assert f'":execution:", {{"Fn::GetAtt": ["{machine}", "Name"]}}, ":*"' in describe
    failures = {"Fn::GetAtt": [logical_id(template, "AWS::SQS::Queue", "DispatchFailureQueue"), "Arn"]}
    for action in ("sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"):  # the on-failure destination
        assert granted.pop(action) == failures
    # Composite alarms are described only to a permission scoped to * (CloudWatch API Reference, DescribeAlarms)
    assert granted.pop("cloudwatch:DescribeAlarms") == "*"
    assert granted == {}
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Environment": {"Variables": Match.object_like({"STATE_MACHINE_ARN": {"Ref": machine}})}},
    )


def test_only_log_xray_and_the_dispatchers_alarm_reads_use_a_wildcard_resource(template):
    for name, policy in template.find_resources("AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Resource"] == "*":
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                reads_alarms = "DispatchAlerts" in name and actions == ["cloudwatch:DescribeAlarms"]
                assert reads_alarms or all(action.split(":")[0] in ("logs", "xray") for action in actions), actions


# -- action endpoint -------------------------------------------------------------------------------


def test_the_action_endpoint_is_a_public_function_url_published_as_an_output(template):
    endpoint = function_id(template, "ActionsEndpoint")
    [url] = template.find_resources("AWS::Lambda::Url")
    template.has_resource_properties(
        "AWS::Lambda::Url", {"AuthType": "NONE", "TargetFunctionArn": {"Fn::GetAtt": [endpoint, "Arn"]}}
    )
    template.has_output("AlertActionsUrl", {"Value": {"Fn::GetAtt": [url, "FunctionUrl"]}})


def test_by_default_the_action_endpoint_reserves_no_concurrency(template):
    # Lambda keeps 100 of the account's concurrency unreserved, and a new account's quota is often 10
    # (https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html): a reservation fails there.
    endpoint = template.to_json()["Resources"][function_id(template, "ActionsEndpoint")]["Properties"]
    assert "ReservedConcurrentExecutions" not in endpoint


def test_with_the_reservation_key_only_the_action_endpoint_reserves_that_many():
    # Given: `cdk deploy -c actionEndpointReservedConcurrency=10` (an account whose quota is 110 or more)
    template = synthesize(AppConfig.from_context({**CONTEXT, "actionEndpointReservedConcurrency": "10"}.get))
    # Then: reserved concurrency is both the endpoint's guaranteed share and its ceiling
    # (https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html), on it alone
    functions = template.to_json()["Resources"]
    reserved = {k: r["Properties"]["ReservedConcurrentExecutions"] for k, r in functions.items() if "ReservedConcurrentExecutions" in r.get("Properties", {})}
    assert reserved == {function_id(template, "ActionsEndpoint"): 10}


def test_the_action_endpoint_reads_its_key_updates_only_alert_items_and_hands_the_follow_up_on(template):
    secret = logical_id(template, "AWS::SecretsManager::Secret", "SigningKey")
    follow_up = function_id(template, "ActionsFollowUp")
    granted = statements_for(template, "ActionsEndpointRole", table="AlertTable")
    assert granted.pop("secretsmanager:GetSecretValue") == {"Ref": secret}
    del granted["secretsmanager:DescribeSecret"], granted["lambda:InvokeFunction"]
    assert granted == {
        "dynamodb:GetItem": [{"Fn::GetAtt": ["AlertTable", "Arn"]}],
        "dynamodb:UpdateItem": [{"Fn::GetAtt": ["AlertTable", "Arn"]}],
    }
    invoked = [s["Resource"] for s in policy_statements(template, "ActionsEndpointRole") if s["Action"] == "lambda:InvokeFunction"]
    # the follow-up, not its versions (the endpoint no longer posts to Slack itself), and Handoff Notice,
    # which /oncall cover asks to re-arm (docs/on-call-schedules.md)
    assert sorted(invoked, key=json.dumps) == sorted(
        [{"Fn::GetAtt": [follow_up, "Arn"]}, {"Fn::GetAtt": [function_id(template, "HandoffNotice"), "Arn"]}], key=json.dumps
    )
    endpoint = template.to_json()["Resources"][function_id(template, "ActionsEndpoint")]["Properties"]
    variables = endpoint["Environment"]["Variables"]
    assert variables["SIGNING_KEY_SECRET_ARN"] == {"Ref": secret}
    assert variables["FOLLOW_UP_FUNCTION_NAME"] == {"Ref": follow_up}
    assert "SLACK_SIGNING_SECRET_NAME" not in variables and "SLACK_WEBHOOK_SECRET_NAME" not in variables
    # cdk.json names no workspace: /oncall is refused to every one (docs/on-call-schedules.md)
    assert "SLACK_TEAM_ID" not in variables


def test_the_follow_up_reads_only_the_webhook_and_what_it_could_not_post_is_retried_then_kept(template):
    readable = json.dumps(statements_for(template, "ActionsFollowUpRole")["secretsmanager:GetSecretValue"])
    assert f":secret:{CONTEXT['slackWebhookSecretName']}-??????" in readable and "SigningKey" not in readable
    # Lambda retries an asynchronous invoke at most twice, then hands it to the on-failure destination
    # (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html)
    follow_up = function_id(template, "ActionsFollowUp")
    [config] = [c["Properties"] for c in template.find_resources("AWS::Lambda::EventInvokeConfig").values()
                if c["Properties"]["FunctionName"] == {"Ref": follow_up}]
    assert config["MaximumRetryAttempts"] == 2 and config["MaximumEventAgeInSeconds"] == 3600
    queue = config["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
    assert "FollowUpFailureQueue" in queue


def test_every_poster_to_the_webhook_takes_its_turn_on_the_shared_pace_with_updateitem_alone(template):
    # Every post to the webhook takes a slot on the pace item in the notifier's short-lived table
    # (slack_pace; a post without one met Slack's 429: issue 38)
    idempotency = logical_id(template, "AWS::DynamoDB::Table", "IdempotencyTable")
    functions = template.to_json()["Resources"]
    for name, role in (("ActionsFollowUp", "ActionsFollowUpRole"), ("ApplyAlarmChange", "ApplyAlarmChangeRole")):
        variables = functions[function_id(template, name)]["Properties"]["Environment"]["Variables"]
        assert variables["PACE_TABLE_NAME"] == {"Ref": idempotency}
        on_pace = [s["Action"] for s in policy_statements(template, role) if idempotency in json.dumps(s["Resource"])]
        assert on_pace == ["dynamodb:UpdateItem"], name


def test_a_configured_slack_signing_secret_is_referenced_by_name_and_readable_by_the_endpoint():
    custom = synthesize(app_config(slack_signing_secret_name="team-x/slack-signing"))
    endpoint = custom.to_json()["Resources"][function_id(custom, "ActionsEndpoint")]["Properties"]
    assert endpoint["Environment"]["Variables"]["SLACK_SIGNING_SECRET_NAME"] == "team-x/slack-signing"
    granted = json.dumps(statements_for(custom, "ActionsEndpointRole")["secretsmanager:GetSecretValue"])
    assert ":secret:team-x/slack-signing-??????" in granted
    # Still only the generated key is created: the signing secret belongs to whoever set up the Slack app
    custom.resource_count_is("AWS::SecretsManager::Secret", 1)


def test_the_workspace_slack_team_id_names_reaches_the_endpoint():
    custom = synthesize(app_config(slack_team_id="T0001ABCD"))
    endpoint = custom.to_json()["Resources"][function_id(custom, "ActionsEndpoint")]["Properties"]
    assert endpoint["Environment"]["Variables"]["SLACK_TEAM_ID"] == "T0001ABCD"


# -- alarms ----------------------------------------------------------------------------------------


def test_alerts_are_found_by_alarm_name_on_an_index_of_the_same_table(template):
    # Then: the table keeps its logical id (no replacement) and gains a KEYS_ONLY index on alarm_name
    table = template.to_json()["Resources"]["AlertTable"]["Properties"]
    assert {"AttributeName": "alarm_name", "AttributeType": "S"} in table["AttributeDefinitions"]
    assert table["GlobalSecondaryIndexes"] == [
        {
            "IndexName": "AlarmName",
            "KeySchema": [{"AttributeName": "alarm_name", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
        }
    ]


def test_a_rule_sends_alarm_changes_to_alarm_and_ok_only_to_the_alarm_handler(template):
    # The documented event: source aws.cloudwatch, detail-type "CloudWatch Alarm State Change",
    # detail.state.value (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html)
    [rule] = [r for r in template.find_resources("AWS::Events::Rule").values() if "EventPattern" in r["Properties"]]
    assert rule["Properties"]["EventPattern"] == {
        "source": ["aws.cloudwatch"],
        "detail-type": ["CloudWatch Alarm State Change"],
        "detail": {"state": {"value": ["ALARM", "OK"]}},
    }
    [target] = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [function_id(template, "ApplyAlarmChange"), "Arn"]}
    queue = logical_id(template, "AWS::SQS::Queue", "AlarmsFailureQueue")
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [queue, "Arn"]}}
    assert target["RetryPolicy"]["MaximumEventAgeInSeconds"] <= 3600


def test_the_alarm_handler_queries_only_the_index_updates_items_and_starts_and_stops_only_this_machine(template):
    machine = logical_id(template, "AWS::StepFunctions::StateMachine", "Machine")
    granted = statements_for(template, "ApplyAlarmChangeRole")
    # StopExecution (the earlier occurrence's execution) on this machine's executions only:
    # arn:<partition>:states:<region>:<account>:execution:<machine name>:*
    stop = json.dumps(granted.pop("states:StopExecution"))
    assert ':execution:"' in stop and '"Fn::GetAtt": ["' + machine + '", "Name"]' in stop and stop.endswith(':*"]]}')
    index = json.dumps(granted.pop("dynamodb:Query"))
    assert '"AlertTable", "Arn"' in index and index.endswith('"/index/AlarmName"]]}')
    # UpdateItem on alert items, and on Slack's pace item, where a resolved alarm's follow-up takes its turn
    idempotency = logical_id(template, "AWS::DynamoDB::Table", "IdempotencyTable")
    granted.pop("dynamodb:UpdateItem")
    assert resources_granted(template, "ApplyAlarmChangeRole", "dynamodb:UpdateItem") == sorted(
        [{"Fn::GetAtt": ["AlertTable", "Arn"]}, {"Fn::GetAtt": [idempotency, "Arn"]}], key=json.dumps)
    assert granted.pop("states:StartExecution") == {"Ref": machine}
    assert ":secret:alert-notifier/slack-webhook-??????" in json.dumps(granted.pop("secretsmanager:GetSecretValue"))
    granted.pop("secretsmanager:DescribeSecret")
    for action in ("sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"):  # the on-failure destination
        granted.pop(action)
    assert granted == {}


def test_no_other_role_may_read_the_alarm_index(template):
    # Table.grant would add <table>/index/* to every grant once CDK knows of an index
    assert "/index/*" not in json.dumps(template.find_resources("AWS::IAM::Policy"))
