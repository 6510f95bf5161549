"""Security review of the synthesized templates: least privilege, encryption, private SSL-only data, no secrets.

Each test states one rule a reviewer would check by hand, over every resource of every stack, so a
resource added later is reviewed too. Wildcard IAM resources that AWS cannot scope further are
allowed only with the cdk-nag acknowledgement that gives the reason, read from the validation
report that synthesis writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from stacks.common.nag import nag_name
from stacks.monitoring.construct import NO_ALERT_EMAIL_WARNING

# Actions AWS documents with no resource-level permissions, so "Resource": "*" is the only form:
# X-Ray writes and sampling reads (X-Ray "Actions, resources, and condition keys"), and the
# CloudWatch Logs vended-log delivery actions Step Functions logging needs (Step Functions guide,
# "IAM policies for logging to CloudWatch Logs").
UNSCOPABLE_ACTIONS = frozenset(
    {
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "xray:GetSamplingRules",
        "xray:GetSamplingTargets",
        "logs:CreateLogDelivery",
        "logs:GetLogDelivery",
        "logs:UpdateLogDelivery",
        "logs:DeleteLogDelivery",
        "logs:ListLogDeliveries",
        "logs:PutResourcePolicy",
        "logs:DescribeResourcePolicies",
        "logs:DescribeLogGroups",
        # Answers for composite alarms only when scoped to "*" (CloudWatch API Reference, DescribeAlarms)
        "cloudwatch:DescribeAlarms",
    }
)

# Shapes real secrets have: a Slack webhook or token, AWS access keys, private keys, credentials in URLs.
SECRET_SHAPES = {
    "Slack webhook URL": re.compile(r"hooks\.slack\.com/(services|workflows|triggers)/", re.IGNORECASE),
    "Slack token": re.compile(r"\bxox[abposr]-[0-9A-Za-z-]{10,}"),
    "AWS access key id": re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
    "private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "credentials in a URL": re.compile(r"://[^/\s:@]+:[^/\s@]+@"),
    # A dynamic reference puts the secret's value into the resource's configuration, readable by
    # anyone who can describe the resource.
    "resolved secret value": re.compile(r"\{\{resolve:(secretsmanager|ssm-secure):"),
}
SECRET_LOOKING_NAME = re.compile(r"SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|PRIVATE|CREDENTIAL|WEBHOOK", re.IGNORECASE)


@dataclass(frozen=True)
class Statement:
    stack: str
    policy: str  # logical id of the policy (or role) that holds the statement
    path: str  # construct path, as the cdk-nag report names it
    body: dict

    @property
    def actions(self) -> list[str]:
        return _as_list(self.body.get("Action"))

    @property
    def resources(self) -> list[str]:
        return [nag_name(resource) for resource in _as_list(self.body.get("Resource"))]


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [] if value is None else [value]


def _resources(synthesized_app, resource_type: str) -> Iterator[tuple[str, str, dict]]:
    for stack, template in synthesized_app.templates.items():
        for logical_id, resource in template.get("Resources", {}).items():
            if resource["Type"] == resource_type:
                yield stack, logical_id, resource.get("Properties", {})


@pytest.fixture(scope="module")
def construct_paths(synthesized_app) -> dict[tuple[str, str], str]:
    """(stack, logical id) -> construct path, the key the cdk-nag report uses."""
    from aws_cdk import CfnResource, Stack

    paths = {}
    for stack in vars(synthesized_app.stacks).values():
        for construct in stack.node.find_all():
            if CfnResource.is_cfn_resource(construct):
                paths[(stack.stack_name, Stack.of(construct).resolve(construct.logical_id))] = construct.node.path
    return paths


@pytest.fixture(scope="module")
def identity_statements(synthesized_app, construct_paths) -> list[Statement]:
    """Every statement of every identity-based policy (inline role policies and AWS::IAM::Policy)."""
    statements = []
    for stack, logical_id, props in _resources(synthesized_app, "AWS::IAM::Policy"):
        for body in props["PolicyDocument"]["Statement"]:
            statements.append(Statement(stack, logical_id, construct_paths[(stack, logical_id)], body))
    for stack, logical_id, props in _resources(synthesized_app, "AWS::IAM::Role"):
        for policy in props.get("Policies", []):
            for body in policy["PolicyDocument"]["Statement"]:
                statements.append(Statement(stack, logical_id, construct_paths[(stack, logical_id)], body))
    assert len(statements) > 40  # the templates were read, not an empty app
    return statements


@pytest.fixture(scope="module")
def acknowledgements(synthesized_app) -> dict[tuple[str, str], str]:
    """(finding, construct path) -> reason, for every finding cdk-nag reported as acknowledged."""
    report = json.loads((synthesized_app.outdir / "validation-report.json").read_text())
    found = {}
    # No finding is left unacknowledged. cdk.json sets no alertEmail: the one warning the app means to
    # print at every synth (docs/deploying.md) is reported beside them.
    reported = [(plugin["pluginName"], violation["ruleName"]) for plugin in report["pluginReports"]
                for violation in plugin["violations"]]
    assert reported == [("Construct Annotations", f"Annotation::{NO_ALERT_EMAIL_WARNING}")]
    for plugin in report["pluginReports"]:
        for violation in plugin.get("suppressedViolations", []):  # (none in the annotations report)
            for construct in violation["violatingConstructs"]:
                found[(violation["ruleName"], construct["constructPath"])] = violation["reason"]
    return found


# -- IAM: least privilege -----------------------------------------------------------------------
def test_no_statement_uses_not_forms(identity_statements):
    # NotAction/NotResource grant everything except what they name, including what AWS adds later.
    offenders = [(s.policy, s.body) for s in identity_statements if {"NotAction", "NotResource"} & s.body.keys()]
    assert offenders == []


def test_every_statement_names_its_actions(identity_statements):
    # "*" or "s3:Get*" grants actions AWS adds to the service later.
    offenders = [(s.policy, a) for s in identity_statements for a in s.actions if "*" in a]
    assert offenders == []


def test_resource_star_only_for_actions_aws_cannot_scope(identity_statements):
    offenders = [
        (s.policy, sorted(set(s.actions) - UNSCOPABLE_ACTIONS))
        for s in identity_statements
        if "*" in s.resources and not set(s.actions) <= UNSCOPABLE_ACTIONS
    ]
    assert offenders == []


def test_every_wildcard_resource_is_acknowledged_with_a_reason(identity_statements, acknowledgements):
    # Given: every resource with a wildcard (bare "*", or a pattern such as <bucket>/jobs/*/status.txt)
    wildcards = [(s, resource) for s in identity_statements for resource in s.resources if "*" in resource]
    assert wildcards  # X-Ray alone needs some
    # Then: each has its own cdk-nag IAM5 acknowledgement on that policy, giving a real reason
    missing, vague = [], []
    for statement, resource in wildcards:
        reason = acknowledgements.get((f"AwsSolutions-IAM5[Resource::{resource}]", statement.path))
        if reason is None:
            missing.append((statement.path, resource))
        elif len(reason.split()) < 8:
            vague.append((statement.path, reason))
    assert missing == [] and vague == []


def test_every_acknowledgement_is_for_a_finding_that_exists(identity_statements, acknowledgements):
    # An acknowledgement without its finding would hide the next, different wildcard.
    resources_by_path: dict[str, set[str]] = {}
    for s in identity_statements:
        resources_by_path.setdefault(s.path, set()).update(s.resources)
    stale = [
        (rule, path)
        for rule, path in acknowledgements
        if rule.startswith("AwsSolutions-IAM5[Resource::")
        and rule.removeprefix("AwsSolutions-IAM5[Resource::").removesuffix("]")
        not in resources_by_path.get(path, set())
    ]
    assert stale == []


def test_every_wildcard_pattern_starts_from_a_named_resource_and_prefix(identity_statements):
    # A pattern may leave a run-time name open (an execution's md5, an export id), but never a
    # whole service ("arn:aws:s3:::*") or a whole bucket or table ("<Bucket.Arn>/*").
    patterns = sorted({r for s in identity_statements for r in s.resources if "*" in r and r != "*"})
    assert patterns
    for pattern in patterns:
        named = pattern.partition("*")[0]
        # <X> is a Ref: a schedule group's name (AWS::Scheduler::ScheduleGroup has no Name attribute)
        assert re.search(r"<[A-Za-z0-9]+(\.(Arn|Name))?>|:ExportsOutput", named), pattern
        assert not re.fullmatch(r".*(<[A-Za-z0-9]+\.Arn>|:ExportsOutput[A-Za-z0-9]+)/", named), pattern


# -- data at rest and in transit -----------------------------------------------------------------
def test_every_bucket_is_encrypted_private_and_ssl_only(synthesized_app):
    buckets = list(_resources(synthesized_app, "AWS::S3::Bucket"))
    assert len(buckets) == 2
    policies = {
        (stack, props["Bucket"]["Ref"]): props["PolicyDocument"]["Statement"]
        for stack, _, props in _resources(synthesized_app, "AWS::S3::BucketPolicy")
    }
    for stack, logical_id, props in buckets:
        rules = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        algorithms = {r["ServerSideEncryptionByDefault"]["SSEAlgorithm"] for r in rules}
        assert algorithms and algorithms <= {"AES256", "aws:kms", "aws:kms:dsse"}, logical_id
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }
        assert props.get("AccessControl", "Private") == "Private" and "WebsiteConfiguration" not in props
        denies = [
            s
            for s in policies[(stack, logical_id)]
            if s["Effect"] == "Deny"
            and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            and s["Action"] == "s3:*"
            and s["Principal"] in ({"AWS": "*"}, "*")
        ]
        assert len(denies) == 1, logical_id
        assert {nag_name(r) for r in denies[0]["Resource"]} == {f"<{logical_id}.Arn>", f"<{logical_id}.Arn>/*"}


def test_no_bucket_policy_allows_anyone(synthesized_app):
    for _, logical_id, props in _resources(synthesized_app, "AWS::S3::BucketPolicy"):
        allows = [s for s in props["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
        assert all(s["Principal"] not in ("*", {"AWS": "*"}) for s in allows), logical_id


def test_every_table_is_encrypted_with_kms(synthesized_app):
    tables = list(_resources(synthesized_app, "AWS::DynamoDB::Table"))
    # alert configs, the notifier's idempotency records, on-call schedules, people, the export poller's
    # demo table, the Map retry chunk journal
    assert sorted(stack for stack, _, _ in tables) == ["AlertNotificationStack"] * 4 + ["JobPollerStack", "MapRetryStack"]
    for _, logical_id, props in tables:
        assert props.get("SSESpecification", {}).get("SSEEnabled") is True, logical_id


def test_every_topic_is_kms_encrypted_and_ssl_only(synthesized_app):
    topics = list(_resources(synthesized_app, "AWS::SNS::Topic"))
    assert topics
    keys = {(stack, logical_id): props for stack, logical_id, props in _resources(synthesized_app, "AWS::KMS::Key")}
    policies = [(stack, props) for stack, _, props in _resources(synthesized_app, "AWS::SNS::TopicPolicy")]
    for stack, logical_id, props in topics:
        key = props["KmsMasterKeyId"]["Fn::GetAtt"][0]
        assert keys[(stack, key)]["EnableKeyRotation"] is True
        statements = [
            s
            for policy_stack, policy in policies
            if policy_stack == stack and {"Ref": logical_id} in policy["Topics"]
            for s in policy["PolicyDocument"]["Statement"]
        ]
        assert any(
            s["Effect"] == "Deny"
            and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            and "sns:Publish" in _as_list(s["Action"])
            and s["Principal"] in ("*", {"AWS": "*"})
            for s in statements
        ), logical_id


def test_every_queue_is_encrypted_and_ssl_only(synthesized_app):
    queues = list(_resources(synthesized_app, "AWS::SQS::Queue"))
    assert queues
    policies = [props for _, _, props in _resources(synthesized_app, "AWS::SQS::QueuePolicy")]
    for _, logical_id, props in queues:
        assert props.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in props, logical_id
        statements = [
            s for p in policies if {"Ref": logical_id} in p["Queues"] for s in p["PolicyDocument"]["Statement"]
        ]
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements
        ), logical_id


# -- secrets ---------------------------------------------------------------------------------------
def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_no_template_holds_a_secret_value(synthesized_app):
    found = [
        (stack, shape, text[:80])
        for stack, template in synthesized_app.templates.items()
        for text in _strings(template)
        for shape, pattern in SECRET_SHAPES.items()
        if pattern.search(text)
    ]
    assert found == []


def test_secrets_reach_functions_only_as_a_secret_name_or_arn(synthesized_app):
    # Given: every environment variable of every function, and the secrets the stacks create
    variables = {
        (stack, logical_id, name): value
        for stack, logical_id, props in _resources(synthesized_app, "AWS::Lambda::Function")
        for name, value in props.get("Environment", {}).get("Variables", {}).items()
    }
    created = {(stack, logical_id) for stack, logical_id, _ in _resources(synthesized_app, "AWS::SecretsManager::Secret")}
    # Then: no value is a URL, and any variable whose name sounds secret holds the name of a secret
    # created by whoever deploys, or a Ref to one the stack creates (its ARN)
    assert not [key for key, value in variables.items() if isinstance(value, str) and "://" in value]
    secret_like = {key: value for key, value in variables.items() if SECRET_LOOKING_NAME.search(key[2])}
    assert secret_like  # the notifier's webhook secret name, at least
    for (stack, function, name), value in secret_like.items():
        assert name.endswith(("_SECRET_NAME", "_SECRET_ARN")), (function, name)
        if isinstance(value, dict):
            assert name.endswith("_SECRET_ARN") and (stack, value.get("Ref")) in created, (function, name, value)
        else:
            assert isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9/_+=.@-]{1,512}", value), (function, name)


def test_no_environment_value_looks_like_a_key(synthesized_app):
    # A long run of letters and digits with no word in it is what keys and tokens look like.
    key_like = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9+/=_-]{24,}$")
    offenders = [
        (logical_id, name)
        for _, logical_id, props in _resources(synthesized_app, "AWS::Lambda::Function")
        for name, value in props.get("Environment", {}).get("Variables", {}).items()
        if isinstance(value, str) and key_like.match(value)
    ]
    assert offenders == []


# -- logs -------------------------------------------------------------------------------------------
def test_every_function_logs_to_a_log_group_of_its_own_with_retention(synthesized_app):
    # Without LoggingConfig a function writes to /aws/lambda/<name>, created on first use with
    # no retention: logs kept forever.
    groups = []
    for stack, logical_id, props in _resources(synthesized_app, "AWS::Lambda::Function"):
        group = props.get("LoggingConfig", {}).get("LogGroup", {})
        assert "Ref" in group, logical_id
        log_group = synthesized_app.templates[stack]["Resources"][group["Ref"]]
        assert log_group["Type"] == "AWS::Logs::LogGroup"
        assert log_group["Properties"]["RetentionInDays"] > 0, logical_id
        groups.append((stack, group["Ref"]))
    assert len(groups) >= 14 and len(groups) == len(set(groups))
