"""Lambda-backed custom resources, run as CloudFormation runs them.

moto's custom resource (moto.cloudformation.custom_model) sends only Create, points its ResponseURL at
host.docker.internal, and never fails. Here, as the CloudFormation User Guide describes the protocol
("Custom resource request objects", "Custom resource response objects"):

- Create, Update (with ``OldResourceProperties`` and ``PhysicalResourceId``) and Delete (with
  ``PhysicalResourceId``) invoke the ``ServiceToken`` function asynchronously with the request, whose
  ``ResponseURL`` is on this emulator's endpoint (a presigned S3 URL on AWS; a PUT of the response).
- The stack operation waits for that PUT, on the simulated clock, for ``ServiceTimeout`` seconds
  (default 3600); no answer by then fails the resource, and so does ``Status: FAILED`` with its
  ``Reason``. ``Data`` answers Fn::GetAtt; ``PhysicalResourceId`` is Ref.
- An Update answered with another ``PhysicalResourceId`` is a replacement: the old one is sent a Delete.

A failed resource leaves its stack ``CREATE_FAILED`` or ``UPDATE_FAILED`` with the reason on the
resource's event: the emulator does not roll back (a stack deployed with rollback disabled ends so).
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

from moto.core.common_models import CloudFormationModel

from emulator.clock import SimClock, SimEvent

# Where functions PUT their answer: ``<endpoint>RESPONSE_PATH<request id>``.
RESPONSE_PATH = "/_emulator/cloudformation/responses/"
DEFAULT_SERVICE_TIMEOUT = 3600  # seconds, AWS::CloudFormation::CustomResource ServiceTimeout


class CustomResourceFailed(Exception):
    """The resource's provider answered FAILED, or nothing within the timeout."""

    def __init__(self, logical_id: str, reason: str) -> None:
        super().__init__(reason)
        self.logical_id = logical_id


class _Requests:
    """Requests sent to providers, waiting for the PUT to their ResponseURL."""

    def __init__(self) -> None:
        self.clock: SimClock | None = None
        self.endpoint_url = ""
        self.invoke: Any = None  # (function, payload bytes) -> None, asynchronously
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[SimEvent, list[dict]]] = {}

    def send(self, function: Any, request: dict, timeout: float) -> dict:
        """Invoke ``function`` with ``request`` (ResponseURL filled here) and return its answer."""
        if self.clock is None:
            raise RuntimeError("No LocalAws is running in this process")
        request_id = request["RequestId"]
        answered, answers = SimEvent(), []
        with self._lock:
            self._pending[request_id] = (answered, answers)
        request["ResponseURL"] = f"{self.endpoint_url}{RESPONSE_PATH}{request_id}"
        try:
            self.invoke(function, json.dumps(request).encode())
            if not self.clock.wait(answered, timeout) or not answers:
                raise CustomResourceFailed(
                    request["LogicalResourceId"],
                    f"CloudFormation did not receive a response from your Custom Resource within {timeout:g} seconds "
                    f"(ServiceTimeout). RequestId: {request_id}",
                )
            return answers[0]
        finally:
            with self._lock:
                self._pending.pop(request_id, None)

    def wsgi(self, environ: dict, start_response: Any) -> list[bytes]:
        """The PUT of a response: 200 when the request still waits, 403 as S3 does for a used-up URL."""
        request_id = environ["PATH_INFO"][len(RESPONSE_PATH):]
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        with self._lock:
            pending = self._pending.get(request_id)
        if environ["REQUEST_METHOD"] != "PUT" or pending is None:
            start_response("403 Forbidden", [("Content-Type", "text/plain")])
            return [b"No custom resource request waits for this response"]
        try:
            answer = json.loads(body)
        except ValueError:
            answer = {"Status": "FAILED", "Reason": "The response is not JSON"}
        answered, answers = pending
        answers.append(answer)
        answered.set()
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]


requests = _Requests()
# Updates that failed during the stack operation under way (see update_from_cloudformation_json).
_failed_updates: dict[tuple[int, str], CustomResourceFailed] = {}


class LambdaBackedCustomResource(CloudFormationModel):
    """Custom::<Name> and AWS::CloudFormation::CustomResource whose ServiceToken is a Lambda function."""

    def __init__(self, logical_id: str, stack_id: str, resource_type: str, properties: dict, physical_id: str, data: dict) -> None:
        self.logical_id = logical_id
        self.stack_id = stack_id
        self.resource_type = resource_type
        self.properties = properties
        self.physical_id = physical_id
        self.data = data

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::CloudFormation::CustomResource"

    @property
    def physical_resource_id(self) -> str:
        return self.physical_id

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return True  # whatever the provider's Data holds

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        if attribute_name in self.data:
            return self.data[attribute_name]
        raise CustomResourceFailed(self.logical_id, f"Vendor response doesn't contain {attribute_name} attribute in object {self.stack_id}|{self.logical_id}")

    @staticmethod
    def _request(kind: str, logical_id: str, stack_id: str, resource_type: str, properties: dict, **more: Any) -> dict:
        return {
            "RequestType": kind,
            "ServiceToken": properties["ServiceToken"],
            "StackId": stack_id,
            "RequestId": str(uuid.uuid4()),
            "LogicalResourceId": logical_id,
            "ResourceType": resource_type,
            "ResourceProperties": properties,
            **more,
        }

    @staticmethod
    def _send(account_id: str, region_name: str, request: dict) -> dict:
        from moto.awslambda.models import lambda_backends

        properties = request["ResourceProperties"]
        function = lambda_backends[account_id][region_name].get_function(properties["ServiceToken"])
        timeout = float(properties.get("ServiceTimeout", DEFAULT_SERVICE_TIMEOUT))
        answer = requests.send(function, request, timeout)
        if answer.get("Status") != "SUCCESS":
            reason = answer.get("Reason") or "(no reason given)"
            raise CustomResourceFailed(
                request["LogicalResourceId"],
                f"Received response status [FAILED] from custom resource. Message returned: {reason} (RequestId: {request['RequestId']})",
            )
        return answer

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> "LambdaBackedCustomResource":
        properties = cloudformation_json["Properties"]
        args = (kwargs["LogicalId"], kwargs["StackId"], kwargs["ResourceType"], properties)
        answer = cls._send(account_id, region_name, cls._request("Create", *args))
        return cls(*args, answer.get("PhysicalResourceId") or resource_name, answer.get("Data") or {})

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[misc]
        cls, original_resource: "LambdaBackedCustomResource", new_resource_name: str, cloudformation_json: Any,
        account_id: str, region_name: str,
    ) -> "LambdaBackedCustomResource":
        old = original_resource
        properties = cloudformation_json["Properties"]
        args = (old.logical_id, old.stack_id, old.resource_type, properties)
        # moto tries a failed update of a resource again, up to four times: CloudFormation sends one request.
        attempt = (id(old), json.dumps(properties, sort_keys=True, default=str))
        if attempt in _failed_updates:
            raise _failed_updates[attempt]
        request = cls._request("Update", *args, OldResourceProperties=old.properties, PhysicalResourceId=old.physical_id)
        try:
            answer = cls._send(account_id, region_name, request)
        except CustomResourceFailed as failed:
            _failed_updates[attempt] = failed
            raise
        updated = cls(*args, answer.get("PhysicalResourceId") or old.physical_id, answer.get("Data") or {})
        if updated.physical_id != old.physical_id:  # a replacement: the old resource goes (its failure fails nothing)
            try:
                old.delete(account_id, region_name)
            except CustomResourceFailed:
                pass
        return updated

    def delete(self, account_id: str, region_name: str) -> None:
        request = self._request("Delete", self.logical_id, self.stack_id, self.resource_type, self.properties,
                                PhysicalResourceId=self.physical_id)
        self._send(account_id, region_name, request)

    def is_created(self) -> bool:
        return True  # created once its provider answered, which create_from_cloudformation_json waits for


def install_custom_resources(clock: SimClock) -> None:
    """Custom resources go to LambdaBackedCustomResource; a failed one fails its stack operation."""
    from moto.cloudformation import parsing as cfn_parsing
    from moto.cloudformation.models import CloudFormationBackend, Stack

    requests.clock = clock
    original_class_from_type = cfn_parsing.resource_class_from_type

    def resource_class_from_type(resource_type: str) -> Any:
        if resource_type.startswith("Custom::") or resource_type == "AWS::CloudFormation::CustomResource":
            return LambdaBackedCustomResource
        return original_class_from_type(resource_type)

    cfn_parsing.resource_class_from_type = resource_class_from_type

    def failing_stack(operation: Any, status: str) -> Any:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return operation(self, *args, **kwargs)
            except CustomResourceFailed as failed:
                _failed_updates.clear()
                if isinstance(self, Stack):
                    _fail(self, failed, status)
                else:
                    change_set = _change_set(self, *args, **kwargs)
                    _fail(self.stacks[change_set.stack_id], failed, f"{change_set.change_set_type}_FAILED")
                return None

        return run

    Stack.create_resources = failing_stack(Stack.create_resources, "CREATE_FAILED")
    Stack.update = failing_stack(Stack.update, "UPDATE_FAILED")
    Stack.delete = failing_stack(Stack.delete, "DELETE_FAILED")
    CloudFormationBackend.execute_change_set = failing_stack(CloudFormationBackend.execute_change_set, "")


def _change_set(backend: Any, change_set_name: str, stack_name: str | None = None) -> Any:
    return backend.change_sets.get(change_set_name) or next(
        cs for cs in reversed(list(backend.change_sets.values()))
        if cs.change_set_name == change_set_name and stack_name in (None, cs.stack_name, cs.stack_id)
    )


def _fail(stack: Any, failed: CustomResourceFailed, status: str) -> None:
    """The resource's event says why; the stack ends ``status``, as with rollback disabled."""
    from moto.cloudformation.models import Event
    from moto.cloudformation.parsing import OutputMap

    resource = stack.template_dict.get("Resources", {}).get(failed.logical_id, {})
    stack.events.append(Event(
        stack_id=stack.stack_id, stack_name=stack.name, logical_resource_id=failed.logical_id,
        physical_resource_id=None, resource_type=resource.get("Type", "AWS::CloudFormation::CustomResource"),
        resource_status=status, resource_status_reason=str(failed),
        resource_properties=None,
    ))
    stack._add_stack_event(status, resource_status_reason=f"The following resource(s) failed: [{failed.logical_id}].")
    stack.status = status
    # Nothing asks the provider again: the failed resource stays absent, and so do the outputs.
    stack.resource_map._parsed_resources.setdefault(failed.logical_id, None)
    stack.output_map = OutputMap(stack.resource_map, {"Outputs": {}}, stack.stack_id)
