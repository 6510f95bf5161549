"""Answers a function URL request as the query's ``answer`` says, to pin how Lambda maps each answer."""

import base64
import json

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def handler(event, context):
    answer = (event.get("queryStringParameters") or {}).get("answer", "event")
    if answer == "string":
        return "Hello, world!"
    if answer == "object":
        return {"message": "Hello, world!"}
    if answer == "binary":
        return {"statusCode": 200, "headers": {"Content-Type": "image/png"},
                "body": base64.b64encode(PNG_SIGNATURE).decode(), "isBase64Encoded": True}
    if answer == "error":
        raise RuntimeError("the function failed")
    return {
        "statusCode": 201,
        "headers": {"Content-Type": "application/json", "My-Custom-Header": "Custom Value"},
        "cookies": ["Cookie_1=Value1; Expires=21 Oct 2021 07:48 GMT", "Cookie_2=Value2; Max-Age=78000"],
        "body": json.dumps(event),
    }
