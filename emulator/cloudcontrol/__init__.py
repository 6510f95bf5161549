"""Cloud Control API, emulated: what `cdk deploy --hotswap` and `cdk watch` send through it.

Since CLI 2.1118.2 the CDK hot-swaps a state machine (and other types) with Cloud Control's
``UpdateResource``: a JSON Patch (RFC 6902) on the resource's properties as its CloudFormation
registry schema names them. moto has no Cloud Control service at all. ``api.py`` answers
``UpdateResource``, ``GetResource`` and ``GetResourceRequestStatus`` on the emulator's endpoint;
``state_machine.py`` is the resource handler of ``AWS::StepFunctions::StateMachine``, reading and
updating through the Step Functions API itself, so the emulator's Step Functions fixes apply;
``schemas.py`` reads the registry schemas (also what CloudFormation's ``DescribeType`` answers).

One difference from AWS: a request is complete when its response is sent (its ProgressEvent is
``SUCCESS`` or ``FAILED`` at once, never ``IN_PROGRESS``), so the next execution after
`cdk deploy --hotswap` returns runs the new definition.
"""

from emulator.cloudcontrol.api import TARGET_PREFIX, CloudControl

__all__ = ["TARGET_PREFIX", "CloudControl"]
