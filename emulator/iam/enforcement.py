"""Who is calling, and whether their role's policies allow it: the check every request passes.

A Lambda handler and a state machine's service integrations call with the temporary credentials of
their role's session (``Iam.credentials``), as Lambda and Step Functions give them; a request
signed with such credentials is refused unless the role's policies allow each of its actions on its
resources. Any other credentials (those ``serve`` prints, the cdk CLI's) are the account's
administrator's, and are not checked: a person's own are not either on an account they own.
"""

from __future__ import annotations

import json
import secrets
import string
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from werkzeug.exceptions import HTTPException

from emulator.iam import requests as iam_requests
from emulator.iam.policy import ALLOW, DENY, decide
from emulator.iam.requests import Check, Request

_SESSION_CHARS = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Session:
    role_arn: str
    session_name: str

    @property
    def account(self) -> str:
        return self.role_arn.split(":")[4]

    @property
    def role_name(self) -> str:
        return self.role_arn.rpartition("/")[2]

    @property
    def arn(self) -> str:
        return f"arn:aws:sts::{self.account}:assumed-role/{self.role_name}/{self.session_name}"


@dataclass(frozen=True)
class Denial:
    """A refused request, worded as AWS words it (IAM User Guide, "Troubleshooting access denied
    error messages"): which policy type refused, and the service's own error shape."""

    session: Session
    check: Check
    explicit: str | None  # the policy type with an explicit deny, or None: nothing allows it

    @property
    def message(self) -> str:
        head = (f"User: {self.session.arn} is not authorized to perform: {self.check.action} "
                f"on resource: {self.check.resource or '*'}")
        if self.explicit:
            return f"{head} with an explicit deny in {self.explicit}"
        return f"{head} because no identity-based policy allows the {self.check.action} action"


class Iam:
    """The role sessions the emulator issued, and the decisions on their requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}  # by access key id
        self._credentials: dict[tuple[str, str | None], dict[str, str]] = {}

    def credentials(self, role_arn: str, session_name: str | None = None) -> dict[str, str]:
        """A session of ``role_arn`` as AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN.

        Lambda names the session after the function; Step Functions' sessions (``session_name``
        None) get a random name, one per role. Each session's keys last the emulator's life. moto's
        STS issues them, so GetCallerIdentity answers with the session, as on AWS.
        """
        from moto.sts.models import sts_backends

        with self._lock:
            if (role_arn, session_name) not in self._credentials:
                session = Session(role_arn, session_name or "".join(secrets.choice(_SESSION_CHARS) for _ in range(32)))
                assumed = sts_backends[session.account]["aws"].assume_role(
                    region_name="us-east-1", role_session_name=session.session_name, role_arn=role_arn,
                    policy="", duration=43200, external_id="")
                self._sessions[assumed.access_key_id] = session
                self._credentials[role_arn, session_name] = {
                    "AWS_ACCESS_KEY_ID": assumed.access_key_id,
                    "AWS_SECRET_ACCESS_KEY": assumed.secret_access_key,
                    "AWS_SESSION_TOKEN": assumed.session_token,
                }
            return self._credentials[role_arn, session_name]

    def session(self, access_key_id: str | None) -> Session | None:
        return self._sessions.get(access_key_id or "")

    def deny(self, session: Session, checks: list[Check], resource_policy: Callable[[Check], str | None] | None = None) -> Denial | None:
        """The first of ``checks`` the session's role may not make (None: all allowed).

        Same account: an explicit Deny in the role's policies or the resource's policy refuses; an
        Allow in either grants (IAM User Guide, "Policy evaluation logic").
        """
        documents = role_policy_documents(session.role_arn)
        for check in checks:
            if check.action in iam_requests.ALWAYS_ALLOWED:
                continue
            identity = decide(documents, check.action, check.resource, check.context)
            if identity == DENY:
                return Denial(session, check, "an identity-based policy")
            resource_document = resource_policy(check) if resource_policy is not None else None
            resource = decide([resource_document], check.action, check.resource, {**_REQUEST_CONTEXT, **check.context},
                              ("AWS", session.arn)) if resource_document else None
            if resource == DENY:
                return Denial(session, check, "a resource-based policy")
            if identity != ALLOW and resource != ALLOW:
                return Denial(session, check, None)
        return None


# Keys every request to AWS carries as the SDKs make it: over TLS (the emulator's endpoint is plain
# HTTP only because it is this machine's loopback).
_REQUEST_CONTEXT = {"aws:SecureTransport": "true"}


def role_policy_documents(role_arn: str) -> list[str]:
    """The role's inline and attached policies as JSON text (none if the role no longer exists)."""
    from moto.iam.exceptions import NotFoundException
    from moto.iam.models import iam_backends

    account = role_arn.split(":")[4]
    try:
        role = iam_backends[account]["aws"].get_role(role_arn.rpartition("/")[2])
    except NotFoundException:
        return []
    documents = [_text(document) for document in role.policies.values()]
    for managed in role.managed_policies.values():
        documents += [_text(v.document) for v in managed.versions if v.is_default]
    return documents


def _text(document: Any) -> str:
    return document if isinstance(document, str) else json.dumps(document)


def trusts(role_arn: str, service: str, source_arn: str) -> bool:
    """Whether ``role_arn`` exists and its trust policy lets ``service`` assume it for ``source_arn``."""
    from moto.iam.exceptions import NotFoundException
    from moto.iam.models import iam_backends

    account = role_arn.split(":")[4] if role_arn.count(":") >= 5 else ""
    try:
        role = iam_backends[account]["aws"].get_role(role_arn.rpartition("/")[2])
    except (NotFoundException, KeyError):
        return False
    if role.arn != role_arn:
        return False
    context = {"aws:SourceArn": source_arn, "aws:SourceAccount": source_arn.split(":")[4]}
    return decide([_text(role.assume_role_policy_document)], "sts:AssumeRole", None, context, ("Service", service)) == ALLOW


# -- the denial as each service answers it ---------------------------------------------------------
def denial_response(denial: Denial, service: str) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of the refusal, in the service's protocol and error code."""
    message = denial.message
    request_id = str(uuid.uuid4())
    if service == "s3":
        body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>"
                f"<Message>{_xml(message)}</Message><RequestId>{request_id}</RequestId></Error>")
        return 403, {"Content-Type": "application/xml", "x-amz-request-id": request_id}, body.encode()
    if service in ("sns", "cloudwatch", "sts", "iam", "cloudformation"):  # the query protocol's XML
        code = "AuthorizationError" if service == "sns" else "AccessDenied"
        body = (f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{_xml(message)}</Message>"
                f"</Error><RequestId>{request_id}</RequestId></ErrorResponse>")
        return 403, {"Content-Type": "text/xml", "x-amzn-RequestId": request_id}, body.encode()
    headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-ErrorType": "AccessDeniedException",
               "x-amzn-RequestId": request_id}
    if service == "sqs":  # JSON, compatible with its query-protocol error codes
        headers["x-amzn-query-error"] = "AccessDenied;Sender"
    status = 403 if service in ("lambda", "sqs") else 400
    return status, headers, json.dumps({"__type": "AccessDeniedException", "message": message}).encode()


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# -- the hooks into moto ---------------------------------------------------------------------------
class _Refused(HTTPException):
    """Raised inside moto to stop a refused request (moto answers an HTTPException); ``wsgi`` then
    replaces moto's answer with the service's own."""

    code = 403


_refusal = threading.local()


def _access_key(headers: Any, querystring: dict) -> str | None:
    authorization = headers.get("Authorization") or ""
    if "Credential=" in authorization:
        return authorization.split("Credential=", 1)[1].split("/", 1)[0]
    presigned = querystring.get("X-Amz-Credential")
    return presigned[0].split("/", 1)[0] if presigned else None


def _signing_name(headers: Any, querystring: dict) -> str:
    authorization = headers.get("Authorization") or ""
    scope = authorization.split("Credential=", 1)[1].split(",", 1)[0] if "Credential=" in authorization else (
        (querystring.get("X-Amz-Credential") or [""])[0])
    parts = scope.split("/")
    return parts[3] if len(parts) > 3 else ""


def install_enforcement(current: Callable[[], Iam | None]) -> None:
    """Every moto request whose caller is a role session the emulator issued is checked.

    moto calls ``_authenticate_and_authorize_normal_action`` before every operation of every
    service but S3, and ``_authenticate_and_authorize_s3_action`` in S3's; moto's own check
    (``INITIAL_NO_AUTH_ACTION_COUNT``) compares actions only, against resource ``*``.
    """
    from moto.core.authorization import ActionAuthenticatorMixin

    def caller(response: Any) -> tuple[Iam, Session] | None:
        iam = current()
        if iam is None:
            return None
        session = iam.session(_access_key(response.headers, response.querystring))
        return (iam, session) if session is not None else None

    def refuse(denial: Denial | None, service: str) -> None:
        if denial is not None:
            _refusal.response = denial_response(denial, service)
            raise _Refused(denial.message)

    def normal_action(self: Any, resource: str = "*") -> None:
        found = caller(self)
        if found is None:
            return
        iam, session = found
        service = iam_requests.iam_prefix(_signing_name(self.headers, self.querystring))
        # Lambda's REST operations carry their parameters in the path and query; the body is the payload.
        json_protocol = "json" in (self.headers.get("Content-Type") or "") and service != "lambda"
        request = Request(
            service=service, operation=self._get_action(), region=self.region, account=self.current_account,
            params=iam_requests.params_of(self.body, self.querystring, json_protocol), path=self.path,
        )
        refuse(iam.deny(session, iam_requests.checks(request)), service)

    def s3_action(self: Any, bucket_name: str | None = None, key_name: str | None = None) -> None:
        found = caller(self)
        if found is None:
            return
        iam, session = found
        checks = iam_requests.s3_checks(self.data.get("Action", ""), bucket_name, key_name,
                                        self.headers.get("x-amz-copy-source"))
        refuse(iam.deny(session, checks, lambda check: _bucket_policy(self, bucket_name)), "s3")

    ActionAuthenticatorMixin._authenticate_and_authorize_normal_action = normal_action
    ActionAuthenticatorMixin._authenticate_and_authorize_s3_action = s3_action


def refusal(iam: Iam | None, environ: dict, service: str, operation: str, params: dict, region: str,
            account: str) -> tuple[int, dict[str, str], bytes] | None:
    """The access-denied answer to a request to a service the emulator serves outside moto (End User
    Messaging), if its caller is a role session whose policies do not allow it; None: let it through."""
    if iam is None:
        return None
    session = iam.session(_access_key({"Authorization": environ.get("HTTP_AUTHORIZATION", "")}, {}))
    if session is None:
        return None
    request = Request(service=service, operation=operation, region=region, account=account, params=params, path="/")
    denial = iam.deny(session, iam_requests.checks(request))
    return denial_response(denial, service) if denial is not None else None


def _bucket_policy(response: Any, bucket_name: str | None) -> str | None:
    if not bucket_name:
        return None
    try:
        policy = response.backend.get_bucket(bucket_name).policy
    except Exception:  # noqa: BLE001 - no such bucket: S3 answers NoSuchBucket after the check
        return None
    return policy.decode() if isinstance(policy, bytes) else policy


def wsgi(app: Callable[..., Any]) -> Callable[..., Any]:
    """``app`` answering a request the checks refused with the service's own access-denied error."""

    def refusing(environ: dict, start_response: Callable[..., Any]) -> Any:
        _refusal.response = None
        captured: list[tuple] = []
        body = app(environ, lambda status, headers, exc_info=None: captured.append((status, headers, exc_info)))
        refused = _refusal.response
        if refused is None:
            start_response(*captured[0])
            return body
        if hasattr(body, "close"):
            body.close()
        status, headers, payload = refused
        start_response(f"{status} {'Forbidden' if status == 403 else 'Bad Request'}",
                       [*headers.items(), ("Content-Length", str(len(payload)))])
        return [payload]

    return refusing


def install_trust_checks(current: Callable[[], Iam | None]) -> None:
    """A state machine whose role does not exist or does not trust Step Functions is refused at
    CreateStateMachine (and UpdateStateMachine), with AWS's AccessDeniedException wording; a function
    whose role Lambda may not assume, at CreateFunction."""
    from moto.core.exceptions import AWSError
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    class StatesAccessDenied(AWSError):
        TYPE = "AccessDeniedException"
        STATUS = 400

    def check(role_arn: str, machine_arn: str) -> None:
        if current() is not None and not trusts(role_arn, "states.amazonaws.com", machine_arn):
            raise StatesAccessDenied(
                "Neither the global service principal states.amazonaws.com, nor the regional one is authorized "
                "to assume the provided role."
            )

    original_create = StepFunctionsParserBackend.create_state_machine
    original_update = StepFunctionsParserBackend.update_state_machine

    def create_state_machine(self: Any, name: str, definition: str, roleArn: str, *args: Any, **kwargs: Any) -> Any:
        check(roleArn, f"arn:aws:states:{self.region_name}:{self.account_id}:stateMachine:{name}")
        return original_create(self, name, definition, roleArn, *args, **kwargs)

    def update_state_machine(self: Any, arn: str, *args: Any, **kwargs: Any) -> Any:
        role_arn = kwargs.get("role_arn") or (args[1] if len(args) > 1 else None)
        if role_arn:
            check(role_arn, arn)
        return original_update(self, arn, *args, **kwargs)

    StepFunctionsParserBackend.create_state_machine = create_state_machine
    StepFunctionsParserBackend.update_state_machine = update_state_machine

    # Lambda refuses a function whose role it may not assume, in its own words.
    from moto.awslambda.exceptions import InvalidParameterValueException
    from moto.awslambda.models import LambdaBackend

    original_create_function = LambdaBackend.create_function

    def create_function(self: Any, spec: dict[str, Any]) -> Any:
        function_arn = f"arn:aws:lambda:{self.region_name}:{self.account_id}:function:{spec.get('FunctionName')}"
        if current() is not None and not trusts(spec.get("Role", ""), "lambda.amazonaws.com", function_arn):
            raise InvalidParameterValueException("The role defined for the function cannot be assumed by Lambda.")
        return original_create_function(self, spec)

    LambdaBackend.create_function = create_function
