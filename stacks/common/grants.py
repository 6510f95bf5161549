"""Policy statements this app grants where CDK's own grant would be wider, each written once with its reason."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3


def invoke_statement(*functions: lambda_.IFunction) -> iam.PolicyStatement:
    """lambda:InvokeFunction on exactly these functions, by the unqualified ARNs their callers name.

    Unlike ``grant_invoke`` there is no ``<arn>:*`` wildcard: no version or alias is ever invoked.
    """
    return iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[fn.function_arn for fn in functions])


def list_bucket_statement(bucket: s3.IBucket) -> iam.PolicyStatement:
    """s3:ListBucket on ``bucket``, for a reader that may ask for an object not written yet: without it S3
    answers 403 AccessDenied instead of 404 (Amazon S3 API Reference, GetObject and HeadObject, Permissions)."""
    return iam.PolicyStatement(actions=["s3:ListBucket"], resources=[bucket.bucket_arn])
