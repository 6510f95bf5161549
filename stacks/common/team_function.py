"""A team's own Lambda function handed to a pattern construct: what the construct can do to it, and the
synthesis errors (each naming the construct's prop) for one it cannot use."""

from __future__ import annotations

import json

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

from stacks.common.definitions import definition_path


class InvalidProp(ValueError):
    """A construct's props cannot work together; the message starts with the prop it is about."""


def granted_role(function: lambda_.IFunction, prop: str, needs: str) -> iam.IRole:
    """The role the construct adds ``needs`` to. An imported function without one would get nothing
    (CDK drops grants to an unknown principal with only a warning), so that is refused."""
    if function.role is None:
        raise InvalidProp(
            f"{prop}: {function.node.path} has no execution role the construct can grant {needs} to; "
            "import it with aws_lambda.Function.from_function_attributes(..., role=...) or pass the Function itself"
        )
    return function.role


def environment_function(function: lambda_.IFunction, prop: str, variable: str) -> lambda_.Function:
    """A function of this app the construct can set ``variable`` on; an imported one cannot be changed."""
    if not isinstance(function, lambda_.Function):
        raise InvalidProp(
            f"{prop}: {function.node.path} is not an aws_lambda.Function of this app (an imported function, an "
            f"alias or a version); the construct must set its {variable} environment variable, so pass the Function"
        )
    return function


def check_timeout_within(function: lambda_.IFunction, prop: str, limit_seconds: int, why: str) -> None:
    """Refuse a function whose own timeout is not below ``limit_seconds`` (an imported function's timeout
    is unknown here; its owner keeps it below)."""
    timeout = getattr(function, "timeout", None)
    if timeout is not None and timeout.to_seconds() >= limit_seconds:
        raise InvalidProp(
            f"{prop}: {function.node.path} has a {timeout.to_seconds():g} s timeout; it must be under {limit_seconds} s ({why})"
        )


def task_timeout_seconds(machine: str, state: str) -> int:
    """The ``TimeoutSeconds`` of the task ``state`` in statemachines/<machine>.asl.json, at any depth."""

    def find(states: dict) -> int | None:
        for name, body in states.items():
            if name == state:
                return body["TimeoutSeconds"]
            processor = body.get("ItemProcessor") or {}
            found = find(processor.get("States", {}))
            if found is not None:
                return found
        return None

    found = find(json.loads(definition_path(machine).read_text(encoding="utf-8"))["States"])
    if found is None:
        raise LookupError(f"{machine}.asl.json has no state {state!r} with a TimeoutSeconds")
    return found
