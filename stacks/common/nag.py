"""cdk-nag acknowledgements: every one names the exact finding and says why it is acceptable."""

from __future__ import annotations

from typing import Any, Mapping

import jsii
from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct, IValidation


def acknowledge(construct: IConstruct, findings: Mapping[str, str]) -> None:
    """Acknowledge each ``finding id -> reason`` on ``construct`` (and its children).

    cdk-nag 3 matches findings one by one, e.g. ``AwsSolutions-IAM5[Resource::*]``.
    """
    for finding, reason in findings.items():
        Validations.of(construct).acknowledge(Acknowledgment(id=finding, reason=reason))


def nag_name(resolved: Any) -> str:
    """How cdk-nag spells a resolved CloudFormation value in a finding id.

    ``Ref`` becomes ``<Name>``, ``Fn::GetAtt`` ``<LogicalId.Attribute>``, an import its export name;
    a stack with an environment renders literal region/account, one without ``<AWS::Region>``.
    """
    if isinstance(resolved, str):
        return resolved
    if "Fn::ImportValue" in resolved:
        return resolved["Fn::ImportValue"]
    if "Fn::GetAtt" in resolved:
        return "<{}.{}>".format(*resolved["Fn::GetAtt"])
    if "Ref" in resolved:
        return f"<{resolved['Ref']}>"
    separator, parts = resolved["Fn::Join"]
    return separator.join(nag_name(part) for part in parts)


def acknowledge_wildcard_resource(construct: IConstruct, resource: str, reason: str) -> None:
    """Acknowledge AwsSolutions-IAM5 for one wildcard ``resource`` in ``construct``'s policies.

    The finding id is computed when the app is validated: by then CDK has turned references to
    other stacks into the imports cdk-nag names, which it only does after construction.
    """
    construct.node.add_validation(_WildcardAcknowledgement(construct, resource, reason))


@jsii.implements(IValidation)
class _WildcardAcknowledgement:
    def __init__(self, construct: IConstruct, resource: str, reason: str) -> None:
        self._construct, self._resource, self._reason = construct, resource, reason

    def validate(self) -> list[str]:
        name = nag_name(Stack.of(self._construct).resolve(self._resource))
        acknowledge(self._construct, {f"AwsSolutions::AwsSolutions-IAM5[Resource::{name}]": self._reason})
        return []
