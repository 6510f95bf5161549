"""Lambda-backed custom resources in the emulator follow CloudFormation's request-response protocol.

A tiny provider function records every request it gets on a queue and answers as the resource's
properties tell it. Expected fields come from the CloudFormation User Guide, "Custom resource request
objects" (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-requests.html:
Create, Update with OldResourceProperties and PhysicalResourceId, Delete with PhysicalResourceId)
and "Custom resource response objects" (crpg-ref-responses.html: Status SUCCESS or FAILED, Reason,
PhysicalResourceId, Data for Fn::GetAtt; another PhysicalResourceId on Update is a replacement and
the old one is sent a Delete); the timeout is AWS::CloudFormation::CustomResource's ServiceTimeout.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.emulator_helpers import create_function, unique

pytestmark = pytest.mark.emulator

PROVIDER = '''
import json, urllib.request, boto3

def lambda_handler(event, context):
    props = event["ResourceProperties"]
    boto3.client("sqs").send_message(QueueUrl=props["Queue"], MessageBody=json.dumps(event))
    if props["Answer"] == "NONE":
        return
    body = {"Status": props["Answer"], "Reason": props.get("Reason", ""), "PhysicalResourceId": props["PhysicalId"],
            "StackId": event["StackId"], "RequestId": event["RequestId"], "LogicalResourceId": event["LogicalResourceId"],
            "Data": {"Echo": props["Value"]}}
    request = urllib.request.Request(event["ResponseURL"], data=json.dumps(body).encode(), method="PUT",
                                     headers={"Content-Type": ""})
    urllib.request.urlopen(request).close()
'''


@pytest.fixture(scope="module")
def provider(aws, role_arn) -> dict[str, str]:
    queue = aws.client("sqs").create_queue(QueueName=unique("custom-resource-requests"))["QueueUrl"]
    function = create_function(aws, role_arn, "custom-resource-provider", "provider", PROVIDER, Timeout=30)
    return {"arn": function["FunctionArn"], "queue": queue}


def template(provider: dict[str, str], **properties: Any) -> str:
    props = {"ServiceToken": provider["arn"], "Queue": provider["queue"], "Answer": "SUCCESS", "PhysicalId": "probe-1",
             "Value": "one", **properties}
    return json.dumps({
        "Resources": {"Probe": {"Type": "Custom::Probe", "Properties": props}},
        "Outputs": {"Echo": {"Value": {"Fn::GetAtt": ["Probe", "Echo"]}}, "Id": {"Value": {"Ref": "Probe"}}},
    })


def requests_received(aws, provider: dict[str, str]) -> list[dict]:
    sqs = aws.client("sqs")
    received = []
    while True:
        messages = sqs.receive_message(QueueUrl=provider["queue"], MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return received
        for message in messages:
            received.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=provider["queue"], ReceiptHandle=message["ReceiptHandle"])


def stack(aws, name: str) -> dict:
    return aws.client("cloudformation").describe_stacks(StackName=name)["Stacks"][0]


def outputs(aws, name: str) -> dict[str, str]:
    return {o["OutputKey"]: o["OutputValue"] for o in stack(aws, name).get("Outputs", [])}


def test_create_update_replace_and_delete_each_send_their_request(aws, provider):
    cfn, name = aws.client("cloudformation"), unique("CustomResourceLifecycle")

    # Given / When: a stack with one custom resource is created
    cfn.create_stack(StackName=name, TemplateBody=template(provider))
    # Then: the provider got a Create naming the stack and the resource; its answer is Ref and GetAtt
    [create] = requests_received(aws, provider)
    assert create["RequestType"] == "Create"
    assert create["ResponseURL"].startswith(aws.endpoint_url)
    assert create["StackId"] == stack(aws, name)["StackId"]
    assert create["LogicalResourceId"] == "Probe" and create["ResourceType"] == "Custom::Probe"
    assert create["ResourceProperties"]["Value"] == "one" and "PhysicalResourceId" not in create
    assert stack(aws, name)["StackStatus"] == "CREATE_COMPLETE"
    assert outputs(aws, name) == {"Echo": "one", "Id": "probe-1"}

    # When: a property changes
    cfn.update_stack(StackName=name, TemplateBody=template(provider, Value="two"))
    # Then: an Update with the old properties and the physical id
    [update] = requests_received(aws, provider)
    assert update["RequestType"] == "Update"
    assert update["OldResourceProperties"]["Value"] == "one" and update["ResourceProperties"]["Value"] == "two"
    assert update["PhysicalResourceId"] == "probe-1"
    assert outputs(aws, name)["Echo"] == "two"

    # When: the provider answers an Update with another physical id (a replacement)
    cfn.update_stack(StackName=name, TemplateBody=template(provider, Value="three", PhysicalId="probe-2"))
    # Then: the old resource is sent a Delete with its own id and properties
    update, delete_old = requests_received(aws, provider)
    assert update["RequestType"] == "Update" and update["PhysicalResourceId"] == "probe-1"
    assert delete_old["RequestType"] == "Delete" and delete_old["PhysicalResourceId"] == "probe-1"
    assert delete_old["ResourceProperties"]["Value"] == "two"
    assert outputs(aws, name)["Id"] == "probe-2"

    # When: the stack is deleted
    cfn.delete_stack(StackName=name)
    # Then: a Delete for the resource as it is now
    [delete] = requests_received(aws, provider)
    assert delete["RequestType"] == "Delete" and delete["PhysicalResourceId"] == "probe-2"


def test_a_failed_answer_fails_the_resource_with_its_reason(aws, provider):
    cfn, name = aws.client("cloudformation"), unique("CustomResourceFailed")

    # When: the provider answers FAILED
    cfn.create_stack(StackName=name, TemplateBody=template(provider, Answer="FAILED", Reason="no team named blue"))

    # Then: the stack fails and the resource's event carries the provider's reason
    assert stack(aws, name)["StackStatus"] == "CREATE_FAILED"
    events = cfn.describe_stack_events(StackName=name)["StackEvents"]
    [failed] = [e for e in events if e["LogicalResourceId"] == "Probe"]
    assert failed["ResourceStatus"] == "CREATE_FAILED"
    assert "no team named blue" in failed["ResourceStatusReason"]
    requests_received(aws, provider)


def test_no_answer_within_service_timeout_fails_the_resource_in_simulated_time(aws, provider):
    cfn, name = aws.client("cloudformation"), unique("CustomResourceSilent")
    started = aws.clock.now()

    # When: the provider never answers and the resource allows 300 s
    cfn.create_stack(StackName=name, TemplateBody=template(provider, Answer="NONE", ServiceTimeout="300"))

    # Then: the stack fails after 300 simulated seconds
    assert stack(aws, name)["StackStatus"] == "CREATE_FAILED"
    assert aws.clock.now() - started >= 300
    [failed] = [e for e in cfn.describe_stack_events(StackName=name)["StackEvents"] if e["LogicalResourceId"] == "Probe"]
    assert "did not receive a response" in failed["ResourceStatusReason"]
    requests_received(aws, provider)


def test_a_failed_update_is_sent_once_and_fails_the_stack_update(aws, provider):
    cfn, name = aws.client("cloudformation"), unique("CustomResourceUpdateFailed")
    cfn.create_stack(StackName=name, TemplateBody=template(provider))
    requests_received(aws, provider)

    # When: the provider answers the update FAILED
    cfn.update_stack(StackName=name, TemplateBody=template(provider, Value="two", Answer="FAILED", Reason="quota"))

    # Then: one Update request, and the update fails with the reason
    assert [r["RequestType"] for r in requests_received(aws, provider)] == ["Update"]
    assert stack(aws, name)["StackStatus"] == "UPDATE_FAILED"
    reasons = [e.get("ResourceStatusReason", "") for e in cfn.describe_stack_events(StackName=name)["StackEvents"]
               if e["LogicalResourceId"] == "Probe"]
    assert any("quota" in reason for reason in reasons)
