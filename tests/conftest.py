"""Test-session set-up shared by every tier: import paths and an AWS environment that is never real."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The wall-time bound of a test's wait on another process or thread: it catches a hang, not slowness.
# `make test` runs the tests beside the emulator shards at the lowest priority, where a subprocess can
# get about 1.5% of a core for a while (tests/parallel.py), so the bound is far above any normal wait.
HANG_SECONDS = 300
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


import functools  # noqa: E402
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


def _endpoints_read_once() -> None:
    """Every botocore session of the test process shares one reading of the endpoints file.

    Sessions still come and go: Powertools' providers make one each, and so does a handler reloaded
    for a test. Each read and parsed the 1 MB endpoints file again to resolve its first client's
    URL: a fifth of a process of the other tests in py-spy, 13 of its 89 s of CPU. The resolver only
    reads that data. Service models are not shared: a session's S3 client edits its model in place.
    """
    from botocore.loaders import Loader

    read: dict[tuple[str, ...], object] = {}
    load_data_with_path = Loader.load_data_with_path

    def load_data_with_path_once(self: Loader, name: str) -> object:
        if name != "endpoints":
            return load_data_with_path(self, name)
        key = tuple(self.search_paths)
        if key not in read:
            read[key] = load_data_with_path(self, name)
        return read[key]

    Loader.load_data_with_path = load_data_with_path_once


_endpoints_read_once()

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

    from emulator import ACCOUNT_ID, REGION
    from stacks.composition import add_stacks
    from stacks.config import AppConfig

    outdir = tmp_path_factory.mktemp("cdk.out")
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    app = App(outdir=str(outdir), context=context)
    stacks = add_stacks(app, AppConfig.from_context(app.node.try_get_context), env=Environment(account=ACCOUNT_ID, region=REGION))
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
        # Speed: the deployment's objects (moto's state, the engine's parse trees) live as long as the
        # session; out of the collector, its full collections no longer walk them every time.
        gc.collect()
        gc.freeze()
        yield deployment


EMULATOR_SHARD, OTHER_TESTS = "--emulator-shard", "--other-tests"
KINDS = (EMULATOR_SHARD, OTHER_TESTS)  # the options naming a kind of `make test` process, as DURATIONS keys them


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        EMULATOR_SHARD, default=None, metavar="I/N",
        help="run only shard I of N of the tests on the deployment, whole files each (tests/parallel.py)",
    )
    parser.addoption(
        OTHER_TESTS, action="store_true",
        help="run the tests not on the deployment, whole files longest first, for pytest-xdist's workers to "
             "take as they free up (--dist loadfile --no-loadscope-reorder; tests/parallel.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    # Speed: a test process allocates fast (an emulator shard parses every request and serializes
    # every answer) beside a heap of half a million objects (moto, aws-cdk-lib's bindings, the
    # deployment), and the collector at its default thresholds (700, 10, 10) took 5 to 17% of a
    # process's CPU (gc.callbacks: 17.8 s of emulator shard 1's 187 s, 12.8 s of an other-tests
    # worker's 77 s), mostly in full collections walking that heap again. With the youngest
    # generation collected once 20,000 container objects more are allocated than freed (not 700), and
    # without the objects that live as long as the process (pytest_collection_finish, the deployment
    # fixture), what is garbage is still collected, a little later.
    gc.set_threshold(20_000, 20, 20)


def pytest_collection_finish(session: pytest.Session) -> None:
    # What collection imported (test modules, moto, aws-cdk-lib) lives as long as the process: out of
    # the collector's full collections from now on.
    gc.collect()
    gc.freeze()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # A process imports only the test files it may run. Importing (and assertion-rewriting) all of them
    # cost each of make test's processes 13 s of CPU; an emulator shard's own files cost it about 4 s.
    if collection_path.is_relative_to(ROOT / "tests") and collection_path.match("test_*.py"):
        name = str(collection_path.relative_to(ROOT))
        if config.getoption(EMULATOR_SHARD):
            return name not in _files_of_shard(config) or None
        if config.getoption(OTHER_TESTS):
            return name in _recorded_only_for(EMULATOR_SHARD) or None
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kinds = kinds_of(items)
    for item in kinds[EMULATOR_SHARD]:
        item.add_marker(pytest.mark.emulator)  # the tests on the deployment too: the shards select the marker
    if any(config.getoption(option) for option in KINDS):
        check_recorded(_recorded(), kinds)
    rest = kinds[OTHER_TESTS]
    if config.getoption(OTHER_TESTS):
        # Longest first: xdist hands each worker the next file as it frees up, so the two end together.
        rest = longest_first(_recorded(), rest, OTHER_TESTS)
    items[:] = rest + _shard(config, kinds[EMULATOR_SHARD])


def kinds_of(items: list[pytest.Item]) -> dict[str, list[pytest.Item]]:
    """``items`` by the kind of `make test` process that runs them (its option, as DURATIONS keys them).

    The emulator shards run the tests on the emulator, at normal priority: they wait in wall time on
    the emulator's threads and Lambda instances, which the other tests' lowest priority could starve
    for longer than any wait allows (a 30 s wait for two cold starts failed that way). The emulator's
    patches are process-wide, so a process runs them after every other test: first those marked
    emulator that start emulators of their own, then those on the deployment, before which it starts.
    """
    own = [item for item in items if item.get_closest_marker("emulator") and "deployment" not in getattr(item, "fixturenames", ())]
    on_deployment = [item for item in items if "deployment" in getattr(item, "fixturenames", ())]
    on_emulator = own + on_deployment
    taken = {id(item) for item in on_emulator}
    return {EMULATOR_SHARD: on_emulator, OTHER_TESTS: [item for item in items if id(item) not in taken]}


def check_recorded(recorded: dict[str, dict[str, float]], kinds: dict[str, list[pytest.Item]]) -> None:
    """Refuse a run in which a file ``recorded`` (as in DURATIONS) for one kind of process only has tests
    of the other kind (``kinds``: items by option): no process of that kind would import it."""
    anywhere = _recorded_anywhere(recorded)
    moved = sorted(
        f"{name} ({option})" for option, items in kinds.items() for name in {_file_of(item) for item in items}
        if name in anywhere and name not in recorded.get(option, {})
    )
    if moved:
        raise pytest.UsageError(
            f"{DURATIONS.name} does not record these files for the processes that would run some of their tests now: "
            f"{', '.join(moved)}; record the durations again: python -m tests.parallel --record-durations"
        )


@functools.cache
def _recorded() -> dict[str, dict[str, float]]:
    return json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}


def _recorded_anywhere(recorded: dict[str, dict[str, float]]) -> set[str]:
    return {name for files in recorded.values() for name in files}


@functools.cache
def _recorded_only_for(option: str) -> set[str]:
    recorded = _recorded()
    return set(recorded.get(option, {})) - {name for other, files in recorded.items() if other != option for name in files}


def _file_of(item: pytest.Item) -> str:
    return str(item.path.relative_to(ROOT))


def longest_first(recorded: dict[str, dict[str, float]], items: list[pytest.Item], option: str) -> list[pytest.Item]:
    """``items`` whole files at a time, the file whose tests of the kind ``option`` took longest in a real
    run first; a file recorded for no kind yet counts the average of those recorded. Stable otherwise."""
    seconds = recorded.get(option, {})
    average = _average(seconds)
    return sorted(items, key=lambda item: -seconds.get(_file_of(item), average))


def _average(seconds: dict[str, float]) -> float:
    """The seconds a file no run has recorded yet counts: the average of those recorded (1 without any)."""
    return sum(seconds.values()) / len(seconds) if seconds else 1.0


def _shard(config: pytest.Config, items: list[pytest.Item]) -> list[pytest.Item]:
    """The ``items`` of the emulator shard the option names (all of them without it); the rest deselected."""
    if not config.getoption(EMULATOR_SHARD):
        return items
    kept = _files_of_shard(config)
    config.hook.pytest_deselected(items=[item for item in items if _file_of(item) not in kept])
    return [item for item in items if _file_of(item) in kept]


def _files_of_shard(config: pytest.Config) -> set[str]:
    """The test files of the emulator shard the option names, as DURATIONS and the files on disk deal them."""
    index, count = map(int, config.getoption(EMULATOR_SHARD).split("/"))
    return _dealt(count)[index]


@functools.cache
def _dealt(count: int) -> list[set[str]]:
    on_disk = {str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("test_*.py")}
    return deal(_recorded(), on_disk, EMULATOR_SHARD, count)


def deal(recorded: dict[str, dict[str, float]], on_disk: set[str], option: str, count: int) -> list[set[str]]:
    """The test files ``on_disk`` of ``count`` shards of the kind ``option``: whole files, dealt so that
    each shard gets about as many seconds, longest first; a shard works its own out before importing any.

    A file's seconds are those its tests of this kind took in a real run (``recorded``, by option, as in
    DURATIONS). The files recorded for no kind yet follow, at the seconds of a recorded file on average;
    a file recorded for the other kind only has no tests of this one.
    """
    known = {name: seconds for name, seconds in recorded.get(option, {}).items() if name in on_disk}
    new = {name: _average(known) for name in on_disk - _recorded_anywhere(recorded)}
    shards: list[set[str]] = [set() for _ in range(count)]
    loads = [0.0] * count
    for files in (known, new):
        for name in sorted(files, key=lambda name: (-files[name], name)):
            lightest = loads.index(min(loads))
            shards[lightest].add(name)
            loads[lightest] += files[name]
    return shards


_deployment_setup: dict[str, float] = {}  # the test during whose set-up the deployment was made -> its seconds
_file_seconds: Counter[str] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Under xdist the controller hears every worker's reports: it alone records them.
    if os.environ.get(RECORD_DURATIONS) and report.when in ("setup", "call") and not os.environ.get("PYTEST_XDIST_WORKER"):
        deployment = _deployment_setup.pop(report.nodeid, 0.0) if report.when == "setup" else 0.0
        _file_seconds[report.nodeid.split("::")[0]] += max(report.duration - deployment, 0.0)


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get(RECORD_DURATIONS)
    kind = next((option for option in KINDS if session.config.getoption(option)), None)
    if target and _file_seconds and kind:
        Path(target, f"shard-{os.getpid()}.json").write_text(json.dumps({"option": kind, "seconds": _file_seconds}))
