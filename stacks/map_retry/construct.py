"""Map retry-failed pattern (seed 002): retry only the items that failed."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct


class MapRetry(Construct):
    def __init__(self, scope: Construct, id_: str) -> None:
        super().__init__(scope, id_)
        self.state_machines: list[sfn.IStateMachine] = []
