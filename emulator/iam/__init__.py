"""IAM, enforced as a new AWS account enforces it; moto stores roles and policies but checks none.

A Lambda handler runs with its execution role's session credentials (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, as Lambda sets them), and a state machine's
service integrations call as its role; every request signed by such a session is checked
(``enforcement.py``) against the role's inline and attached policies (``policy.py``: Allow, Deny,
NotAction, wildcards, conditions) for each action and resource ARN the request names
(``requests.py``), and for S3 against the bucket's policy too. A refusal is the service's own
access-denied error with AWS's message. A state machine whose role does not exist or does not trust
states.amazonaws.com is refused at CreateStateMachine. The credentials ``serve`` prints, and the cdk
CLI's, are the account administrator's and are not checked.

Switched off with ``EMULATOR_IAM=off`` in the environment or ``python -m emulator serve --no-iam``
(docs/emulator.md).
"""

import os

# The environment variable that, set to "off", leaves requests unchecked.
SWITCH = "EMULATOR_IAM"


def enforced_by_default() -> bool:
    return os.environ.get(SWITCH, "on").lower() not in ("off", "0", "false", "no")
