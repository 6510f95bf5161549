"""The AWS::StepFunctions::StateMachine resource handler: its properties read and updated through the Step Functions API.

Properties are the registry schema's (PascalCase), the API's fields camelCase; the nested ones map by
their first letter alone (``loggingConfiguration.includeExecutionData`` is
``LoggingConfiguration.IncludeExecutionData``). Updating calls UpdateStateMachine, as the
CloudFormation handler does, so an execution already running keeps the definition it started with
and the next one runs the new one.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from emulator.cloudformation.property_names import api_names, property_names

# The optional configurations, by the API's name for each.
_CONFIGURATIONS = {"LoggingConfiguration": "loggingConfiguration", "TracingConfiguration": "tracingConfiguration",
                   "EncryptionConfiguration": "encryptionConfiguration"}
# What UpdateStateMachine takes besides the definition.
_UPDATABLE = {"RoleArn": "roleArn", **_CONFIGURATIONS}


class StateMachineHandler:
    TYPE_NAME = "AWS::StepFunctions::StateMachine"

    @staticmethod
    def read(client: Callable[[str], Any], arn: str) -> dict:
        """The resource's properties; LookupError if there is no such state machine."""
        sfn = client("stepfunctions")
        try:
            machine = sfn.describe_state_machine(stateMachineArn=arn)
        except (sfn.exceptions.StateMachineDoesNotExist, sfn.exceptions.InvalidArn):
            raise LookupError(arn) from None
        tags = sfn.list_tags_for_resource(resourceArn=arn)["tags"]
        properties = {
            "Arn": arn,
            "Name": machine["name"],
            "StateMachineName": machine["name"],
            "StateMachineType": machine["type"],
            "DefinitionString": machine["definition"],
            "RoleArn": machine["roleArn"],
        }
        if machine.get("revisionId"):
            properties["StateMachineRevisionId"] = machine["revisionId"]
        for name, field in _CONFIGURATIONS.items():
            if machine.get(field):
                properties[name] = property_names(machine[field])
        if tags:
            properties["Tags"] = [{"Key": t["key"], "Value": t["value"]} for t in tags]
        return properties

    @staticmethod
    def update(client: Callable[[str], Any], arn: str, current: dict, desired: dict) -> None:
        sfn = client("stepfunctions")
        changes = {field: api_names(desired[name]) for name, field in _UPDATABLE.items()
                   if name in desired and desired[name] != current.get(name)}
        definition = _definition(client, desired)
        if definition != current["DefinitionString"]:
            changes["definition"] = definition
        if changes:
            sfn.update_state_machine(stateMachineArn=arn, **changes)
        before = {t["Key"]: t["Value"] for t in current.get("Tags", [])}
        after = {t["Key"]: t["Value"] for t in desired.get("Tags", [])}
        # Tags whose key starts with aws: belong to AWS (CloudFormation's own); nobody removes them.
        removed = [key for key in before if key not in after and not key.lower().startswith("aws:")]
        if removed:
            sfn.untag_resource(resourceArn=arn, tagKeys=removed)
        added = [{"key": key, "value": value} for key, value in after.items() if before.get(key) != value]
        if added:
            sfn.tag_resource(resourceArn=arn, tags=added)


def _definition(client: Callable[[str], Any], properties: dict) -> str:
    """The definition a model asks for: Definition, DefinitionS3Location or DefinitionString, substituted.

    As in CloudFormation, each ``${Name}`` of DefinitionSubstitutions is replaced by its value.
    """
    if "Definition" in properties:
        text = json.dumps(properties["Definition"])
    elif "DefinitionS3Location" in properties:
        location = properties["DefinitionS3Location"]
        extra = {"VersionId": location["Version"]} if location.get("Version") else {}
        text = client("s3").get_object(Bucket=location["Bucket"], Key=location["Key"], **extra)["Body"].read().decode()
    else:
        text = properties["DefinitionString"]
    for name, value in (properties.get("DefinitionSubstitutions") or {}).items():
        text = text.replace("${" + name + "}", json.dumps(value) if isinstance(value, bool) else str(value))
    return text
