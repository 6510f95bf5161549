#!/usr/bin/env python3
"""CDK entry point: reads context once and builds the four stacks of the Step Functions patterns."""

import os

from stacks import jsii_console

jsii_console.install()  # before aws_cdk starts Node: its warnings as text, not b'...'

from aws_cdk import App, Environment  # noqa: E402

from stacks.composition import add_stacks  # noqa: E402
from stacks.config import AppConfig  # noqa: E402

app = App()
config = AppConfig.from_context(app.node.try_get_context)
account, region = os.environ.get("CDK_DEFAULT_ACCOUNT"), os.environ.get("CDK_DEFAULT_REGION")
add_stacks(app, config, env=Environment(account=account, region=region) if account else None)
app.synth()
