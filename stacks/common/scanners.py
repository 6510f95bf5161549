"""checkov and cfn-lint-serverless acknowledgements: each finding this app accepts, once, with its reason.

The scanners read acknowledgements from a resource's template metadata: checkov from
``checkov.skip`` (id and comment), cfn-lint from ``cfn-lint.config.ignore_checks``. An aspect writes
both into every resource of the types below, so the reason is stated here and nowhere else.
``tests/test_scanners_infrastructure.py`` runs both scanners on the synthesized templates and
checks that every acknowledgement is still needed.
"""

from __future__ import annotations

import jsii
from aws_cdk import CfnResource, IAspect
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct

ACKNOWLEDGED: dict[str, dict[str, str]] = {
    "AWS::Lambda::Function": {
        "CKV_AWS_117": "No VPC: the functions reach only public AWS endpoints and the Slack webhook and no "
        "private resource; a VPC would add NAT gateways and cold-start cost and protect nothing.",
        "CKV_AWS_116": "Step Functions invokes these functions synchronously and handles their errors with "
        "Retry/Catch (a DLQ is never used for those). The asynchronously invoked ones have an "
        "EventInvokeConfig: the dispatcher's failures go to its on-failure destination (a record with "
        "the error, richer than a DLQ message) and the job runners retry nothing, their machine ends "
        "in JobTimeout instead.",
        "CKV_AWS_115": "Concurrency is bounded by the callers (Map MaxConcurrency, one dispatch per "
        "schedule slot, one runner per job, one alarm handler invocation per alarm state change); a reservation would take capacity from the account's "
        "pool and throttle legitimate bursts, and a new account (quota 10, of which Lambda keeps 100 "
        "unreserved) cannot give one. The public alert action endpoint, which no caller bounds, refuses "
        "unsigned requests before writing anything and is alarmed on its concurrency, throttles and "
        "errors; a reservation for it is opt-in (actionEndpointReservedConcurrency), and where it is "
        "set this is not written on it.",
        "CKV_AWS_173": "The environment holds only resource names, ARNs and log settings, no secret (the "
        "Slack webhook URL is read from Secrets Manager at run time); Lambda encrypts it at rest "
        "with an AWS-owned key.",
        "WS1004": "Each function logs to its own log group with a one-month retention through "
        "LoggingConfig (not the /aws/lambda/<name> group this rule looks for); "
        "test_security_infrastructure pins the retention.",
    },
    "AWS::Logs::LogGroup": {
        "CKV_AWS_158": "CloudWatch Logs encrypts every log group at rest. The machines log error events "
        "only, without execution data: execution ARN, event type, error name and cause, never an input, "
        "an output or a task token. The functions log ids, counts and statuses, never a link, a token or a "
        "person's account, kept a month and readable only by principals IAM lets read the group; a "
        "customer-managed key would not narrow who can read them and would cost more than the logs.",
    },
    "AWS::DynamoDB::Table": {
        "CKV_AWS_119": "Encrypted with the AWS-managed key (SSEEnabled, alias/aws/dynamodb, use logged in "
        "CloudTrail); the tables hold alert configs and short-lived idempotency and Map chunk journal "
        "records, with no cross-account access that a customer-managed key policy would have to control.",
    },
    "AWS::S3::Bucket": {
        "CKV_AWS_18": "The buckets hold short-lived per-execution records written by this app's functions "
        "(the cdk-nag AwsSolutions-S1 acknowledgements say the same); CloudTrail data events are the "
        "audit trail where one is required, without a log bucket per stack.",
        "CKV_AWS_21": "Every object is a per-execution record that expires in days; a job's status is "
        "guarded by conditional writes (If-None-Match), so versions would only keep stale copies.",
    },
    "AWS::Lambda::Url": {
        "CKV_AWS_258": "The alert action endpoint is opened by people from a Slack message, who hold no AWS "
        "credentials, so IAM auth cannot apply; the handler authenticates every request instead (an "
        "expiring HMAC-SHA256 token bound to alert, user and action, or Slack's v0 request signature), "
        "GET changes nothing, and a flood raises an alarm on the status topic (reserved concurrency "
        "also bounds it where the account's quota allows one, actionEndpointReservedConcurrency).",
    },
    "AWS::SecretsManager::Secret": {
        "CKV_AWS_149": "The action link signing key is encrypted with the AWS-managed key "
        "(aws/secretsmanager); only the two functions granted GetSecretValue on this one secret read it "
        "and there is no cross-account access a customer-managed key policy would have to control.",
    },
    "AWS::SQS::Queue": {
        "CKV_AWS_27": "Encrypted with SQS-managed server-side encryption (SqsManagedSseEnabled), which "
        "checkov does not recognise (it looks for KmsMasterKeyId only); a KMS key would need a key "
        "policy for events.amazonaws.com naming the rule, which names the queue: a dependency cycle.",
        "ES6000": "These queues are themselves where failed deliveries end up (dead-letter queues and "
        "an on-failure destination); a person reads them, so there is no further queue to redrive to.",
    },
}


def acknowledge_lint(resource: CfnResource, findings: dict[str, str]) -> None:
    """Acknowledge cfn-lint(-serverless) ``finding id -> reason`` on one resource that ACKNOWLEDGED cannot cover."""
    resource.add_metadata("cfn-lint", {"config": {"ignore_checks": list(findings)}, "reasons": findings})


def acknowledge_rule_permission(rule: events.Rule, target: str) -> None:
    """Acknowledge cfn-lint-serverless ES1007 on the permission that lets ``rule`` invoke its function
    (``target``: what the reason calls it), which has an asynchronous invoke configuration."""
    [permission] = [c for c in rule.node.find_all() if isinstance(c, lambda_.CfnPermission)]
    acknowledge_lint(
        permission,
        {
            "ES1007": f"The {target} has an EventInvokeConfig with an on-failure destination (see "
            "test_alert_notification_infrastructure); the rule compares FunctionName literally and "
            "this permission names the function by ARN, the EventInvokeConfig by Ref.",
        },
    )


@jsii.implements(IAspect)
class ScannerAcknowledgements:
    """Writes ``ACKNOWLEDGED`` into the metadata of every matching resource of the app."""

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, CfnResource) or node.cfn_resource_type not in ACKNOWLEDGED:
            return
        findings = dict(ACKNOWLEDGED[node.cfn_resource_type])
        if getattr(node, "reserved_concurrent_executions", None) is not None:
            del findings["CKV_AWS_115"]  # this function has a reservation: the finding is fixed, not accepted
        checkov = [{"id": id_, "comment": why} for id_, why in findings.items() if id_.startswith("CKV_")]
        node.add_metadata("checkov", {"skip": checkov})
        serverless = {id_: why for id_, why in findings.items() if not id_.startswith("CKV_")}
        if serverless:
            acknowledge_lint(node, serverless)
