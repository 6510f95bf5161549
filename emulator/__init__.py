"""Local AWS for this app: moto in-process with the project's fixes, run with `python -m emulator`.

A development tool beside the app (the app never imports it): it deploys the real synthesized
templates with the real `cdk` CLI and runs every machine with real handler code, simulated time
and a real HTTP server standing in for Slack, with no AWS account and no Docker.
"""

# The one account and region the emulator answers as (moto's default account; LocalAws checks it is).
ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
