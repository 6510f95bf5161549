"""Deleting a stack, or removing a resource from it, in the emulator as CloudFormation does.

CloudFormation deletes a stack's resources in the reverse of the order it created them, dependents
first (User Guide, "DependsOn attribute": "resources are deleted in the reverse order"), so a custom
resource is sent its Delete while its function exists; a resource whose DeletionPolicy is Retain is
kept when the stack is deleted and when an update removes it from the template (User Guide,
"DeletionPolicy attribute"). A stack deleted with the app's kind of resources (a function, its URL,
its asynchronous settings, a custom resource it serves) ends DELETE_COMPLETE.
"""

from __future__ import annotations

import io
import json
import zipfile

from tests.emulator_helpers import unique, wait_for
from tests.test_emulator_custom_resources import PROVIDER, requests_received


def _status(cfn, name: str) -> str:
    [summary] = [s for s in cfn.list_stacks()["StackSummaries"] if s["StackName"] == name]
    return summary["StackStatus"]


def test_a_stack_of_a_function_its_url_its_async_config_and_the_custom_resource_it_serves_is_deleted_whole(aws, role_arn):
    # Given: the provider's code in a bucket, and a stack of the function, what names it, and a
    # custom resource it serves (its requests are recorded on a queue)
    s3, cfn, name = aws.client("s3"), aws.client("cloudformation"), unique("DependentsFirst")
    bucket = unique("provider-code").lower()
    s3.create_bucket(Bucket=bucket)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("provider.py", PROVIDER)
    s3.put_object(Bucket=bucket, Key="provider.zip", Body=archive.getvalue())
    queue = aws.client("sqs").create_queue(QueueName=unique("deletion-requests"))["QueueUrl"]
    resources = {
        "Provider": {"Type": "AWS::Lambda::Function", "Properties": {
            "Runtime": "python3.13", "Handler": "provider.lambda_handler", "Role": role_arn, "Timeout": 30,
            "Code": {"S3Bucket": bucket, "S3Key": "provider.zip"}}},
        "ProviderUrl": {"Type": "AWS::Lambda::Url", "Properties": {
            "TargetFunctionArn": {"Fn::GetAtt": ["Provider", "Arn"]}, "AuthType": "AWS_IAM"}},
        "ProviderAsync": {"Type": "AWS::Lambda::EventInvokeConfig", "Properties": {
            "FunctionName": {"Ref": "Provider"}, "Qualifier": "$LATEST", "MaximumRetryAttempts": 0}},
        "Probe": {"Type": "Custom::Probe", "Properties": {
            "ServiceToken": {"Fn::GetAtt": ["Provider", "Arn"]}, "Queue": queue, "Answer": "SUCCESS",
            "PhysicalId": "probe-1", "Value": "one"}},
    }
    cfn.create_stack(StackName=name, TemplateBody=json.dumps({"Resources": resources}))
    wait_for(lambda: _status(cfn, name) == "CREATE_COMPLETE", f"{name} created", timeout=120)
    provider = {"queue": queue}
    assert [r["RequestType"] for r in requests_received(aws, provider)] == ["Create"]

    # When
    cfn.delete_stack(StackName=name)

    # Then: the custom resource was sent its Delete (so its function still existed), and the stack is gone
    wait_for(lambda: _status(cfn, name) == "DELETE_COMPLETE", f"{name} deleted", timeout=120)
    [delete] = requests_received(aws, provider)
    assert delete["RequestType"] == "Delete" and delete["PhysicalResourceId"] == "probe-1"


def test_a_retained_table_is_kept_when_the_stack_is_deleted_and_when_an_update_removes_it(aws):
    cfn, dynamodb = aws.client("cloudformation"), aws.client("dynamodb")

    def table() -> dict:
        return {"Type": "AWS::DynamoDB::Table", "DeletionPolicy": "Retain", "Properties": {
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}], "BillingMode": "PAY_PER_REQUEST"}}

    other = {"Type": "AWS::SQS::Queue"}
    name = unique("RetainedTables")
    # Given: a stack of two retained tables and a queue
    cfn.create_stack(StackName=name, TemplateBody=json.dumps({"Resources": {"Removed": table(), "Deleted": table(), "Other": other}}))
    physical = {r["LogicalResourceId"]: r["PhysicalResourceId"]
                for r in cfn.list_stack_resources(StackName=name)["StackResourceSummaries"]}
    try:
        # When: an update removes one table from the template
        cfn.update_stack(StackName=name, TemplateBody=json.dumps({"Resources": {"Deleted": table(), "Other": other}}))
        # Then: it is out of the stack and still in DynamoDB
        wait_for(lambda: "Removed" not in [r["LogicalResourceId"] for r in
                                           cfn.list_stack_resources(StackName=name)["StackResourceSummaries"]],
                 "the table out of the stack", timeout=60)
        assert dynamodb.describe_table(TableName=physical["Removed"])["Table"]["TableStatus"] == "ACTIVE"
        # When: the stack is deleted
        cfn.delete_stack(StackName=name)
        wait_for(lambda: _status(cfn, name) == "DELETE_COMPLETE", f"{name} deleted", timeout=60)
        # Then: the other table is kept too, and the queue is gone
        assert dynamodb.describe_table(TableName=physical["Deleted"])["Table"]["TableStatus"] == "ACTIVE"
        assert physical["Other"] not in aws.client("sqs").list_queues().get("QueueUrls", [])
    finally:
        for logical_id in ("Removed", "Deleted"):
            dynamodb.delete_table(TableName=physical[logical_id])
