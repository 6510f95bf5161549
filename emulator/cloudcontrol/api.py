"""Cloud Control's JSON API on the emulator's endpoint: UpdateResource, GetResource, GetResourceRequestStatus.

What each answers follows the API Reference
(https://docs.aws.amazon.com/cloudcontrolapi/latest/APIReference/) and the User Guide's "Updating a
resource": the patch applies to the resource's current properties as its read handler returns them
(so write-only properties are absent), create-only and read-only properties cannot change, and a
handler's failure is a FAILED ProgressEvent, not an error response.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from typing import Any, Callable

import jsonpatch
from botocore.exceptions import ClientError

from emulator.cloudcontrol import schemas
from emulator.cloudcontrol.state_machine import StateMachineHandler

# The JSON protocol's X-Amz-Target prefix (botocore's service model for cloudcontrol).
TARGET_PREFIX = "CloudApiService."
# Resource handlers by type: the types the CDK hot-swaps through Cloud Control that this app deploys.
HANDLERS = {"AWS::StepFunctions::StateMachine": StateMachineHandler}

log = logging.getLogger(__name__)


class CloudControlError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class CloudControl:
    """The Cloud Control API of one LocalAws: ``client`` makes boto3 clients for its endpoint."""

    def __init__(self, client: Callable[[str], Any], region: str, now: Callable[[], float]) -> None:
        self._client = client
        self._region = region
        self._now = now
        self._lock = threading.Lock()
        self._requests: dict[str, dict] = {}  # ProgressEvents by RequestToken
        self._operations = {
            "UpdateResource": self.update_resource,
            "GetResource": self.get_resource,
            "GetResourceRequestStatus": self.get_resource_request_status,
        }

    # -- WSGI -------------------------------------------------------------------------------------
    def wsgi(self, environ: dict, start_response: Any) -> list[bytes]:
        operation = environ.get("HTTP_X_AMZ_TARGET", "")[len(TARGET_PREFIX):]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        try:
            body = json.loads(environ["wsgi.input"].read(length) or b"{}")
            if operation not in self._operations:
                raise CloudControlError(
                    "UnsupportedActionException",
                    f"The local emulator's Cloud Control API answers {', '.join(self._operations)}, not {operation}",
                )
            status, result = "200 OK", self._operations[operation](body)
        except CloudControlError as exc:
            status, result = "400 Bad Request", {"__type": exc.code, "Message": exc.message}
        payload = json.dumps(result).encode()
        start_response(status, [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", str(len(payload)))])
        return [payload]

    # -- operations -------------------------------------------------------------------------------
    def update_resource(self, body: dict) -> dict:
        type_name, identifier = body.get("TypeName", ""), body.get("Identifier", "")
        handler = self._handler(type_name)
        try:
            patch = jsonpatch.JsonPatch.from_string(body.get("PatchDocument", ""))
        except (ValueError, jsonpatch.InvalidJsonPatch) as exc:
            raise CloudControlError("InvalidRequestException", f"PatchDocument is not a JSON Patch (RFC 6902): {exc}") from None
        current = self._read(handler, identifier)
        try:
            desired = patch.apply(current)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            # A write-only property is never in the current state: `replace` or `remove` of one fails.
            raise CloudControlError("InvalidRequestException", f"Invalid patch: {exc}") from None
        self._refuse_fixed_changes(type_name, current, desired)
        event = {"TypeName": type_name, "Identifier": identifier, "RequestToken": str(uuid.uuid4()),
                 "Operation": "UPDATE", "EventTime": self._now()}
        try:
            handler.update(self._client, identifier, current, desired)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            message = ": ".join(part for part in (error.get("Code"), error.get("Message")) if part)
            log.warning("Cloud Control could not update %s (%s): %s", identifier, type_name, message)
            event.update(OperationStatus="FAILED", ErrorCode="InvalidRequest", StatusMessage=message)
        else:
            event.update(OperationStatus="SUCCESS", ResourceModel=json.dumps(handler.read(self._client, identifier)))
        with self._lock:
            self._requests[event["RequestToken"]] = event
        return {"ProgressEvent": event}

    def get_resource(self, body: dict) -> dict:
        type_name, identifier = body.get("TypeName", ""), body.get("Identifier", "")
        properties = self._read(self._handler(type_name), identifier)
        return {"TypeName": type_name, "ResourceDescription": {"Identifier": identifier, "Properties": json.dumps(properties)}}

    def get_resource_request_status(self, body: dict) -> dict:
        with self._lock:
            event = self._requests.get(body.get("RequestToken", ""))
        if event is None:
            raise CloudControlError("RequestTokenNotFoundException",
                                    f"Request with token {body.get('RequestToken')} was not found")
        return {"ProgressEvent": event}

    # -- internals --------------------------------------------------------------------------------
    def _handler(self, type_name: str) -> Any:
        try:
            schemas.schema(self._region, type_name)
        except schemas.UnknownType:
            raise CloudControlError("TypeNotFoundException", f"The type {type_name} cannot be found") from None
        if type_name not in HANDLERS:
            raise CloudControlError(
                "UnsupportedActionException",
                f"The local emulator's Cloud Control API handles {', '.join(HANDLERS)}, not {type_name}",
            )
        return HANDLERS[type_name]

    def _read(self, handler: Any, identifier: str) -> dict:
        try:
            return handler.read(self._client, identifier)
        except LookupError:
            raise CloudControlError("ResourceNotFoundException", f"Resource of type {handler.TYPE_NAME} with identifier "
                                                                 f"{identifier} was not found.") from None

    def _refuse_fixed_changes(self, type_name: str, current: dict, desired: dict) -> None:
        schema = schemas.schema(self._region, type_name)
        for kind in ("createOnlyProperties", "readOnlyProperties"):
            changed = sorted(name for name in schemas.top_level(schema.get(kind, []))
                             if current.get(name) != desired.get(name))
            if changed:
                raise CloudControlError(
                    "NotUpdatableException",
                    f"Invalid patch update: {kind} [{', '.join('/properties/' + n for n in changed)}] cannot be updated",
                )
