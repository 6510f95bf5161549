"""The Lambda sandbox: which Python the handlers run on and what they can import, as on AWS.

AWS: a Python function imports its own code, its layers and the runtime's SDK — "The Lambda Python
runtimes include the AWS SDK for Python (Boto3) and its dependencies"
(https://docs.aws.amazon.com/lambda/latest/dg/python-package.html) — and anything else fails its
init with ``Runtime.ImportModuleError``, "Unable to import module 'lambda_function': No module named
'...'" (https://repost.aws/knowledge-center/lambda-import-module-error-python).
"""

from __future__ import annotations

import json
import os
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from emulator.awslambda import runtime as lambda_runtime
from emulator.awslambda import sandbox as lambda_sandbox
from emulator.awslambda.sandbox import find_interpreter, substitution_notice
from tests.emulator_helpers import create_function, unique

ROOT = Path(__file__).resolve().parents[1]


def _pins(requirements: str) -> dict[str, str]:
    return dict(line.split("==") for line in (ROOT / requirements).read_text().splitlines() if "==" in line)


# -- which Python ----------------------------------------------------------------------------------
def _fake_python(directory: Path, name: str, version: str | None) -> Path:
    """An executable named like an interpreter that answers the version probe (or fails, like an
    inactive pyenv shim, when ``version`` is None)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f'#!/bin/sh\necho "{version} $0"\n' if version else "#!/bin/sh\nexit 127\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_the_runtimes_python_is_found_behind_a_failing_shim_in_pyenv(tmp_path):
    # Given: PATH has only a shim for python3.13 that fails, and 3.12; pyenv has 3.13.0 installed
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    _fake_python(bin_dir, "python3.13", None)
    _fake_python(bin_dir, "python3.12", "3.12.1")
    real = _fake_python(home / ".pyenv" / "versions" / "3.13.0" / "bin", "python3.13", "3.13.0")
    # When
    found = find_interpreter("python3.13", search_path=str(bin_dir), home=home, environ={})
    # Then
    assert (found.version, found.path) == ("3.13.0", str(real))
    assert substitution_notice(found, "python3.13") is None


def test_without_the_runtimes_python_the_closest_runs_and_one_line_says_so(tmp_path, capsys):
    # Given: 3.11 and 3.12 on PATH, 3.9 under $PYENV_ROOT; no 3.13 anywhere
    bin_dir, pyenv_root = tmp_path / "bin", tmp_path / "elsewhere"
    _fake_python(bin_dir, "python3.11", "3.11.7")
    closest = _fake_python(bin_dir, "python3.12", "3.12.1")
    _fake_python(pyenv_root / "versions" / "3.9.18" / "bin", "python3.9", "3.9.18")
    # When
    found = find_interpreter("python3.13", search_path=str(bin_dir), home=tmp_path, environ={"PYENV_ROOT": str(pyenv_root)})
    # Then
    assert (found.version, found.path) == ("3.12.1", str(closest))
    notice = substitution_notice(found, "python3.13")
    assert notice == f"Lambda sandbox: python3.13 is not installed here; handlers run on Python 3.12.1 ({closest}) instead"
    assert "\n" not in notice


# -- the Powertools release: one pin, deployed and tested --------------------------------------------
def test_the_sandbox_and_the_tests_run_the_powertools_release_the_stacks_deploy():
    from importlib.metadata import version

    from stacks.common.python_function import powertools_release

    sandbox = lambda_sandbox.locate()
    in_sandbox = next(sandbox.powertools_dir.glob("aws_lambda_powertools-*.dist-info")).name
    assert in_sandbox == f"aws_lambda_powertools-{powertools_release()}.dist-info"
    assert version("aws-lambda-powertools") == powertools_release()


# -- what a handler can import, in the emulator -------------------------------------------------------
def _invoke(aws, function: dict) -> tuple[dict, object]:
    response = aws.client("lambda").invoke(FunctionName=function["FunctionArn"], Payload=b"{}")
    return response, json.loads(response["Payload"].read())


def test_a_package_the_function_does_not_ship_fails_its_init_with_import_module_error(aws, role_arn):
    # Given: requests is in the development venv (moto needs it), not in Lambda
    function = create_function(aws, role_arn, "imports-requests", "handler",
                               "import requests\n\ndef lambda_handler(event, context):\n    return 'unreachable'\n")
    # When
    response, body = _invoke(aws, function)
    # Then
    assert response["FunctionError"] == "Unhandled"
    assert body["errorType"] == "Runtime.ImportModuleError"
    assert body["errorMessage"] == "Unable to import module 'handler': No module named 'requests'"


def test_powertools_is_importable_only_with_its_layer(aws, role_arn):
    # Given: a function without layers (every function of the app has the Powertools layer)
    function = create_function(aws, role_arn, "no-layers", "handler",
                               "import aws_lambda_powertools\n\ndef lambda_handler(event, context):\n    return 1\n")
    # When
    response, body = _invoke(aws, function)
    # Then
    assert body["errorType"] == "Runtime.ImportModuleError"
    assert body["errorMessage"] == "Unable to import module 'handler': No module named 'aws_lambda_powertools'"


REPORT = '''
import platform, sys
import boto3, botocore

def lambda_handler(event, context):
    return {"python": platform.python_version(), "boto3": boto3.__version__, "botocore": botocore.__version__,
            "path": sys.path}
'''


def test_the_worker_runs_the_runtimes_python_and_its_pinned_sdk(aws, role_arn):
    # Given
    function = create_function(aws, role_arn, "report", "handler", REPORT)
    expected = find_interpreter()
    # When
    response, body = _invoke(aws, function)
    # Then
    assert "FunctionError" not in response, body
    assert body["python"] == expected.version
    if substitution_notice(expected) is None:  # this machine has the runtime's Python
        assert body["python"].startswith("3.13.")
    pins = _pins("requirements-lambda-runtime.txt")
    assert (body["boto3"], body["botocore"]) == (pins["boto3"], pins["botocore"])
    # and nothing of the development venv is on its path
    assert not [entry for entry in body["path"] if ".venv" in entry or "site-packages" in entry]


def test_a_function_shipping_its_own_boto3_imports_that_one(aws, role_arn, tmp_path):
    # Given: an asset with a boto3 package of its own (AWS: /var/task comes first on sys.path)
    import io
    import zipfile

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("boto3/__init__.py", "__version__ = 'shipped-with-the-function'\n")
        zf.writestr("handler.py", "import boto3\n\ndef lambda_handler(event, context):\n    return boto3.__version__\n")
    function = aws.client("lambda").create_function(
        FunctionName=unique("own-boto3"), Runtime="python3.13", Role=role_arn, Handler="handler.lambda_handler",
        Code={"ZipFile": archive.getvalue()},
    )
    # When
    _, body = _invoke(aws, function)
    # Then
    assert body == "shipped-with-the-function"


EVENTS = '''
import botocore.handlers
import botocore.hooks
import botocore.session

# botocore's own rewriting of a name, by an emitter whose aliases are not the SDK's (one more that no
# name holds): it keeps a table of its own, empty until now.
own = botocore.hooks.EventAliaser(botocore.hooks.HierarchicalEmitter(),
                                  {**botocore.hooks.EVENT_ALIASES, "no-such-part": "never-used"})

def positional_only(request):
    pass

def with_kwargs(request, **kwargs):
    pass

def lambda_handler(event, context):
    first, second = botocore.session.Session(), botocore.session.Session()
    client = first.create_client("dynamodb", region_name="us-east-1")
    names = [spec[0] for spec in botocore.handlers.BUILTIN_HANDLERS] + event["names"]
    refused = []
    for session in (first, second, first):
        try:
            session.register("before-call.dynamodb", positional_only)
        except ValueError as error:
            refused.append(str(error).endswith("must accept keyword arguments (**kwargs)"))
        session.register("before-call.dynamodb", with_kwargs)
    return {"renamed": [own._alias_event_name(name) != name for name in event["names"]],
            "differ": [name for name in names if first._events._alias_event_name(name) != own._alias_event_name(name)],
            "one table": first._events._alias_name_cache is second._events._alias_name_cache
                         is client.meta.events._alias_name_cache,
            "refused": refused}
'''


def test_sessions_register_and_rename_events_as_botocore_does_with_what_the_instances_share(aws, role_arn):
    # The sandbox shares among every session and client one table of botocore's event names under its
    # aliases (EVENT_ALIASES), and its check that a handler takes **kwargs, per function: what a name
    # becomes must be what botocore itself makes of it, and a handler without **kwargs is refused each
    # time it is registered, as botocore refuses it.
    function = create_function(aws, role_arn, "events", "handler", EVENTS)
    aliased = ["before-call.autoscaling.application.RegisterScalableTarget", "after-call.apigateway.GetRestApis",
               "before-parameter-build.elasticloadbalancing.CreateLoadBalancer"]
    response = aws.client("lambda").invoke(FunctionName=function["FunctionName"], Payload=json.dumps({"names": aliased}))
    body = json.loads(response["Payload"].read())
    assert "FunctionError" not in response, body
    # (the names given are ones the aliases rewrite, so the comparison covers rewriting, not only passing through)
    assert body == {"renamed": [True, True, True], "differ": [], "one table": True, "refused": [True, True, True]}


def test_each_instance_has_its_own_module_state_and_environment(aws, role_arn):
    # Given: a handler that counts its invocations in module state and reports its pid and variable
    code = (
        "import os\ncount = 0\n\ndef lambda_handler(event, context):\n    global count\n    count += 1\n"
        "    return {'count': count, 'pid': os.getpid(), 'colour': os.environ.get('COLOUR')}\n"
    )
    first = create_function(aws, role_arn, "state-a", "handler", code, Environment={"Variables": {"COLOUR": "red"}})
    second = create_function(aws, role_arn, "state-b", "handler", code, Environment={"Variables": {"COLOUR": "blue"}})
    # When: the first function is invoked twice (one warm instance), the second once
    a1, a2, b1 = _invoke(aws, first)[1], _invoke(aws, first)[1], _invoke(aws, second)[1]
    # Then
    assert (a1["count"], a2["count"], b1["count"]) == (1, 2, 1)
    assert a1["pid"] == a2["pid"] != b1["pid"] != os.getpid()
    assert (a1["colour"], b1["colour"]) == ("red", "blue")


# Imports a module of the runtime's SDK that nothing else imports (a botocore client does not), and says
# whether its instance found it imported already: forked from a zygote that imported it after an earlier
# cold start did. Each invocation then waits (real time, at most 30 s) until as many instances as the
# event asks for have arrived: none is free for another invocation, so a burst needs one per invocation.
FINDS_ITS_IMPORT_SHARED = """
import os
import pathlib
import sys
import threading
import time

SHARED = "botocore.stub" in sys.modules
import botocore.stub  # noqa: E402,F401


def lambda_handler(event, context):
    arrived = pathlib.Path(event["arrived"])
    (arrived / str(os.getpid())).touch()
    deadline = time.monotonic() + 30
    while len(list(arrived.iterdir())) < event["instances"] and time.monotonic() < deadline:
        threading.Event().wait(0.05)
    return {"pid": os.getpid(), "shared": SHARED}
"""


def test_a_burst_on_a_new_function_forks_its_later_instances_from_what_the_first_imported(aws, role_arn, tmp_path):
    # Given: a function never invoked
    function = create_function(aws, role_arn, "burst", "handler", FINDS_ITS_IMPORT_SHARED)
    event = {"arrived": str(tmp_path), "instances": 4}
    # When: four invocations arrive at once, each needing an instance of its own
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: _invoke_with(aws, function, event), range(4)))
    # Then: four instances; only the first imported the module itself, the other three were forked
    # once the zygote held it, instead of each importing it anew at the same time
    assert len({answer["pid"] for answer in answers}) == 4
    assert sorted(answer["shared"] for answer in answers) == [False, True, True, True]


def test_an_instance_idle_past_its_keep_warm_time_is_stopped_and_the_next_invocation_is_cold(aws, role_arn, monkeypatch):
    # Given: a warm instance, and a keep-warm time shortened from 10 s so the test stays quick
    monkeypatch.setattr(lambda_runtime, "IDLE_INSTANCE_SECONDS", 0.5)
    code = "import os\ncount = 0\n\ndef lambda_handler(event, context):\n    global count\n    count += 1\n    return [count, os.getpid()]\n"
    function = create_function(aws, role_arn, "keep-warm", "handler", code)
    first, warm = _invoke(aws, function)[1], _invoke(aws, function)[1]
    # When: it stays idle past that time (the runtime looks once a second)
    time.sleep(2.5)
    cold = _invoke(aws, function)[1]
    # Then: the warm call reused the instance; the later one started a new one, with fresh module state
    assert (first[0], warm[0], cold[0]) == (1, 2, 1)
    assert first[1] == warm[1] != cold[1]
    with pytest.raises(ProcessLookupError):
        os.kill(first[1], 0)


def test_beyond_the_instance_limit_an_instance_is_stopped_as_soon_as_it_is_idle(aws, role_arn, monkeypatch):
    # Given: a limit already reached (the emulator's is 100 instances of all functions together)
    monkeypatch.setattr(lambda_runtime, "MAX_INSTANCES", 0)
    code = "import os\ncount = 0\n\ndef lambda_handler(event, context):\n    global count\n    count += 1\n    return [count, os.getpid()]\n"
    function = create_function(aws, role_arn, "over-limit", "handler", code)
    # When: the function is invoked twice in a row
    first, second = _invoke(aws, function)[1], _invoke(aws, function)[1]
    # Then: the first instance was stopped once idle; the second call was a cold start
    assert (first[0], second[0]) == (1, 1)
    assert first[1] != second[1]


# -- time zones: only the tzdata the shared layer ships ------------------------------------------------
# The app's functions set PYTHONTZPATH empty (stacks/common/zone_data.py): zoneinfo then searches no
# directory and reads zones only from the tzdata package on the path (docs.python.org zoneinfo,
# "Environment configuration"), here the one in the shared layer, as on AWS whatever the image carries.
READS_A_SCHEDULE = '''
import zoneinfo
from datetime import datetime

from patterns_common.oncall import InvalidSchedule, parse_schedule

def lambda_handler(event, context):
    try:
        schedule = parse_schedule(event)
    except InvalidSchedule as refused:
        return {"refused": str(refused)}
    import tzdata
    return {"tzpath": list(zoneinfo.TZPATH), "tzdata": tzdata.__file__, "tzdata_version": tzdata.__version__,
            "summer_offset_hours": datetime(2026, 7, 1, 12, tzinfo=schedule.zone).utcoffset().total_seconds() / 3600}
'''
BERLIN = {"schedule_id": "primary", "time_zone": "Europe/Berlin",
          "layers": [{"members": ["U0AAAAAA1"], "start": "2026-11-02T09:00", "shift": "P7D"}]}


def _deployed_layers(aws) -> tuple[str, str]:
    """(Powertools, shared) layer version ARNs of the deployed app's functions."""
    functions = [f for page in aws.client("lambda").get_paginator("list_functions").paginate() for f in page["Functions"]]
    [function] = [f for f in functions if f["FunctionName"].startswith("JobPoller") and "ValidateJobInput" in f["FunctionName"]]
    arns = [layer["Arn"] for layer in function["Layers"]]
    [powertools] = [arn for arn in arns if ":layer:AWSLambdaPowertoolsPythonV3-python313" in arn]
    [shared] = [arn for arn in arns if arn != powertools]
    return powertools, shared


def _invoke_with(aws, function: dict, event: dict) -> dict:
    response = aws.client("lambda").invoke(FunctionName=function["FunctionArn"], Payload=json.dumps(event).encode())
    assert "FunctionError" not in response, response["Payload"].read()
    return json.loads(response["Payload"].read())


def test_a_function_of_the_app_reads_zones_from_the_tzdata_in_its_shared_layer(aws, role_arn):
    # Given: a handler with the app's deployed layers and the environment every function of the app has
    layers = list(_deployed_layers(aws))
    function = create_function(aws, role_arn, "zones-from-layer", "handler", READS_A_SCHEDULE, Layers=layers,
                               Environment={"Variables": {"PYTHONTZPATH": ""}})
    # When
    body = _invoke_with(aws, function, BERLIN)
    # Then: no directory searched; the zone came from the layer's tzdata (2026.6, the pin), and is right:
    # Berlin keeps CEST, UTC+2, in July
    assert body["tzpath"] == []
    assert "/layers/" in body["tzdata"] and body["tzdata"].endswith("/python/tzdata/__init__.py")
    assert body["tzdata_version"] == "2026.6"
    assert body["summer_offset_hours"] == 2


def test_a_handler_fails_locally_when_the_layer_lacks_tzdata(aws, role_arn):
    # Given: the shared layer as it was before it shipped tzdata (its code only), published as a layer
    import io
    import zipfile

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        for path in (ROOT / "lambdas" / "shared_layer").rglob("*.py"):
            zf.write(path, path.relative_to(ROOT / "lambdas" / "shared_layer").as_posix())
    code_only = aws.client("lambda").publish_layer_version(
        LayerName=unique("shared-without-tzdata"), Content={"ZipFile": archive.getvalue()}, CompatibleRuntimes=["python3.13"],
    )["LayerVersionArn"]
    powertools, _ = _deployed_layers(aws)
    function = create_function(aws, role_arn, "zones-without-tzdata", "handler", READS_A_SCHEDULE,
                               Layers=[powertools, code_only], Environment={"Variables": {"PYTHONTZPATH": ""}})
    # When
    body = _invoke_with(aws, function, BERLIN)
    # Then: the host's own database (which the emulator's machine has) is not read, as on AWS
    assert body == {"refused": "schedule 'primary', time_zone: 'Europe/Berlin' cannot be looked up: "
                               "this machine has no time zone database (tzdata)"}


IMPORTS_THE_PARSER = ("from aws_lambda_powertools.utilities.parser import BaseModel\n\n"
                      "def lambda_handler(event, context):\n    return BaseModel.__name__\n")
LOOKS_UP_A_ZONE = '''
import sys
inherited = "zoneinfo" in sys.modules
import zoneinfo

def lambda_handler(event, context):
    try:
        zoneinfo.ZoneInfo("Europe/Berlin")
        found = True
    except zoneinfo.ZoneInfoNotFoundError:
        found = False
    return {"inherited": inherited, "tzpath": list(zoneinfo.TZPATH), "found": found}
'''


def test_a_zoneinfo_the_shared_interpreter_imported_reads_the_functions_pythontzpath(aws, role_arn):
    # Given: a function whose cold start imports Powertools' parser, whose pydantic imports zoneinfo;
    # what a cold start imports from a managed layer, the emulator's zygote imports too
    powertools, _ = _deployed_layers(aws)
    first = create_function(aws, role_arn, "imports-parser", "handler", IMPORTS_THE_PARSER, Layers=[powertools])
    _invoke_with(aws, first, {})
    # ... and a function with PYTHONTZPATH empty and no tzdata, forked from that zygote
    second = create_function(aws, role_arn, "zone-lookup", "handler", LOOKS_UP_A_ZONE, Layers=[powertools],
                             Environment={"Variables": {"PYTHONTZPATH": ""}})
    # When
    body = _invoke_with(aws, second, {})
    # Then: zoneinfo came already imported, yet searches no directory, as in a process started with
    # PYTHONTZPATH empty on AWS; with no tzdata the zone is not found
    assert body == {"inherited": True, "tzpath": [], "found": False}
