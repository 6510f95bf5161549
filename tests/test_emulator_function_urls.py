"""Lambda function URLs in the emulator answer as AWS documents them (issue 22, part 2).

A one-function stack (an ``AWS::Lambda::Url`` with auth type NONE, as CDK's ``add_function_url``
writes it) is deployed with the real `cdk` CLI beside the app; its handler
(tests/function_url_echo/index.py) answers each request as its ``answer`` query parameter says.
Expected values come from "Invoking Lambda function URLs"
(https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html), its request and response
payload sections, unless another page is cited.
"""

from __future__ import annotations

import base64
import http.client
import io
import json
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

import pytest

from emulator.deploy import deploy_assembly

ECHO = Path(__file__).with_name("function_url_echo")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def echo_url(deployment, tmp_path_factory: pytest.TempPathFactory) -> str:
    from aws_cdk import App, CfnOutput, Stack
    from aws_cdk import aws_lambda as lambda_

    outdir = tmp_path_factory.mktemp("function-url-assembly")
    app = App(outdir=str(outdir))
    stack = Stack(app, "FunctionUrlTestStack")
    echo = lambda_.Function(stack, "Echo", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                            code=lambda_.Code.from_asset(str(ECHO)))
    CfnOutput(stack, "EchoUrl", value=echo.add_function_url(auth_type=lambda_.FunctionUrlAuthType.NONE).url)
    app.synth()
    return deploy_assembly(deployment.aws, outdir)["FunctionUrlTestStack"]["EchoUrl"]


@pytest.fixture(scope="module")
def api_function(deployment) -> Iterator[str]:
    """The same handler as a function created through the Lambda API, with no URL yet."""
    lam = deployment.client("lambda")
    role = deployment.client("iam").create_role(RoleName="function-url-test", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }))["Role"]["Arn"]
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(ECHO / "index.py", "index.py")
    name = "function-url-test-api"
    lam.create_function(FunctionName=name, Runtime="python3.13", Role=role, Handler="index.handler",
                        Code={"ZipFile": archive.getvalue()})
    yield name
    lam.delete_function(FunctionName=name)


def _event(response: Answer) -> dict:
    assert response.status == 201, response.content
    return response.json()


def test_the_stack_output_is_a_loopback_url_that_curl_reaches(deployment, echo_url):
    # Given: the FunctionUrl attribute CloudFormation resolved into the output
    lam = deployment.client("lambda")
    [function] = [f for f in lam.list_functions()["Functions"] if f["FunctionName"].startswith("FunctionUrlTestStack-Echo")]
    # Then: the URL the Lambda API gives for the function, on loopback, ending with "/"
    assert echo_url == lam.get_function_url_config(FunctionName=function["FunctionName"])["FunctionUrl"]
    assert echo_url.startswith("http://127.0.0.1:") and echo_url.endswith("/")
    # When: curl asks it, as the README tells a person to
    answer = subprocess.run(["curl", "-s", "-S", "--max-time", "60", f"{echo_url}?answer=object"],
                            capture_output=True, text=True, check=True)
    # Then
    assert json.loads(answer.stdout) == {"message": "Hello, world!"}


def test_a_get_becomes_the_documented_request_payload(deployment, echo_url):
    # Given: repeated query parameters, the header "header2" twice, two cookies, a mixed-case header
    before = deployment.aws.clock.now()
    # When
    response = _request(f"{echo_url}my/path?parameter1=value1&parameter1=value2&parameter2=value", headers=[
        ("header2", "value1"), ("header2", "value2"), ("Cookie", "cookie1=a; cookie2=b"), ("User-Agent", "agent"),
        ("X-Mixed-Case", "Kept As Sent")])
    after = deployment.aws.clock.now()
    event = _event(response)
    # Then: version 2.0, the raw path and query as sent, parameters and headers comma-joined
    assert event["version"] == "2.0" and event["routeKey"] == "$default"
    assert event["rawPath"] == "/my/path"
    assert event["rawQueryString"] == "parameter1=value1&parameter1=value2&parameter2=value"
    assert event["queryStringParameters"] == {"parameter1": "value1,value2", "parameter2": "value"}
    assert event["headers"]["header2"] == "value1,value2"
    assert event["headers"]["x-mixed-case"] == "Kept As Sent"
    assert all(name == name.lower() for name in event["headers"])
    assert event["cookies"] == ["cookie1=a", "cookie2=b"]
    assert event["isBase64Encoded"] is False and "body" not in event
    context = event["requestContext"]
    assert context["http"] == {"method": "GET", "path": "/my/path", "protocol": "HTTP/1.1",
                               "sourceIp": "127.0.0.1", "userAgent": "agent"}
    assert context["routeKey"] == context["stage"] == "$default"
    assert context["domainPrefix"] == context["apiId"] and len(context["apiId"]) == 32
    assert context["accountId"] == "123456789012" and context["requestId"]
    # The request's time is simulated time, in both of its documented forms
    assert before * 1000 - 1 <= context["timeEpoch"] <= after * 1000 + 1
    from datetime import datetime, timezone

    shown = datetime.strptime(context["time"], "%d/%b/%Y:%H:%M:%S %z")
    assert shown == datetime.fromtimestamp(context["timeEpoch"] // 1000, timezone.utc)


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


def _request(url: str, method: str = "GET", body: bytes | None = None, headers: list[tuple[str, str]] = ()) -> Answer:
    """One HTTP request as given: a header may be sent twice, as a browser or curl may."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        connection.putrequest(method, target, skip_accept_encoding=True)
        for name, value in headers:
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        raw = connection.getresponse()
        return Answer(raw.status, raw.headers, raw.read())
    finally:
        connection.close()


@pytest.mark.parametrize(("content_type", "body", "expected_body", "base64_encoded"), [
    ("application/json", b'{ "example": "test" }', '{ "example": "test" }', False),
    ("text/plain; charset=utf-8", "Hello from client!".encode(), "Hello from client!", False),
    # "If the content type of the request is binary, the body is base64-encoded": an image, and a
    # form post too (only text/*, JSON, XML, JavaScript and YAML types arrive as text).
    ("image/png", PNG_SIGNATURE, base64.b64encode(PNG_SIGNATURE).decode(), True),
    ("application/x-www-form-urlencoded", b"payload=%7B%7D", base64.b64encode(b"payload=%7B%7D").decode(), True),
])
def test_a_body_arrives_raw_when_text_and_base64_when_binary(echo_url, content_type, body, expected_body, base64_encoded):
    # When
    event = _event(_request(echo_url, "POST", body, [("Content-Type", content_type)]))
    # Then
    assert event["body"] == expected_body
    assert event["isBase64Encoded"] is base64_encoded
    assert event["requestContext"]["http"]["method"] == "POST"


def test_a_response_with_status_code_sets_status_headers_and_cookies(echo_url):
    # When: the function answers statusCode 201, two headers and two cookies (the doc's example)
    response = _request(echo_url)
    # Then: cookies become set-cookie headers, one per cookie
    assert response.status == 201
    assert response.headers["content-type"] == "application/json"
    assert response.headers["my-custom-header"] == "Custom Value"
    assert response.headers.get_all("set-cookie") == [
        "Cookie_1=Value1; Expires=21 Oct 2021 07:48 GMT", "Cookie_2=Value2; Max-Age=78000"]


@pytest.mark.parametrize(("answer", "content"), [
    # "Example output for a string response": the client sees the JSON string, quotes included
    ("string", b'"Hello, world!"'),
    # "Example output for a JSON response": the object is the body
    ("object", None),
])
def test_an_answer_without_status_code_is_a_200_json_body(echo_url, answer, content):
    # When
    response = _request(f"{echo_url}?answer={answer}")
    # Then: statusCode 200, content-type application/json, the function's output as the body
    assert response.status == 200
    assert response.headers["content-type"] == "application/json"
    if content is not None:
        assert response.content == content
    else:
        assert response.json() == {"message": "Hello, world!"}


def test_a_base64_encoded_answer_reaches_the_client_as_bytes(echo_url):
    response = _request(f"{echo_url}?answer=binary")
    assert response.status == 200
    assert response.headers["content-type"] == "image/png"
    assert response.content == PNG_SIGNATURE


def test_a_function_error_is_a_502(echo_url):
    response = _request(f"{echo_url}?answer=error")
    assert response.status == 502


def test_a_request_over_the_6_mb_invocation_payload_quota_is_refused_with_413(echo_url):
    # Lambda quotas (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html):
    # 6 MB per synchronous invocation request.
    response = _request(echo_url, "POST", b"x" * (6 * 1024 * 1024 + 1), [("Content-Type", "text/plain")])
    assert response.status == 413


def test_a_url_made_through_the_api_needs_both_permissions_and_answers_404_once_deleted(deployment, api_function):
    # Given: a URL created with CreateFunctionUrlConfig and no resource-based policy yet
    lam = deployment.client("lambda")
    url = lam.create_function_url_config(FunctionName=api_function, AuthType="NONE")["FunctionUrl"]
    assert url.startswith("http://127.0.0.1:") and url.endswith("/")
    # Then: forbidden until the policy allows lambda:InvokeFunctionUrl and lambda:InvokeFunction
    # for everyone (https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html, since October 2025)
    assert _request(f"{url}?answer=object").status == 403
    lam.add_permission(FunctionName=api_function, StatementId="url", Action="lambda:InvokeFunctionUrl",
                       Principal="*", FunctionUrlAuthType="NONE")
    assert _request(f"{url}?answer=object").status == 403
    lam.add_permission(FunctionName=api_function, StatementId="invoke", Action="lambda:InvokeFunction", Principal="*")
    assert _request(f"{url}?answer=object").json() == {"message": "Hello, world!"}
    # When: the URL is deleted
    lam.delete_function_url_config(FunctionName=api_function)
    # Then: nothing answers there any more but a 404
    assert _request(f"{url}?answer=object").status == 404
