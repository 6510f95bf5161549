"""MapRetryStack: composes the Map retry-failed pattern and publishes its outputs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from stacks.map_retry.construct import MapRetry


class MapRetryStack(Stack):
    def __init__(self, scope: Construct, id_: str, **kwargs: Any) -> None:
        super().__init__(scope, id_, description="Map state machine that retries only failed items", **kwargs)
        pattern = MapRetry(self, "MapRetry")
        self.state_machines = pattern.state_machines
        CfnOutput(self, "StateMachineArn", value=pattern.machine.state_machine.state_machine_arn)
        CfnOutput(
            self,
            "ItemsBucketName",
            value=pattern.bucket.bucket_name,
            description="Upload item lists under inputs/ and start the machine with items_s3_uri",
        )
