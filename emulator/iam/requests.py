"""What a request asks IAM for: its actions (``service:Operation``) and the resource ARN of each.

One resolver per service the app and its tests call, reading the operation's parameters as AWS's
Service Authorization Reference resolves them (a DynamoDB TableName to its table ARN, a Query on an
index to ``table/T/index/I``, a SecretId to the secret's ARN with its random suffix, a QueueUrl to
the queue's ARN...). An operation with no resolver is checked on its action alone
(``policy.ANY_RESOURCE``): a policy must allow that action, on whatever resource.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import unquote, urlparse

from emulator.iam.policy import ANY_RESOURCE


@dataclass(frozen=True)
class Check:
    action: str
    resource: str | None
    context: dict[str, str] = field(default_factory=dict)


@dataclass
class Request:
    """The parts of a request the resolvers read."""

    service: str  # the IAM service prefix (dynamodb, states, s3...)
    operation: str
    region: str
    account: str
    params: dict
    path: str

    def arn(self, service: str, resource: str, region: str | None = None, account: str | None = None) -> str:
        region = self.region if region is None else region
        account = self.account if account is None else account
        return f"arn:aws:{service}:{region}:{account}:{resource}"


# Where the SigV4 signing name differs from the IAM service prefix.
_PREFIXES = {"monitoring": "cloudwatch"}
# Operations whose IAM action has another name (Service Authorization Reference).
_ACTION_NAMES = {("lambda", "Invoke"): "InvokeFunction", ("lambda", "InvokeWithResponseStream"): "InvokeFunction"}
# Authorized for every caller (AWS: no permission is needed to call GetCallerIdentity).
ALWAYS_ALLOWED = {"sts:GetCallerIdentity"}


def iam_prefix(signing_name: str) -> str:
    return _PREFIXES.get(signing_name, signing_name)


def checks(request: Request) -> list[Check]:
    resolver = _RESOLVERS.get(request.service)
    action = f"{request.service}:{_ACTION_NAMES.get((request.service, request.operation), request.operation)}"
    found = resolver(request, action) if resolver is not None else None
    return found if found is not None else [Check(action, ANY_RESOURCE)]


# -- per service ----------------------------------------------------------------------------------
def _dynamodb(request: Request, action: str) -> list[Check] | None:
    p, op = request.params, request.operation

    def table(name: str) -> str:
        return name if name.startswith("arn:") else request.arn("dynamodb", f"table/{name}")

    if op in ("BatchGetItem", "BatchWriteItem"):
        return [Check(action, table(name)) for name in p.get("RequestItems", {})]
    if op in ("TransactWriteItems", "TransactGetItems"):
        per_item = {"ConditionCheck": "ConditionCheckItem", "Put": "PutItem", "Delete": "DeleteItem",
                    "Update": "UpdateItem", "Get": "GetItem"}
        return [Check(f"dynamodb:{per_item[kind]}", table(body["TableName"]))
                for item in p.get("TransactItems", []) for kind, body in item.items()]
    if op == "DescribeExport":
        return [Check(action, p["ExportArn"])] if "ExportArn" in p else None
    name = p.get("TableName") or p.get("TableArn") or p.get("ResourceArn")
    if not name:
        return None
    resource = table(name)
    if op in ("Query", "Scan") and p.get("IndexName"):
        resource += f"/index/{p['IndexName']}"
    return [Check(action, resource)]


def _lambda(request: Request, action: str) -> list[Check] | None:
    match = re.match(r"^/[0-9-]+/functions/([^/]+)", request.path)
    if not match:
        return None
    name = unquote(match.group(1))
    qualifier = request.params.get("Qualifier")
    if name.startswith("arn:"):
        arn = name
    else:
        parts = name.split(":")
        if len(parts) >= 3 and parts[1] == "function":  # 123456789012:function:name[:qualifier]
            arn = request.arn("lambda", ":".join(parts[1:]), account=parts[0])
        else:  # name[:qualifier]
            arn = request.arn("lambda", "function:" + name)
    if qualifier and arn.count(":") == 6:
        arn += f":{qualifier}"
    return [Check(action, arn)]


def _secretsmanager(request: Request, action: str) -> list[Check] | None:
    secret_id = request.params.get("SecretId")
    if not secret_id:
        return None
    from moto.secretsmanager.models import secretsmanager_backends

    secret = secretsmanager_backends[request.account][request.region].secrets.get(secret_id)
    if secret is not None:
        return [Check(action, secret.arn)]
    # No such secret: AWS authorizes the name as given (a policy on name-?????? does not match it).
    return [Check(action, secret_id if secret_id.startswith("arn:") else request.arn("secretsmanager", f"secret:{secret_id}"))]


def _states(request: Request, action: str) -> list[Check] | None:
    p = request.params
    for key in ("executionArn", "stateMachineArn", "mapRunArn", "activityArn"):
        if p.get(key):
            return [Check(action, p[key].partition("#")[0])]  # `arn#test case` selects a mocked test case
    if p.get("taskToken"):
        machine = _machine_holding_token(request, p["taskToken"])
        return [Check(action, machine)] if machine else None
    return None


def _machine_holding_token(request: Request, token: str) -> str | None:
    """The state machine whose running execution issued ``token``: what Send Task* is authorized on."""
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    for machine in list(stepfunctions_parser_backends[request.account][request.region].state_machines):
        for execution in list(machine.executions):
            env = getattr(getattr(execution, "exec_worker", None), "env", None)
            if env is not None and env.callback_pool_manager.get(token) is not None:
                return machine.arn
    return None


def _sqs(request: Request, action: str) -> list[Check] | None:
    p = request.params
    if p.get("QueueUrl"):
        parts = urlparse(p["QueueUrl"]).path.strip("/").split("/")
        if len(parts) == 2:
            return [Check(action, request.arn("sqs", parts[1], account=parts[0]))]
        return None
    if p.get("QueueName"):
        return [Check(action, request.arn("sqs", p["QueueName"], account=p.get("QueueOwnerAWSAccountId")))]
    return None


def _sns(request: Request, action: str) -> list[Check] | None:
    arn = request.params.get("TopicArn") or request.params.get("TargetArn")
    return [Check(action, arn)] if arn else None


def _events(request: Request, action: str) -> list[Check] | None:
    p = request.params

    def bus(name: str | None) -> str:
        name = name or "default"
        return name if name.startswith("arn:") else request.arn("events", f"event-bus/{name}")

    if request.operation == "PutEvents":
        return [Check(action, bus(entry.get("EventBusName"))) for entry in p.get("Entries", [])]
    rule = p.get("Rule") or (p.get("Name") if request.operation in ("PutRule", "DescribeRule", "DeleteRule",
                                                                     "EnableRule", "DisableRule") else None)
    if rule:
        bus_name = p.get("EventBusName") or "default"
        return [Check(action, request.arn("events", f"rule/{rule}" if bus_name == "default" else f"rule/{bus_name}/{rule}"))]
    return None


def _logs(request: Request, action: str) -> list[Check] | None:
    group = request.params.get("logGroupName")
    if not group:
        return None
    stream = request.params.get("logStreamName")
    suffix = f":log-stream:{stream}" if stream else ""
    return [Check(action, request.arn("logs", f"log-group:{group}{suffix}"))]


def _resource_star(request: Request, action: str) -> list[Check]:
    """Actions AWS authorizes on no resource type: only a statement whose Resource matches ``*``."""
    return [Check(action, "*")]


def _cloudwatch(request: Request, action: str) -> list[Check] | None:
    names = [v for k, v in request.params.items() if re.fullmatch(r"AlarmNames\.member\.\d+|AlarmName", k)]
    if request.operation in ("PutMetricAlarm", "DeleteAlarms", "SetAlarmState", "DescribeAlarmHistory") and names:
        return [Check(action, request.arn("cloudwatch", f"alarm:{name}")) for name in names]
    return _resource_star(request, action)


def _sms_voice(request: Request, action: str) -> list[Check] | None:
    """A text or call is authorized on the phone number it is sent from (the origination identity, by
    ARN, id or number; a resource policy on a phone number grants ``sms-voice:SendTextMessage`` on its ARN)."""
    if request.operation not in ("SendTextMessage", "SendVoiceMessage"):
        return None
    from emulator.sms import PHONE_NUMBER, PHONE_NUMBER_ID

    identity = request.params.get("OriginationIdentity") or PHONE_NUMBER_ID
    if identity.startswith("arn:"):
        return [Check(action, identity)]
    return [Check(action, request.arn("sms-voice", f"phone-number/{PHONE_NUMBER_ID if identity == PHONE_NUMBER else identity}"))]


_RESOLVERS: dict[str, Callable[[Request, str], list[Check] | None]] = {
    "dynamodb": _dynamodb,
    "lambda": _lambda,
    "secretsmanager": _secretsmanager,
    "states": _states,
    "sqs": _sqs,
    "sns": _sns,
    "events": _events,
    "logs": _logs,
    "cloudwatch": _cloudwatch,
    "xray": _resource_star,
    "sms-voice": _sms_voice,
}


def s3_checks(action: str, bucket: str | None, key: str | None, copy_source: str | None) -> list[Check]:
    """S3's: the bucket ARN for a bucket operation, ``bucket/key`` for an object's; a copy also reads its source."""
    if not bucket:
        return [Check(f"s3:{action}", "*")]  # ListAllMyBuckets
    checks_ = [Check(f"s3:{action}", f"arn:aws:s3:::{bucket}/{key}" if key else f"arn:aws:s3:::{bucket}")]
    if copy_source:
        checks_.append(Check("s3:GetObject", f"arn:aws:s3:::{unquote(copy_source).lstrip('/').partition('?')[0]}"))
    return checks_


def params_of(body: Any, querystring: dict[str, list[str]], json_protocol: bool) -> dict:
    """The operation's parameters: the JSON body, or the query string and form (query protocol)."""
    if json_protocol:
        try:
            parsed = body if isinstance(body, dict) else json.loads(body or "{}")  # moto's DynamoDB parses it first
        except ValueError:
            parsed = {}
        params = parsed if isinstance(parsed, dict) else {}
        return {**{k: v[0] for k, v in querystring.items() if v}, **params}
    return {k: v[0] for k, v in querystring.items() if v}
