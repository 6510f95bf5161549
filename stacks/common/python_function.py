"""A Python Lambda function the way every pattern wants it: small asset, Powertools, logs, tracing."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

from aws_cdk import Aws, CfnCondition, CfnMapping, Duration, Fn, RemovalPolicy, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk.region_info import RegionInfo
from constructs import Construct

from stacks.common.nag import acknowledge
from stacks.common.zone_data import ZONE_ENVIRONMENT, shared_layer_code

ROOT = Path(__file__).resolve().parents[2]
LAMBDAS_DIR = ROOT / "lambdas"
RUNTIME = lambda_.Runtime.PYTHON_3_13
# The Powertools release is pinned in one place, the file the tests and the emulator install it from.
POWERTOOLS_REQUIREMENTS = ROOT / "requirements-powertools-layer.txt"
# Version of the AWS-managed "Powertools for AWS Lambda (Python) V3" layer (python3.13, x86_64)
# that holds each release, referenced by ARN so synthesis needs no network. 27 is 3.23.0:
# https://github.com/aws-powertools/powertools-lambda-python/issues/7689 (whose version-named SSM
# parameter AWS never published, so the ARN is written here rather than resolved at deploy time).
POWERTOOLS_LAYER_VERSIONS = {"3.23.0": 27}
POWERTOOLS_LAYER_NAME = "AWSLambdaPowertoolsPythonV3-python313-x86_64"
# The account that publishes the layer, as the Powertools install page lists it
# (https://docs.aws.amazon.com/powertools/python/latest/getting-started/install/): one account for
# every commercial region; in China and GovCloud one per region, and only in the regions named.
POWERTOOLS_PUBLISHER_COMMERCIAL = "017000801446"
POWERTOOLS_PUBLISHERS_ELSEWHERE = {
    "cn-north-1": "498634801083",
    "us-gov-east-1": "165087284144",
    "us-gov-west-1": "165093116878",
}
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
# Every function's Powertools Metrics land here; the monitoring dashboard graphs them.
METRICS_NAMESPACE = "StepFunctionsPatterns"


def powertools_release() -> str:
    pinned = re.search(r"^aws-lambda-powertools(?:\[[^\]]*\])?==(\S+)", POWERTOOLS_REQUIREMENTS.read_text(), re.M)
    if pinned is None:
        raise ValueError(f"{POWERTOOLS_REQUIREMENTS.name} pins no aws-lambda-powertools release")
    return pinned.group(1)


def powertools_layer_version() -> int:
    release = powertools_release()
    if release not in POWERTOOLS_LAYER_VERSIONS:
        raise ValueError(
            f"Powertools {release} is pinned in {POWERTOOLS_REQUIREMENTS.name}, but no layer version is known for "
            f"it: add the version of {POWERTOOLS_LAYER_NAME} AWS published for that release"
        )
    return POWERTOOLS_LAYER_VERSIONS[release]


def powertools_publisher(stack: Stack) -> str:
    """The account that publishes the layer in ``stack``'s region.

    A stack with a region resolves it here and refuses, at synthesis, a region no layer is
    published in. An environment-agnostic stack resolves it at deploy time from a mapping, where a
    region with no layer fails the deployment on the lookup before any resource is made.
    """
    if not Token.is_unresolved(stack.region):
        partition = RegionInfo.get(stack.region).partition
        if partition == "aws":
            return POWERTOOLS_PUBLISHER_COMMERCIAL
        if stack.region in POWERTOOLS_PUBLISHERS_ELSEWHERE:
            return POWERTOOLS_PUBLISHERS_ELSEWHERE[stack.region]
        raise ValueError(
            f"no {POWERTOOLS_LAYER_NAME} layer is published in {stack.region} (partition {partition}); "
            f"there is one in every commercial region and in {', '.join(POWERTOOLS_PUBLISHERS_ELSEWHERE)}"
        )
    publishers = CfnMapping(
        stack,
        "PowertoolsLayerPublisher",
        mapping={region: {"Account": account} for region, account in POWERTOOLS_PUBLISHERS_ELSEWHERE.items()},
    )
    commercial = CfnCondition(stack, "CommercialPartition", expression=Fn.condition_equals(Aws.PARTITION, "aws"))
    # Fn::FindInMap takes no Fn::If inside it, so the choice is made around it.
    return Fn.condition_if(
        commercial.logical_id, POWERTOOLS_PUBLISHER_COMMERCIAL, publishers.find_in_map(Aws.REGION, "Account")
    ).to_string()


def powertools_layer_arn(stack: Stack) -> str:
    return (
        f"arn:{stack.partition}:lambda:{stack.region}:{powertools_publisher(stack)}:layer:"
        f"{POWERTOOLS_LAYER_NAME}:{powertools_layer_version()}"
    )


def _stack_layers(stack: Stack) -> list[lambda_.ILayerVersion]:
    """One Powertools reference and one shared layer (code and zone data) per stack, created on first use."""
    holder = stack.node.try_find_child("LambdaLayers")
    if holder is None:
        holder = Construct(stack, "LambdaLayers")
        lambda_.LayerVersion.from_layer_version_arn(holder, "Powertools", powertools_layer_arn(stack))
        lambda_.LayerVersion(
            holder,
            "Shared",
            code=shared_layer_code(),
            compatible_runtimes=[RUNTIME],
            description="Helpers shared by this app's functions (patterns_common package) and the time zone data they read (tzdata)",
        )
    return [holder.node.find_child("Powertools"), holder.node.find_child("Shared")]


def shared_layer(scope: Construct) -> lambda_.ILayerVersion:
    """The layer of this app's shared code (patterns_common) in ``scope``'s stack: a team's function
    adds it to use a helper such as patterns_common.job_runner."""
    return _stack_layers(Stack.of(scope))[1]


class PythonFunction(Construct):
    """A function whose code is ``lambdas/<source>/`` with its handler in ``handler.lambda_handler``.

    The role is created here with only what the function needs: writing to its own log group and
    X-Ray. Callers add their grants to ``self.function``.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        source: str,
        description: str,
        timeout: Duration,
        environment: Mapping[str, str] | None = None,
        memory_size: int = 256,
        reserved_concurrency: int | None = None,
    ) -> None:
        super().__init__(scope, id_)
        asset_dir = LAMBDAS_DIR / source
        if not (asset_dir / "handler.py").is_file():
            raise ValueError(f"{asset_dir} has no handler.py")

        self.log_group = logs.LogGroup(
            self, "Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Execution role of the {source} function",
        )
        self.log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            code=lambda_.Code.from_asset(str(asset_dir), exclude=["__pycache__", "*.pyc"]),
            handler="handler.lambda_handler",
            description=description,
            timeout=timeout,
            memory_size=memory_size,
            reserved_concurrent_executions=reserved_concurrency,
            role=self.role,
            log_group=self.log_group,
            tracing=lambda_.Tracing.ACTIVE,
            layers=_stack_layers(Stack.of(self)),
            environment={
                "POWERTOOLS_SERVICE_NAME": source,
                "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
                "POWERTOOLS_LOG_LEVEL": "INFO",
                # Zones from the shared layer's pinned tzdata only, never the image's database.
                **ZONE_ENVIRONMENT,
                **(environment or {}),
            },
        )
        acknowledge(
            self,
            {
                "AwsSolutions::AwsSolutions-IAM5[Resource::*]": "X-Ray PutTraceSegments and "
                "PutTelemetryRecords support no resource-level permissions (AWS documents '*').",
                "AwsSolutions::AwsSolutions-L1": "Python 3.13 is the runtime this app targets; the "
                "Powertools layer it references is built for 3.13.",
            },
        )
