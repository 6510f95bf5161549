"""Powertools Logger, Tracer and Metrics configured from the function's environment."""

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
# Only AWS SDK calls are traced. X-Ray's http.client patch (patched by default) records every URL a
# function requests, and the Slack webhook URL the notifier and the follow-ups post to is a secret.
# The SDK patch records a short allow-list of request parameters (no item, message or task token).
tracer = Tracer(patch_modules=("botocore",))
metrics = Metrics()
