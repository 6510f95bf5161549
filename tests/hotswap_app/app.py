#!/usr/bin/env python3
"""A one-function, one-machine CDK app the hot-swap tests deploy beside the session's app, then change.

The tests copy this folder and edit the copy: ``greeter/handler.py`` (the code), ``definition.json``
(the machine; ``${GreeterArn}`` is substituted as the app's own machines are, into the template's
DefinitionString) and ``settings.json`` (what cannot be hot-swapped: the function's timeout). A second
stack, which the tests do not change, makes it an app of several stacks, as the app `make watch`
watches is; its queue's visibility timeout comes from the context ``queueVisibilitySeconds``, as the
app's Slack signing secret's name does: a watch synthesizing without it would redeploy that stack.
"""

import json
from pathlib import Path

from aws_cdk import App, Duration, Stack, aws_iam, aws_lambda, aws_sqs, aws_stepfunctions

HERE = Path(__file__).resolve().parent
STACK_NAME = "HotswapProbeStack"
NEIGHBOUR_STACK_NAME = "HotswapProbeNeighbourStack"

app = App()
stack = Stack(app, STACK_NAME)
settings = json.loads((HERE / "settings.json").read_text())
greeter = aws_lambda.Function(
    stack, "Greeter", runtime=aws_lambda.Runtime.PYTHON_3_13, handler="handler.lambda_handler",
    code=aws_lambda.Code.from_asset(str(HERE / "greeter")), timeout=Duration.seconds(settings["timeout_seconds"]),
)
definition = (HERE / "definition.json").read_text().replace("${GreeterArn}", greeter.function_arn)
role = aws_iam.Role(stack, "MachineRole", assumed_by=aws_iam.ServicePrincipal("states.amazonaws.com"))
greeter.grant_invoke(role)
aws_stepfunctions.StateMachine(stack, "Machine", definition_body=aws_stepfunctions.DefinitionBody.from_string(definition),
                               role=role)
aws_sqs.Queue(Stack(app, NEIGHBOUR_STACK_NAME), "Queue", enforce_ssl=True,
              visibility_timeout=Duration.seconds(int(app.node.try_get_context("queueVisibilitySeconds") or 30)))
app.synth()
