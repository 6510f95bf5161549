"""Seed 001 FetchNotificationCount: the loop's initial values from the alert item in DynamoDB."""

import os

import boto3

table = boto3.resource("dynamodb").Table(os.environ["ALERT_TABLE_NAME"])


def lambda_handler(event, context):
    item = table.get_item(Key={"alert_id": event["alert_id"]})["Item"]
    return {
        'notification_count': int(item['notification_count']),
        'notification_user_accounts': item['user_accounts'],
        'notification_user_count': len(item['user_accounts']),
        'is_first_alert': True
    }
