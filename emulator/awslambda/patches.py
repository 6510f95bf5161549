"""Lambda: handlers really run, function URLs answer, InvocationType is honoured, task failures carry AWS's error names."""

from __future__ import annotations

import json
from typing import Any, Callable

from emulator.awslambda.concurrency import refusal, reservation


class _ManagedLayer:
    """An AWS-managed layer (Powertools): known by ARN, its packages in the Lambda sandbox."""

    def __init__(self, arn: str) -> None:
        self.arn = arn
        self.code_size = 0
        self.code_bytes = b""


def _header(headers: Any, name: str) -> str | None:
    if not headers:
        return None
    value = headers.get(name) if hasattr(headers, "get") else None
    if value is None:
        for key, candidate in dict(headers).items():
            if key.lower() == name:
                return candidate
    return value


def install_lambda_runtime(runtime: Any) -> None:
    from moto.awslambda.models import LambdaBackend, LambdaFunction
    from moto.core.exceptions import JsonRESTError

    class TooManyRequests(JsonRESTError):
        """Invoke beyond the function's or the account's concurrency: HTTP 429, as Lambda words it."""

        code = 429

        def __init__(self, reason: str) -> None:
            super().__init__("TooManyRequestsException", "Rate Exceeded.")
            self.description = json.dumps({"Type": "User", "message": "Rate Exceeded.", "Reason": reason})

    original_layer_lookup = LambdaBackend.layers_versions_by_arn

    def layers_versions_by_arn(self: Any, arn: str) -> Any:
        found = original_layer_lookup(self, arn)
        if found is None and ":017000801446:layer:AWSLambdaPowertoolsPython" in arn:
            return _ManagedLayer(arn)
        return found

    LambdaBackend.layers_versions_by_arn = layers_versions_by_arn

    def invoke(self: Any, body: Any, request_headers: Any, response_headers: dict) -> bytes:
        invocation_type = _header(request_headers, "x-amz-invocation-type") or "RequestResponse"
        if invocation_type == "DryRun":
            return b""
        payload = body.encode() if isinstance(body, str) else (body or b"{}")
        result = runtime.invoke(self, payload, asynchronous=invocation_type == "Event",
                                trace_id=_header(request_headers, "x-amzn-trace-id"))
        if result is None:
            return b""
        if result.throttled is not None:
            raise TooManyRequests(result.throttled)
        if result.errored:
            response_headers["x-amz-function-error"] = "Unhandled"
        return result.payload

    LambdaFunction.invoke = invoke


def install_reserved_concurrency_minimum(quota: Callable[[], int]) -> None:
    """PutFunctionConcurrency, and a function created with ReservedConcurrentExecutions (as
    CloudFormation creates one), are refused with InvalidParameterValueException when the
    reservations would leave less than the minimum unreserved of the account's ``quota()``
    (concurrency.py); moto checked only when MOTO_LAMBDA_CONCURRENCY_QUOTA was set, and never at create.
    https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html
    """
    from moto.awslambda.exceptions import InvalidParameterValueException
    from moto.awslambda.models import LambdaBackend

    def check(backend: Any, function_name: str, requested: Any) -> None:
        others = [reservation(fn) for fn in backend.list_functions() if fn.function_name != function_name]
        refused = refusal(quota(), [r for r in others if r is not None], int(requested))
        if refused is not None:
            raise InvalidParameterValueException(refused)

    original_put = LambdaBackend.put_function_concurrency

    def put_function_concurrency(self: Any, function_name: str, reserved_concurrency: str) -> str:
        check(self, self.get_function(function_name).function_name, reserved_concurrency)
        return original_put(self, function_name, reserved_concurrency)

    original_create = LambdaBackend.create_function

    def create_function(self: Any, spec: dict[str, Any]) -> Any:
        if spec.get("ReservedConcurrentExecutions") is not None:
            check(self, spec.get("FunctionName"), spec["ReservedConcurrentExecutions"])
        return original_create(self, spec)

    LambdaBackend.put_function_concurrency = put_function_concurrency
    LambdaBackend.create_function = create_function


def install_account_settings(quota: Callable[[], int]) -> None:
    """GetAccountSettings answers the account's concurrency: ``ConcurrentExecutions`` the quota,
    ``UnreservedConcurrentExecutions`` what the reservations leave; moto had no such operation.
    https://docs.aws.amazon.com/lambda/latest/api/API_GetAccountSettings.html
    """
    from moto.awslambda import urls
    from moto.awslambda.responses import LambdaResponse

    urls.url_paths[r"{0}/(?P<api_version>[^/]+)/account-settings/?$"] = LambdaResponse.dispatch

    def get_account_settings(self: Any) -> tuple[int, dict, str]:
        functions = self.backend.list_functions()
        reserved = sum(r for r in map(reservation, functions) if r is not None)
        return 200, {}, json.dumps({
            "AccountLimit": {"ConcurrentExecutions": quota(), "UnreservedConcurrentExecutions": quota() - reserved},
            "AccountUsage": {"FunctionCount": len(functions)},
        })

    LambdaResponse.get_account_settings = get_account_settings


def install_function_urls(urls: Any) -> None:
    """A function URL answers HTTP requests on AWS; moto makes up an address that answers nowhere.

    Each URL created (CreateFunctionUrlConfig, or AWS::Lambda::Url in a stack) gets a listener on
    127.0.0.1 from ``urls.open_function_url(fn)``, and its ``FunctionUrl`` is that listener's URL.
    """
    from moto.awslambda.models import FunctionUrlConfig

    original_init = FunctionUrlConfig.__init__

    def __init__(self: Any, function: Any, config: dict[str, Any]) -> None:
        original_init(self, function, config)
        self.url = urls.open_function_url(function)

    FunctionUrlConfig.__init__ = __init__


def install_lambda_invocation_type() -> None:
    """AWS honours InvocationType in the lambda:invoke integration; moto filters it out.

    An ``Event`` invocation (as with ``.waitForTaskToken``) must return at once so the task waits
    for its callback while the function runs.
    """
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_lambda,
    )

    state_task_service_lambda._SUPPORTED_API_PARAM_BINDINGS["invoke"].add("InvocationType")


def install_lambda_task_error_names() -> None:
    """Name lambda:invoke API failures as AWS does (its Java SDK's exception classes).

    A modelled Lambda error code keeps its name (``Lambda.TooManyRequestsException``,
    ``Lambda.ServiceException``); any other code is ``Lambda.AWSLambdaException``, and a call
    that got no answer at all (connection closed or refused) is ``Lambda.SdkClientException``.
    moto named them ``Lambda.<whatever code came back>`` and ``States.Runtime``.
    """
    import botocore.session
    from botocore.exceptions import BotoCoreError
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
        CustomErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_lambda import (
        StateTaskServiceLambda,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    modelled = {shape.name for shape in botocore.session.get_session().get_service_model("lambda").error_shapes}
    original_client_error = StateTaskServiceLambda._error_cause_from_client_error
    original_from_error = StateTaskServiceLambda._from_error

    def error_cause_from_client_error(client_error: Any) -> tuple[str, str]:
        error, cause = original_client_error(client_error)
        if client_error.response["Error"]["Code"] not in modelled:
            error = "Lambda.AWSLambdaException"
        return error, cause

    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        if not isinstance(ex, BotoCoreError):
            return original_from_error(self, env, ex)
        error = "Lambda.SdkClientException"
        return FailureEvent(
            env=env,
            error_name=CustomErrorName(error),
            event_type=HistoryEventType.TaskFailed,
            event_details=EventDetails(
                taskFailedEventDetails=TaskFailedEventDetails(
                    error=error,
                    cause=f"Unable to execute HTTP request: {ex}",
                    resource=self._get_sfn_resource(),
                    resourceType=self._get_sfn_resource_type(),
                )
            ),
        )

    StateTaskServiceLambda._error_cause_from_client_error = staticmethod(error_cause_from_client_error)
    StateTaskServiceLambda._from_error = from_error


def install_logging_config() -> None:
    """AWS: CreateFunction and UpdateFunctionConfiguration take ``LoggingConfig`` (``LogGroup``, the group
    the function logs to, default ``/aws/lambda/<function name>``), and the function's configuration
    shows it, with ``LogFormat`` ``Text`` unless set. moto dropped it, so nothing could say where a
    function's lines go. https://docs.aws.amazon.com/lambda/latest/api/API_LoggingConfig.html
    """
    from moto.awslambda.models import LambdaFunction

    from emulator.awslambda.logs import log_group

    original_init = LambdaFunction.__init__
    original_configuration = LambdaFunction.get_configuration
    original_update = LambdaFunction.update_configuration

    def __init__(self: Any, account_id: str, spec: dict, *args: Any, **kwargs: Any) -> None:
        original_init(self, account_id, spec, *args, **kwargs)
        self.logging_config = spec.get("LoggingConfig") or {}

    def get_configuration(self: Any, *args: Any, **kwargs: Any) -> dict:
        configuration = original_configuration(self, *args, **kwargs)
        configuration["LoggingConfig"] = {"LogFormat": "Text", **self.logging_config, "LogGroup": log_group(self)}
        return configuration

    def update_configuration(self: Any, config_updates: dict) -> dict:
        if "LoggingConfig" in config_updates:
            self.logging_config = {**self.logging_config, **config_updates["LoggingConfig"]}
        return original_update(self, config_updates)

    LambdaFunction.__init__ = __init__
    LambdaFunction.get_configuration = get_configuration
    LambdaFunction.update_configuration = update_configuration
