"""Greets: the tests change the greeting and hot-swap the function."""

GREETING = "hello from the first code"


def lambda_handler(event, context):
    return {"greeting": GREETING}
