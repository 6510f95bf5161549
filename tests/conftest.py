"""Test-session set-up shared by every tier: import paths and an AWS environment that is never real."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "lambdas" / "shared_layer" / "python"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

# Nothing a test does may reach a real AWS account.
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "StepFunctionsPatterns",
        "POWERTOOLS_SERVICE_NAME": "tests",
    }
)
os.environ.pop("AWS_PROFILE", None)
os.environ.pop("AWS_ENDPOINT_URL", None)


import json  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import pytest  # noqa: E402
from moto.core.config import default_user_config  # noqa: E402

from tests.parallel import DURATIONS, RECORD_DURATIONS, SHARED_ASSEMBLIES  # noqa: E402

# One boto3 default session for the whole test process, as an application has, not a new one per
# test (moto's mock_aws default, ``core.reset_boto3_session``): each new session read and parsed again
# the JSON model of every service it made a client for, a quarter of the fast tests' time. The
# session's credentials and region are this file's environment above, the same for every test.
default_user_config["core"]["reset_boto3_session"] = False

# Fixtures shared across test files: the browser tests' (``browser``, ``console``), the emulator tests'
# (``aws``, ``role_arn``) and the handlers' recorded trace and logs (``recorded``).
pytest_plugins = ("tests.browser", "tests.emulator_helpers", "tests.trace_record")


@dataclass(frozen=True)
class SynthesizedApp:
    outdir: Path
    stacks: object  # stacks.composition.AppStacks
    templates: dict[str, dict]

    def template_path(self, stack: str) -> Path:
        return self.outdir / f"{stack}.template.json"


@pytest.fixture
def machine_zone_not_utc():
    """The process's local zone set far from UTC (UTC+05:30, a POSIX TZ needing no zone database), as on
    a laptop running the tools: code meant to work in UTC or in a schedule's zone must not lean on it."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "IST-5:30"
    time.tzset()
    yield
    if before is None:
        os.environ.pop("TZ")
    else:
        os.environ["TZ"] = before
    time.tzset()


@pytest.fixture(scope="session")
def synthesized_app(tmp_path_factory: pytest.TempPathFactory) -> SynthesizedApp:
    """The whole app synthesized once, in-process, as `cdk deploy` synthesizes it.

    Same context as cdk.json and a concrete environment (the CLI sets CDK_DEFAULT_ACCOUNT/REGION).
    ``app.synth()`` raises when cdk-nag reports an unacknowledged finding, so every test that
    uses this fixture also proves the app is nag-clean.
    """
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from aws_cdk import App, Environment

    from stacks.composition import add_stacks
    from stacks.config import AppConfig

    outdir = tmp_path_factory.mktemp("cdk.out")
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    app = App(outdir=str(outdir), context=context)
    stacks = add_stacks(app, AppConfig.from_context(app.node.try_get_context), env=Environment(account="123456789012", region="us-east-1"))
    app.synth()
    templates = {
        name: json.loads((outdir / f"{name}.template.json").read_text())
        for name in ("AlertNotificationStack", "JobPollerStack", "MapRetryStack", "MonitoringStack")
    }
    return SynthesizedApp(outdir=outdir, stacks=stacks, templates=templates)


@pytest.fixture(scope="session")
def deployment(tmp_path_factory: pytest.TempPathFactory):
    """The whole app, and the example app beside it, deployed once per session into the local emulator
    with the real `cdk` CLI.

    Tests that use it run after every other test (see ``pytest_collection_modifyitems``):
    moto's ``mock_aws``, used by the handler tests, resets moto's backends whenever it starts.
    """
    from emulator.session import deployed

    # The example app (a team's app using the constructs, examples/) is deployed beside it, at the same time.
    # tests/parallel.py's shards deploy the apps the first of them synthesizes.
    shared = os.environ.get(SHARED_ASSEMBLIES)
    started = time.monotonic()
    with deployed(tmp_path_factory.mktemp("local-aws"), also=[ROOT / "examples"],
                  assemblies=Path(shared) if shared else None) as deployment:
        # The deployment is the session's, not the cost of the file whose test happened to need it first.
        _deployment_setup[os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]] = time.monotonic() - started
        yield deployment


SHARD_OPTIONS = ("--emulator-shard", "--other-shard")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--emulator-shard", default=None, metavar="I/N",
        help="run only shard I of N of the tests on the deployment, whole files each (tests/parallel.py)",
    )
    parser.addoption(
        "--other-shard", default=None, metavar="I/N",
        help="run only shard I of N of the tests not on the deployment, whole files each (tests/parallel.py)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Tests marked emulator that start emulators of their own (no deployment): the emulator's patches are
    # process-wide, so they run after every other test of the process, before its deployment starts. In
    # `make test` they end a process of the other tests (tests/parallel.py), which has no deployment, so
    # the emulator shards' seconds all go to the deployment's tests.
    own = [item for item in items if item.get_closest_marker("emulator") and "deployment" not in getattr(item, "fixturenames", ())]
    emulator_items = [item for item in items if "deployment" in getattr(item, "fixturenames", ())]
    for item in emulator_items:
        item.add_marker(pytest.mark.emulator)
        item.add_marker(pytest.mark.deployment)
    rest = [item for item in items if item not in own and "deployment" not in getattr(item, "fixturenames", ())]
    emulator_items = _shard(config, "--emulator-shard", emulator_items)
    kept = set(_shard(config, "--other-shard", rest + own))
    items[:] = [item for item in rest if item in kept] + [item for item in own if item in kept] + emulator_items


def _shard(config: pytest.Config, option: str, items: list[pytest.Item]) -> list[pytest.Item]:
    """The ``items`` of the shard ``option`` names (all of them without it); the rest deselected."""
    shard = config.getoption(option)
    if not shard:
        return items
    index, count = map(int, shard.split("/"))
    kept = set(_files_of_shard(items, index, count, option))
    config.hook.pytest_deselected(items=[item for item in items if item.path not in kept])
    return [item for item in items if item.path in kept]


def _files_of_shard(items: list[pytest.Item], index: int, count: int, option: str) -> list[Path]:
    """Whole test files, dealt so that each shard gets about as many seconds (longest file first).

    A file's seconds are those its tests of this kind (``option``) took in a real run, recorded in
    DURATIONS; a file not recorded yet counts the recorded seconds a test on average.
    """
    recorded = json.loads(DURATIONS.read_text()).get(option, {}) if DURATIONS.exists() else {}
    per_test = Counter(str(item.path.relative_to(ROOT)) for item in items)
    known = [name for name in per_test if name in recorded]
    average = sum(recorded[name] for name in known) / sum(per_test[name] for name in known) if known else 1.0
    seconds = {name: recorded.get(name, average * tests) for name, tests in per_test.items()}
    shards: list[list[Path]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for name in sorted(seconds, key=lambda name: (-seconds[name], name)):
        lightest = loads.index(min(loads))
        shards[lightest].append(ROOT / name)
        loads[lightest] += seconds[name]
    return shards[index]


_deployment_setup: dict[str, float] = {}  # the test during whose set-up the deployment was made -> its seconds
_file_seconds: Counter[str] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if os.environ.get(RECORD_DURATIONS) and report.when in ("setup", "call"):
        deployment = _deployment_setup.pop(report.nodeid, 0.0) if report.when == "setup" else 0.0
        _file_seconds[report.nodeid.split("::")[0]] += max(report.duration - deployment, 0.0)


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get(RECORD_DURATIONS)
    kind = next((option for option in SHARD_OPTIONS if session.config.getoption(option)), None)
    if target and _file_seconds and kind:
        Path(target, f"shard-{os.getpid()}.json").write_text(json.dumps({"option": kind, "seconds": _file_seconds}))
