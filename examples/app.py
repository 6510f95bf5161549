#!/usr/bin/env python3
"""A team's own CDK app using the three pattern constructs with its own functions, side by side in one
stack (docs/own-function.md walks through it). `cdk deploy` from this directory deploys it."""

import os
import sys
from pathlib import Path

# A team would install the patterns as a package; this example uses them from the repository it is in.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aws_cdk import App, Environment, Validations  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402
from team_stack import TeamPatternsStack  # noqa: E402

app = App()
account, region = os.environ.get("CDK_DEFAULT_ACCOUNT"), os.environ.get("CDK_DEFAULT_REGION")
TeamPatternsStack(app, "TeamPatternsStack", env=Environment(account=account, region=region) if account else None)
# cdk-nag fails synthesis on any unacknowledged finding, as in the patterns' own app.
Validations.of(app).add_plugins(AwsSolutionsChecks(app))
app.synth()
