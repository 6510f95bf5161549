"""Whether a service may deliver to a target: the resource-based policies AWS checks first.

EventBridge publishes to a topic, sends to a queue or invokes a function only if the target's
policy (topic policy, queue policy, the function's permissions) allows the service principal,
usually for one rule (``aws:SourceArn``); it starts a state machine as the target's role, which
must allow ``states:StartExecution`` on it. A refused delivery goes to the target's dead-letter
queue with ERROR_CODE ``NO_PERMISSIONS`` and is not retried (EventBridge User Guide, "Using
dead-letter queues to process undelivered events").

(Function URLs check their function's policy in emulator/awslambda/function_urls.py.)
"""

from __future__ import annotations

import json
from typing import Any

from emulator.iam.enforcement import role_policy_documents
from emulator.iam.policy import ALLOW, decide

_ACTIONS = {"sns": "sns:Publish", "sqs": "sqs:SendMessage", "lambda": "lambda:InvokeFunction"}


def refused(target_arn: str, principal: str, source_arn: str, role_arn: str | None = None) -> str | None:
    """Why ``principal`` (a service, ``events.amazonaws.com``) may not deliver to ``target_arn`` on
    behalf of ``source_arn`` (its rule); None when it may."""
    service, _, account = target_arn.split(":")[2:5]
    if service == "states":
        if role_arn and decide(role_policy_documents(role_arn), "states:StartExecution", target_arn) == ALLOW:
            return None
        return f"{role_arn or 'The target (no role)'} is not authorized to perform: states:StartExecution on resource: {target_arn}"
    action = _ACTIONS.get(service)
    if action is None:
        return None
    document = resource_policy(target_arn)
    context = {"aws:SourceArn": source_arn, "aws:SourceAccount": source_arn.split(":")[4] or account,
               "aws:SecureTransport": "true"}
    if document and decide([document], action, target_arn, context, ("Service", principal)) == ALLOW:
        return None
    return f"{principal} is not authorized to perform: {action} on resource: {target_arn}"


def publish_refused(topic_arn: str, principal: str, source_arn: str, role_arn: str | None) -> str | None:
    """Why ``principal`` may not publish to ``topic_arn`` for ``source_arn``: as ``role_arn`` if it is given
    (the role must trust the service and allow ``sns:Publish`` on the topic), else by the topic's policy.
    End User Messaging publishes replies so ("Topic policies for Amazon SNS topics": the topic policy is
    needed "if they are not provided in the TwoWayChannelRole parameter"). None when it may."""
    if not role_arn:
        return refused(topic_arn, principal, source_arn)
    from emulator.iam.enforcement import trusts

    if not trusts(role_arn, principal, source_arn):
        return f"{principal} is not authorized to perform: sts:AssumeRole on resource: {role_arn}"
    if decide(role_policy_documents(role_arn), "sns:Publish", topic_arn) != ALLOW:
        return f"{role_arn} is not authorized to perform: sns:Publish on resource: {topic_arn}"
    return None


def resource_policy(arn: str) -> str | None:
    """The policy of the topic, queue or function ``arn`` as JSON text (None: it has none)."""
    service, region, account = arn.split(":")[2:5]
    if service == "sns":
        from moto.sns.models import sns_backends

        topic = sns_backends[account][region].topics.get(arn)
        return topic.policy if topic is not None else None
    if service == "sqs":
        from moto.sqs.models import sqs_backends

        queue = sqs_backends[account][region].queues.get(arn.split(":")[5])
        return queue.policy if queue is not None else None
    if service == "lambda":
        from moto.awslambda.exceptions import UnknownFunctionException
        from moto.awslambda.models import lambda_backends

        try:
            return _function_policy(lambda_backends[account][region].get_function(arn))
        except UnknownFunctionException:
            return None
    return None


def _function_policy(fn: Any) -> str | None:
    statements = [_as_lambda_states_it(statement) for statement in fn.policy.statements]
    return json.dumps({"Version": "2012-10-17", "Statement": statements}) if statements else None


def _as_lambda_states_it(statement: dict) -> dict:
    """A permission as GetPolicy shows it on AWS: moto keeps AddPermission's FunctionUrlAuthType as a
    field of its own where Lambda writes a condition, and qualifies the resource with $LATEST."""
    statement = dict(statement)
    condition = {operator: dict(keys) for operator, keys in (statement.get("Condition") or {}).items()}
    if "FunctionUrlAuthType" in statement:
        condition.setdefault("StringEquals", {})["lambda:FunctionUrlAuthType"] = statement.pop("FunctionUrlAuthType")
    statement["Condition"] = condition
    resources = statement.get("Resource")
    statement["Resource"] = [r.removesuffix(":$LATEST") for r in (resources if isinstance(resources, list) else [resources])]
    return statement
