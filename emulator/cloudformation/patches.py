"""CloudFormation: what `cdk deploy` needs from moto (change sets, exports, layers, PITR, KMS tags, DescribeType)."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any


def install_cloudformation_fidelity() -> None:
    from moto.cloudformation import parsing as cfn_parsing
    from moto.cloudformation import responses as cfn_responses

    import emulator.cloudformation.models  # noqa: F401 - registers the extra resource models
    import emulator.cloudformation.resource_policies  # noqa: F401 - and the topic and queue policies

    cfn_parsing.get_model_list.cache_clear()
    cfn_parsing.get_model_map.cache_clear()
    cfn_parsing.get_name_type_map.cache_clear()
    from moto.cloudformation.models import CloudFormationBackend
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.table import Table

    # `cdk deploy` passes a TemplateURL on the endpoint (http://127.0.0.1:PORT/bucket/key); moto
    # reads path-style URLs only for "localhost".
    original_from_url = cfn_responses.get_stack_from_s3_url

    def get_stack_from_s3_url(template_url: str, account_id: str, partition: str) -> str:
        return original_from_url(template_url.replace("://127.0.0.1:", "://localhost:", 1), account_id, partition)

    cfn_responses.get_stack_from_s3_url = get_stack_from_s3_url

    # `cdk deploy` uses change sets; moto's change-set path never publishes Outputs or Exports,
    # and resolves Fn::ImportValue against an empty export list.
    original_create_change_set = CloudFormationBackend.create_change_set

    def create_change_set(self: Any, *args: Any, **kwargs: Any) -> Any:
        change_set_id, stack_id = original_create_change_set(self, *args, **kwargs)
        stack = self.stacks[stack_id]
        stack.cross_stack_resources = self.exports
        stack.resource_map.cross_stack_resources = self.exports
        return change_set_id, stack_id

    CloudFormationBackend.create_change_set = create_change_set
    original_execute = CloudFormationBackend.execute_change_set

    def execute_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
        # `cdk deploy` names every stack's change set alike; moto picks one by name alone.
        change_set = self.change_sets.get(change_set_name) or next(
            (
                cs
                for cs in reversed(list(self.change_sets.values()))
                if cs.change_set_name == change_set_name and stack_name in (None, cs.stack_name, cs.stack_id)
            ),
            None,
        )
        if change_set is None:
            return original_execute(self, change_set_name, stack_name)
        original_execute(self, change_set.change_set_id, stack_name)
        stack = self.stacks[change_set.stack_id]
        for export in stack.exports:
            self.exports.pop(export.name, None)
        stack._parse_template()
        stack.description = stack.template_dict.get("Description")
        stack.output_map = stack._create_output_map()
        self._validate_export_uniqueness(stack)
        for export in stack.exports:
            self.exports[export.name] = export

    CloudFormationBackend.execute_change_set = execute_change_set

    # AWS::DynamoDB::Table PointInTimeRecoverySpecification is ignored by moto's CloudFormation.
    original_table_create = Table.create_from_cloudformation_json.__func__

    def table_create(cls: Any, resource_name: str, cloudformation_json: dict, account_id: str, region_name: str, **kwargs: Any) -> Any:
        table = original_table_create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
        spec = cloudformation_json.get("Properties", {}).get("PointInTimeRecoverySpecification") or {}
        if str(spec.get("PointInTimeRecoveryEnabled")).lower() == "true":
            dynamodb_backends[account_id][region_name].update_continuous_backups(
                table.name, {"PointInTimeRecoveryEnabled": True}
            )
        return table

    Table.create_from_cloudformation_json = classmethod(table_create)

    # AWS::Lambda::Function Layers are dropped by moto's CloudFormation: every function whose
    # code imports from a layer (the shared patterns_common package) failed to import. A Ref to
    # a layer of the same stack resolves to moto's LayerVersion model, not its ARN.
    from moto.awslambda.models import LambdaFunction

    original_function_create = LambdaFunction.create_from_cloudformation_json.__func__

    def function_create(cls: Any, resource_name: str, cloudformation_json: dict, *args: Any, **kwargs: Any) -> Any:
        fn = original_function_create(cls, resource_name, cloudformation_json, *args, **kwargs)
        properties = cloudformation_json.get("Properties", {})
        if properties.get("Layers"):
            fn.layers = fn._get_layers_data([getattr(layer, "arn", layer) for layer in properties["Layers"]])
        if properties.get("TracingConfig"):  # dropped too
            fn.tracing_config = properties["TracingConfig"]
        # Dropped too: where the function logs (emulator/awslambda/logs.py reads it).
        fn.logging_config = properties.get("LoggingConfig") or {}
        return fn

    LambdaFunction.create_from_cloudformation_json = classmethod(function_create)

    # AWS::KMS::Key Tags are {Key, Value} in CloudFormation; moto hands them to KMS's tagger,
    # which expects {TagKey, TagValue}, and the whole stack fails.
    from moto.kms.models import Key

    original_key_create = Key.create_from_cloudformation_json.__func__

    def key_create(cls: Any, resource_name: str, cloudformation_json: dict, *args: Any, **kwargs: Any) -> Any:
        properties = cloudformation_json.get("Properties", {})
        if properties.get("Tags"):
            properties = {**properties, "Tags": [{"TagKey": t["Key"], "TagValue": t["Value"]} for t in properties["Tags"]]}
            cloudformation_json = {**cloudformation_json, "Properties": properties}
        return original_key_create(cls, resource_name, cloudformation_json, *args, **kwargs)

    Key.create_from_cloudformation_json = classmethod(key_create)


def install_describe_type() -> None:
    """DescribeType answers a resource type's registry schema, as AWS does.

    https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeType.html: ``Schema``
    is the type's schema (its create-only properties among others); an unknown type is
    ``TypeNotFoundException``. `cdk deploy --hotswap` reads it to leave create-only properties to a
    full deployment; moto had no DescribeType, and the CLI retried its error page for 48 seconds.
    """
    from moto.cloudformation.exceptions import CloudFormationError
    from moto.cloudformation.responses import CloudFormationResponse
    from moto.core.responses import ActionResult

    from emulator.cloudcontrol import schemas

    class TypeNotFound(CloudFormationError):
        code = "TypeNotFoundException"

    def describe_type(self: Any) -> ActionResult:
        kind, type_name = self._get_param("Type") or "RESOURCE", self._get_param("TypeName")
        try:
            if kind != "RESOURCE":
                raise schemas.UnknownType(type_name)
            schema = schemas.schema(self.region, type_name)
        except schemas.UnknownType:
            raise TypeNotFound(f"The type '{type_name}' cannot be found.") from None
        return ActionResult({
            "Arn": f"arn:{self.partition}:cloudformation:{self.region}::type/resource/{type_name.replace('::', '-')}",
            "Type": "RESOURCE",
            "TypeName": type_name,
            "Schema": json.dumps(schema),
            "Visibility": "PUBLIC",
            "ProvisioningType": "FULLY_MUTABLE",
            "DeprecatedStatus": "LIVE",
            "IsDefaultVersion": True,
        })

    CloudFormationResponse.describe_type = describe_type


def install_change_sets_by_stack() -> None:
    """DescribeChangeSet and DeleteChangeSet with a StackName find that stack's change set of that name.

    A change set's name is unique within its stack
    (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeChangeSet.html: the
    name or ARN, and the stack's name or ARN when a name is given); one that does not exist is
    ChangeSetNotFoundException. moto looked names up across every stack: `cdk deploy
    --hotswap-fallback` deletes its stack's "cdk-deploy-change-set", then waited forever for it to go,
    as another stack's change set of that name still answered.
    """
    from moto.cloudformation.exceptions import CloudFormationError
    from moto.cloudformation.responses import CloudFormationResponse
    from moto.core.responses import ActionResult, EmptyResult

    class ChangeSetNotFound(CloudFormationError):
        code = "ChangeSetNotFoundException"

    def change_set_id(self: Any) -> str:
        name, stack = self._get_param("ChangeSetName"), self._get_param("StackName")
        change_sets = self.cloudformation_backend.change_sets
        if name in change_sets:  # an ARN
            return name
        matching = [cs_id for cs_id, cs in change_sets.items()
                    if cs.change_set_name == name and stack in (None, cs.stack_name, cs.stack_id)]
        if not matching:
            raise ChangeSetNotFound(f"ChangeSet [{name}] does not exist")
        return matching[-1]

    def describe_change_set(self: Any) -> ActionResult:
        return ActionResult(self.cloudformation_backend.describe_change_set(change_set_name=change_set_id(self)))

    def delete_change_set(self: Any) -> EmptyResult:
        self.cloudformation_backend.delete_change_set(change_set_name=change_set_id(self))
        return EmptyResult()

    CloudFormationResponse.describe_change_set = describe_change_set
    CloudFormationResponse.delete_change_set = delete_change_set


def install_previous_ssm_parameter_values() -> None:
    """UsePreviousValue of an SSM-typed parameter reuses its SSM parameter name, resolved again.

    https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_Parameter.html: with
    UsePreviousValue the stack keeps the value it is using; for an ``AWS::SSM::Parameter::Value<...>``
    type that value is the parameter's name, and ResolvedValue is what it resolved to. moto reused the
    resolved value and then looked it up as a name, so every update of a CDK stack (whose
    BootstrapVersion parameter is SSM-typed) failed: `cdk deploy --hotswap-fallback`'s full deployment.
    """
    from moto.cloudformation.models import Stack

    def stack_parameters(self: Any) -> dict[str, Any]:
        slots = self.resource_map._template.get("Parameters", {})
        given = self.resource_map.input_parameters
        return {
            name: given.get(name, slots[name].get("Default"))
            if str(slots.get(name, {}).get("Type", "")).startswith("AWS::SSM::Parameter::") else value
            for name, value in self.resource_map.resolved_parameters.items()
        }

    Stack.stack_parameters = property(stack_parameters)


# Resource types whose refusals CloudFormation reports through a resource handler, by service name.
_HANDLED_BY_SERVICE = {"AWS::Lambda::Function": "Lambda"}


class ResourceFailed(Exception):
    """A resource of a stack that its service refused to create, with the service's message."""

    def __init__(self, logical_id: str, resource_type: str, reason: str) -> None:
        super().__init__(reason)
        self.logical_id, self.resource_type, self.reason = logical_id, resource_type, reason


def install_resource_failures() -> None:
    """A resource its service refuses fails the stack as CloudFormation fails it: the resource's
    CREATE_FAILED event gives the service's message, the stack rolls back (a new stack to
    ROLLBACK_COMPLETE, its resources deleted; an update to UPDATE_ROLLBACK_COMPLETE), and
    ExecuteChangeSet itself succeeds, so `cdk deploy` reports the failed resource and its reason.
    moto let the service's error out of ExecuteChangeSet, and `cdk deploy` saw an HTTP error instead.
    An update's resources are not restored to their previous properties.
    https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/stack-failure-options.html
    """
    from moto.cloudformation import parsing
    from moto.cloudformation.models import CloudFormationBackend, Event
    from moto.core.exceptions import ServiceException
    from werkzeug.exceptions import HTTPException  # moto's REST errors (Lambda's, IAM's...) are these

    original_create = parsing.parse_and_create_resource

    def parse_and_create_resource(logical_id: str, resource_json: dict, *args: Any, **kwargs: Any) -> Any:
        try:
            return original_create(logical_id, resource_json, *args, **kwargs)
        except (ServiceException, HTTPException) as refused:
            reason = getattr(refused, "message", None) or getattr(refused, "description", None) or str(refused)
            resource_type = resource_json["Type"]
            if resource_type in _HANDLED_BY_SERVICE:
                # As a resource handler's failure reads in CloudFormation's events (Lambda's, for one).
                service, status = _HANDLED_BY_SERVICE[resource_type], getattr(refused, "code", 400)
                reason = (f'Resource handler returned message: "{reason} (Service: {service}, Status Code: {status}, '
                          f'Request ID: {uuid.uuid4()})" (RequestToken: {uuid.uuid4()}, HandlerErrorCode: InvalidRequest)')
            raise ResourceFailed(logical_id, resource_type, reason) from refused

    parsing.parse_and_create_resource = parse_and_create_resource
    original_execute = CloudFormationBackend.execute_change_set

    def execute_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
        try:
            original_execute(self, change_set_name, stack_name)
        except ResourceFailed as failed:
            change_set = self.change_sets.get(change_set_name) or next(
                cs for cs in reversed(list(self.change_sets.values()))
                if cs.change_set_name == change_set_name and stack_name in (None, cs.stack_name, cs.stack_id))
            _roll_back(self.stacks[change_set.stack_id], change_set, failed, Event)

    CloudFormationBackend.execute_change_set = execute_change_set


def _roll_back(stack: Any, change_set: Any, failed: ResourceFailed, event_class: Any) -> None:
    creating = change_set.change_set_type == "CREATE"
    stack.events.append(event_class(
        stack_id=stack.stack_id, stack_name=stack.name, logical_resource_id=failed.logical_id, physical_resource_id="",
        resource_type=failed.resource_type, resource_status="CREATE_FAILED", resource_status_reason=failed.reason,
        resource_properties=None,
    ))
    rollback = "ROLLBACK" if creating else "UPDATE_ROLLBACK"
    stack._add_stack_event(f"{rollback}_IN_PROGRESS", resource_status_reason=(
        f"The following resource(s) failed to create: [{failed.logical_id}]. Rollback requested by user."))
    if creating:
        stack.resource_map.delete()
    stack._add_stack_event(f"{rollback}_COMPLETE")
    stack.status = f"{rollback}_COMPLETE"
    change_set.execution_status = "EXECUTE_FAILED"


def install_dependents_first_deletion() -> None:
    """A stack's resources are deleted dependents first, as CloudFormation deletes them: a resource goes
    only after every resource that names it (Ref, Fn::GetAtt, Fn::Sub, DependsOn). moto tried them in a
    set's order and retried what failed, so a custom resource whose function had gone first could not be
    sent its Delete, and deleting the stack failed, or not, with the process's hash seed.
    https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-dependson.html
    ("resources are deleted in the reverse order"); pinned by tests/test_emulator_stack_deletion.py.
    Whatever fails in that order is left to moto's own passes, which report it.
    """
    from moto.cloudformation.parsing import ResourceMap

    original_delete = ResourceMap.delete

    def delete(self: Any) -> None:
        templates = self._resource_json_map
        kept = {logical_id for logical_id, resource in templates.items() if resource.get("DeletionPolicy") == "Retain"}
        needs = {logical_id: _named(resource, set(templates)) - {logical_id} for logical_id, resource in templates.items()}
        remaining = set(templates) - kept
        while remaining:
            free = sorted(x for x in remaining if not any(x in needs[other] for other in remaining if other != x))
            if not free:
                break  # a cycle CloudFormation would have refused at create: moto's passes take the rest
            for logical_id in free:
                parsed = self._parsed_resources.get(logical_id)
                if parsed is not None and not isinstance(parsed, str):
                    try:
                        self._delete_resource(parsed, templates[logical_id])
                    except Exception:  # noqa: BLE001 - moto's passes below try it again and report it
                        continue
                    self._parsed_resources.pop(logical_id)
            remaining -= set(free)
        original_delete(self)

    ResourceMap.delete = delete


def _named(value: Any, logical_ids: set[str]) -> set[str]:
    """The logical ids a resource's template names."""
    if isinstance(value, list):
        return set().union(*(_named(item, logical_ids) for item in value)) if value else set()
    if not isinstance(value, dict):
        return set()
    found: set[str] = set()
    for key, item in value.items():
        if key == "Ref" and isinstance(item, str):
            found.add(item)
        elif key == "Fn::GetAtt":
            found.add(item[0] if isinstance(item, list) else str(item).split(".", 1)[0])
        elif key == "Fn::Sub":
            text = item[0] if isinstance(item, list) else item
            found.update(name.split(".", 1)[0] for name in re.findall(r"\$\{([^}!]+)\}", str(text)))
            found |= _named(item[1:] if isinstance(item, list) else [], logical_ids)
        elif key == "DependsOn":
            found.update([item] if isinstance(item, str) else item)
        else:
            found |= _named(item, logical_ids)
    return found & logical_ids


def install_retained_on_removal() -> None:
    """A resource whose ``DeletionPolicy`` is ``Retain`` outlives its removal from the template, as it
    outlives the stack's deletion: CloudFormation takes it out of the stack and leaves it. moto deleted
    it on an update. https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-deletionpolicy.html
    ("when you remove a resource from your stack"); pinned by tests/test_emulator_stack_deletion.py.
    """
    from moto.cloudformation.parsing import ResourceMap

    original_delete_resource = ResourceMap._delete_resource

    def _delete_resource(self: Any, parsed_resource: Any, resource_json: dict) -> None:
        if resource_json.get("DeletionPolicy") != "Retain":
            original_delete_resource(self, parsed_resource, resource_json)

    ResourceMap._delete_resource = _delete_resource


def install_json_templates_read_as_json() -> None:
    """A template written in JSON (what `cdk deploy` sends) is read with the JSON parser.

    moto reads every template, at each change set and stack update (several times per deployment),
    with PyYAML's pure-Python loader first and JSON only when YAML fails: for the app's templates that
    was a twentieth of a test shard's busy time. Speed, not behaviour, for the templates CDK writes
    (YAML 1.1 would read a JSON number such as ``1e3`` as a string, JSON reads it right); a YAML
    template (anything ``json.loads`` refuses) takes moto's own path, as before.
    """
    import json

    from moto.cloudformation.models import ChangeSet, Stack

    original_parse = Stack.parse_template
    original_change_set_parse = ChangeSet._parse_template

    def parse_template(template: str) -> dict[str, Any]:
        try:
            return json.loads(template)
        except ValueError:
            return original_parse(template)

    def change_set_parse(self: Any) -> None:
        try:
            self.template_dict = json.loads(self.template)
        except ValueError:
            original_change_set_parse(self)

    Stack.parse_template = staticmethod(parse_template)
    ChangeSet._parse_template = change_set_parse
