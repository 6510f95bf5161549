"""The Slack incoming webhook's secret, as every function that posts to the channel is given it."""

from __future__ import annotations

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager


def let_post_to_slack(function: lambda_.Function, webhook_secret: secretsmanager.ISecret | None) -> None:
    """Names the webhook's secret to ``function`` (``SLACK_WEBHOOK_SECRET_NAME``) and lets it read that secret.

    Without a secret (a team's notifier) the function is given neither: the app has no channel of its
    own, so it posts nothing.
    """
    if webhook_secret is None:
        return
    function.add_environment("SLACK_WEBHOOK_SECRET_NAME", webhook_secret.secret_name)
    # Read on this one secret only: a secret ARN ends in a random "-XXXXXX" that grant_read matches.
    webhook_secret.grant_read(function)


def take_turns_on_pace(function: lambda_.Function, pace_table: dynamodb.ITable) -> None:
    """Lets ``function`` take its posts' slots on Slack's shared pace item in ``pace_table``
    (``PACE_TABLE_NAME``): UpdateItem, the one call a reservation makes (slack_pace.reserve_slot_on)."""
    function.add_environment("PACE_TABLE_NAME", pace_table.table_name)
    pace_table.grant(function, "dynamodb:UpdateItem")
