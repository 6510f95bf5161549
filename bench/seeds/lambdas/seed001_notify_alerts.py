"""Seed 001 NotifyAlerts: one Slack post for the user the countdown points at, then the seed's counter code."""

import json
import os
import urllib.request

SLACK_WEBHOOK_URL = os.environ["SLACK_WEBHOOK_URL"]


def post_to_slack(user):
    request = urllib.request.Request(
        SLACK_WEBHOOK_URL,
        data=json.dumps({"text": f"Alert for {user}"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


def lambda_handler(event, context):
    accounts = event['notification_user_accounts']
    post_to_slack(accounts[sorted(accounts, key=int)[event['notification_user_count']]])

    notification_user_count = event['notification_user_count']
    notification_count = event['notification_count']

    if notification_user_count == 0:
        notification_count -= 1

    output = event
    output['notification_count'] = notification_count
    output['notification_user_count'] = notification_user_count - 1

    return output
