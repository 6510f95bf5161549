"""cdk-nag acknowledgements: every one names the exact finding and says why it is acceptable."""

from __future__ import annotations

from typing import Mapping

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(construct: IConstruct, findings: Mapping[str, str]) -> None:
    """Acknowledge each ``finding id -> reason`` on ``construct`` (and its children).

    cdk-nag 3 matches findings one by one, e.g. ``AwsSolutions-IAM5[Resource::*]``.
    """
    for finding, reason in findings.items():
        Validations.of(construct).acknowledge(Acknowledgment(id=finding, reason=reason))
