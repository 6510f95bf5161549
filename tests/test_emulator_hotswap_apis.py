"""The APIs `cdk deploy --hotswap` calls answer as AWS documents them.

For a function: UpdateFunctionCode, then GetFunction until LastUpdateStatus is Successful. For a state
machine: CloudFormation DescribeType (which properties are create-only), then Cloud Control's
UpdateResource with a JSON Patch, and GetResource. Each test cites the page it follows (Cloud Control:
https://docs.aws.amazon.com/cloudcontrolapi/latest/APIReference/). They run against the session's
emulator with a machine and a function of their own.
"""

from __future__ import annotations

import io
import json
import threading
import zipfile

import pytest
from botocore.exceptions import ClientError

from tests.emulator_helpers import create_function, permissive_role, unique

TYPE = "AWS::StepFunctions::StateMachine"


def _definition(result: str) -> str:
    return json.dumps({"StartAt": "Answer", "States": {"Answer": {"Type": "Pass", "Result": result, "End": True}}})


@pytest.fixture(scope="module")
def machine(aws):
    return aws.client("stepfunctions").create_state_machine(
        name=unique("cloudcontrol"), definition=_definition("first"), roleArn=_role(aws), tags=[{"key": "team", "value": "a"}],
    )["stateMachineArn"]


def _role(aws) -> str:
    return permissive_role(aws, "hotswap-apis")


def _version_code(version: str) -> str:
    return f"import time\n\ndef lambda_handler(event, context):\n    time.sleep(event.get('sleep', 0))\n    return '{version}'\n"


def test_updated_code_settles_at_once_and_runs_from_the_next_invocation_while_one_in_flight_finishes(aws):
    # https://docs.aws.amazon.com/lambda/latest/dg/functions-states.html: LastUpdateStatus goes
    # InProgress -> Successful, and invocations during an update run the previous code; once it is
    # Successful, invocations run the new code. The emulator updates at once: Successful straight away.
    lam = aws.client("lambda")
    name = create_function(aws, _role(aws), "hotswap-code", "app", _version_code("first"), Timeout=600)["FunctionName"]
    assert json.loads(lam.invoke(FunctionName=name, Payload=b"{}")["Payload"].read()) == "first"
    in_flight: dict = {}
    aws.clock.pause()
    sleepers = len(aws.clock.pending_wakeups())
    try:
        # Given an invocation of the first code, asleep on the paused clock
        thread = threading.Thread(target=lambda: in_flight.update(answer=json.loads(
            lam.invoke(FunctionName=name, Payload=json.dumps({"sleep": 60}))["Payload"].read())))
        thread.start()
        while thread.is_alive() and len(aws.clock.pending_wakeups()) == sleepers:
            thread.join(0.05)
        # When the code is updated, as `cdk deploy --hotswap` does
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("app.py", _version_code("second"))
        lam.update_function_code(FunctionName=name, ZipFile=archive.getvalue())
        # Then the update has settled, and the next invocation runs the new code
        configuration = lam.get_function(FunctionName=name)["Configuration"]
        assert (configuration["State"], configuration["LastUpdateStatus"]) == ("Active", "Successful")
        assert json.loads(lam.invoke(FunctionName=name, Payload=b"{}")["Payload"].read()) == "second"
    finally:
        aws.clock.resume()
    # And the invocation in flight finished on the code it started with
    thread.join(120)
    assert in_flight["answer"] == "first"


def _update(aws, arn: str, patch: list[dict]) -> dict:
    return aws.client("cloudcontrol").update_resource(TypeName=TYPE, Identifier=arn, PatchDocument=json.dumps(patch))["ProgressEvent"]


def test_get_resource_describes_the_machine_by_its_schema_properties_without_write_only_ones(aws, machine):
    # https://docs.aws.amazon.com/cloudcontrolapi/latest/APIReference/API_GetResource.html: the
    # ResourceDescription's Properties are a JSON string of the resource's properties, as the type's
    # schema names them; write-only properties (DefinitionSubstitutions...) are never returned.
    # When
    answer = aws.client("cloudcontrol").get_resource(TypeName=TYPE, Identifier=machine)
    # Then
    assert answer["TypeName"] == TYPE
    assert answer["ResourceDescription"]["Identifier"] == machine
    properties = json.loads(answer["ResourceDescription"]["Properties"])
    assert properties["Arn"] == machine
    assert properties["StateMachineType"] == "STANDARD"
    assert json.loads(properties["DefinitionString"]) == json.loads(_definition("first"))
    assert properties["Tags"] == [{"Key": "team", "Value": "a"}]
    assert not {"Definition", "DefinitionS3Location", "DefinitionSubstitutions"} & set(properties)


def test_update_resource_applies_a_json_patch_and_its_request_status_is_kept(aws, machine):
    # https://docs.aws.amazon.com/cloudcontrolapi/latest/APIReference/API_UpdateResource.html: the
    # PatchDocument is an RFC 6902 JSON Patch on the current properties; the answer is a ProgressEvent
    # (Operation UPDATE) whose RequestToken GetResourceRequestStatus takes
    # (https://docs.aws.amazon.com/cloudcontrolapi/latest/APIReference/API_GetResourceRequestStatus.html).
    # When
    event = _update(aws, machine, [{"op": "replace", "path": "/DefinitionString", "value": _definition("second")},
                                   {"op": "add", "path": "/Tags/-", "value": {"Key": "stage", "Value": "dev"}}])
    # Then
    assert (event["TypeName"], event["Identifier"], event["Operation"], event["OperationStatus"]) == (TYPE, machine, "UPDATE", "SUCCESS")
    described = aws.client("stepfunctions").describe_state_machine(stateMachineArn=machine)
    assert json.loads(described["definition"]) == json.loads(_definition("second"))
    tags = aws.client("stepfunctions").list_tags_for_resource(resourceArn=machine)["tags"]
    assert sorted((t["key"], t["value"]) for t in tags) == [("stage", "dev"), ("team", "a")]
    status = aws.client("cloudcontrol").get_resource_request_status(RequestToken=event["RequestToken"])["ProgressEvent"]
    assert status == event


def test_a_create_only_property_cannot_be_patched(aws, machine):
    # https://docs.aws.amazon.com/cloudcontrolapi/latest/APIReference/API_UpdateResource.html:
    # NotUpdatableException, "one or more properties included in this resource operation are defined as
    # create-only"; StateMachineType is create-only in the type's schema.
    with pytest.raises(ClientError) as raised:
        _update(aws, machine, [{"op": "replace", "path": "/StateMachineType", "value": "EXPRESS"}])
    assert raised.value.response["Error"]["Code"] == "NotUpdatableException"
    assert "/properties/StateMachineType" in raised.value.response["Error"]["Message"]


def test_a_definition_step_functions_refuses_fails_the_request_not_the_call(aws, machine):
    # https://docs.aws.amazon.com/cloudcontrolapi/latest/APIReference/API_ProgressEvent.html: a failed
    # operation is OperationStatus FAILED with an ErrorCode (InvalidRequest) and a StatusMessage.
    # When
    event = _update(aws, machine, [{"op": "replace", "path": "/DefinitionString", "value": '{"StartAt": "Nowhere"}'}])
    # Then
    assert (event["OperationStatus"], event["ErrorCode"]) == ("FAILED", "InvalidRequest")
    assert event["StatusMessage"]
    status = aws.client("cloudcontrol").get_resource_request_status(RequestToken=event["RequestToken"])
    assert status["ProgressEvent"]["OperationStatus"] == "FAILED"


@pytest.mark.parametrize("call, code", [
    # API_GetResource.html: ResourceNotFoundException, TypeNotFoundException
    (lambda cc, arn: cc.get_resource(TypeName=TYPE, Identifier=arn + "-missing"), "ResourceNotFoundException"),
    (lambda cc, arn: cc.get_resource(TypeName="AWS::Nothing::Here", Identifier=arn), "TypeNotFoundException"),
    # API_GetResourceRequestStatus.html: RequestTokenNotFoundException
    (lambda cc, arn: cc.get_resource_request_status(RequestToken="no-such-token"), "RequestTokenNotFoundException"),
])
def test_unknown_resources_types_and_requests_are_named_errors(aws, machine, call, code):
    with pytest.raises(ClientError) as raised:
        call(aws.client("cloudcontrol"), machine)
    assert raised.value.response["Error"]["Code"] == code


def test_describe_type_returns_the_registry_schema_the_cli_reads_create_only_properties_from(aws):
    # https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeType.html: Schema is
    # the type's schema; an unknown type is TypeNotFoundException. The state machine's schema makes
    # StateMachineName and StateMachineType create-only.
    cfn = aws.client("cloudformation")
    described = cfn.describe_type(Type="RESOURCE", TypeName=TYPE)
    schema = json.loads(described["Schema"])
    assert described["TypeName"] == TYPE
    assert set(schema["createOnlyProperties"]) == {"/properties/StateMachineName", "/properties/StateMachineType"}
    assert schema["primaryIdentifier"] == ["/properties/Arn"]
    with pytest.raises(ClientError) as raised:
        cfn.describe_type(Type="RESOURCE", TypeName="AWS::Nothing::Here")
    assert raised.value.response["Error"]["Code"] == "TypeNotFoundException"


def test_change_sets_are_named_within_their_stack(aws):
    # https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeChangeSet.html: a
    # change set is named within its stack (StackName with a name); a deleted one is
    # ChangeSetNotFound. `cdk deploy --hotswap-fallback` deletes its stack's "cdk-deploy-change-set"
    # and waits until that stack's is gone, while other stacks have one of the same name.
    cfn = aws.client("cloudformation")
    template = json.dumps({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}})
    first, second = unique("change-sets"), unique("change-sets")
    for stack in (first, second):
        cfn.create_change_set(StackName=stack, ChangeSetName="same-name", TemplateBody=template, ChangeSetType="CREATE")
    assert cfn.describe_change_set(StackName=second, ChangeSetName="same-name")["StackName"] == second
    cfn.delete_change_set(StackName=first, ChangeSetName="same-name")
    with pytest.raises(ClientError) as raised:
        cfn.describe_change_set(StackName=first, ChangeSetName="same-name")
    assert raised.value.response["Error"]["Code"] == "ChangeSetNotFound"
    assert cfn.describe_change_set(StackName=second, ChangeSetName="same-name")["StackName"] == second


def test_an_update_keeps_the_previous_value_of_an_ssm_parameter_typed_parameter(aws):
    # https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_Parameter.html:
    # UsePreviousValue keeps the value the stack uses; for an AWS::SSM::Parameter::Value type that is
    # the SSM parameter's name, resolved again (the CDK's BootstrapVersion parameter on every update).
    cfn, name = aws.client("cloudformation"), unique("previous-value")
    aws.client("ssm").put_parameter(Name=f"/{name}/version", Value="21", Type="String")

    def template(topics: int) -> str:
        return json.dumps({
            "Parameters": {"Version": {"Type": "AWS::SSM::Parameter::Value<String>", "Default": f"/{name}/version"}},
            "Resources": {f"Topic{n}": {"Type": "AWS::SNS::Topic"} for n in range(topics)},
        })

    cfn.create_stack(StackName=name, TemplateBody=template(1))
    cfn.create_change_set(StackName=name, ChangeSetName="update", TemplateBody=template(2), ChangeSetType="UPDATE",
                          Parameters=[{"ParameterKey": "Version", "UsePreviousValue": True}])
    cfn.execute_change_set(StackName=name, ChangeSetName="update")
    stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"
    assert len(cfn.list_stack_resources(StackName=name)["StackResourceSummaries"]) == 2
