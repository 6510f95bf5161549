"""Seed 002 GenerateRandomValue: the seed's States.MathRandom(1, 6) draw, reproducible per item and attempt.

The attempt is the number of times this execution has drawn for this item (a DynamoDB counter),
and the draw uses the same generator as the app's demo processor, so a given item fails on a
given attempt in the seed designs exactly when it fails there in ours.
"""

import os
import random

import boto3

table = boto3.resource("dynamodb").Table(os.environ["ATTEMPTS_TABLE_NAME"])


def lambda_handler(event, context):
    attempt = table.update_item(
        Key={"execution_id": event["execution_id"], "item_id": event["id"]},
        UpdateExpression="ADD attempts :one",
        ExpressionAttributeValues={":one": 1},
        ReturnValues="UPDATED_NEW",
    )["Attributes"]["attempts"]
    draw = random.Random(f"{event['id']}#{int(attempt)}").random()
    return {"value": int(draw * 5) + 1}
