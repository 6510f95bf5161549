"""`make test`: the suite as three parts sharing the machine's two cores.

Two processes run the tests on the emulator (the ``emulator`` marker, which tests/conftest.py gives
the tests on the deployment), each on a deployment of its own and half of those test files
(``--emulator-shard``, dealt on the seconds each file took in a real run): they spend much of their
time waiting on simulated time and Lambda workers, and wait in wall time too, so they run at normal
priority. The third part, at the lowest priority, runs everything else (``--other-tests``: logic,
handlers on moto, templates, the emulator's own fidelity tests) on two pytest-xdist workers, which
take the next file, longest first by the same record, whenever they free up; those tests never shared
a process happily with a deployment anyway: moto's ``mock_aws`` resets moto's backends, which is why
conftest.py orders the emulator's tests last. The first shard streams to the terminal; the other
reports follow it. Extra arguments go to every part, e.g. ``python -m tests.parallel -x``. Each part
ends with its ten slowest tests. The record is tests/shard_durations.json; ``python -m tests.parallel
--record-durations`` runs the suite and rewrites it from what the parts measured (run it on an
otherwise idle machine).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

SHARDS = 2
# The environment variable naming the directory where the shards share the apps' cloud assemblies
# (tests/conftest.py's deployment).
SHARED_ASSEMBLIES = "TESTS_SHARED_ASSEMBLIES"


# Every part's syntheses skip aws-cdk-lib's built-in CloudFormation validation: 6 to 9 s of CPU each
# (its WebAssembly rules engine is compiled anew in every synthesizing process; a full synth of the app
# took 14 s of CPU with it, 5 without), a dozen times a run for the deployments, redeploys and hot-swaps
# and two dozen for the templates' tests (11 s of CPU off those of test_app_infrastructure and
# test_alert_notification_infrastructure), each repeating what test_app_infrastructure checks once, in a
# process of its own, on the context the shards deploy with. `make demo` and a real `cdk deploy`
# validate as always.
VALIDATION = "CDK_VALIDATION"
ENVIRONMENT = {VALIDATION: "false"}
# The shards are the run's longest chain; the other tests, on the other hand, only have to end before
# them. Run at the lowest priority, they take what the shards leave idle (a shard waits on simulated
# time and Lambda workers for much of its run) instead of slowing them; as two workers, they fill
# both cores once the shards are done. Runs this way spent 0.60 to 0.62 s of wall time per second of
# CPU, against 0.68 with the other tests in one process at niceness 0 (7:25 for 656 s of CPU). A test
# at this priority gets about 1.5% of a core while the shards keep both busy, so none of them waits on
# an emulator in wall time: those starting emulators of their own run in the shards.
OTHER_NICENESS = 19
# Dealt in advance, as the emulator shards are, the other tests' two halves ended 38 s apart in two
# runs (their recorded seconds are wall seconds at the lowest priority, which vary from run to run),
# one core idle meanwhile. Handed out as workers free up, whole files in the order conftest.py gives
# them (longest first), they end within about a file.
OTHER_WORKERS = ["-n", str(SHARDS), "--dist", "loadfile", "--no-loadscope-reorder"]
SLOWEST = 10
# Seconds each test file took, by kind of part (its option), from a real run of every part
# (--record-durations rewrites it); tests/conftest.py deals the emulator shards and orders the other tests on them.
DURATIONS = Path(__file__).with_name("shard_durations.json")
# Set by --record-durations: the directory where tests/conftest.py has each part write its files' seconds.
RECORD_DURATIONS = "TESTS_RECORD_DURATIONS"


def main(extra: list[str]) -> int:
    record = "--record-durations" in extra
    extra = [arg for arg in extra if arg != "--record-durations"]
    with tempfile.TemporaryDirectory(prefix="cdk-assemblies-") as assemblies, \
            tempfile.TemporaryDirectory(prefix="shard-durations-") as measured:
        # The shards deploy the same apps: the first to get there synthesizes each, the other waits for it.
        os.environ[SHARED_ASSEMBLIES] = assemblies
        if record:
            os.environ[RECORD_DURATIONS] = measured
        status = _run_parts([*extra, f"--durations={SLOWEST}"])
        if record and status == 0:
            seconds: dict[str, Counter[str]] = {}
            for shard in Path(measured).glob("shard-*.json"):
                recorded = json.loads(shard.read_text())
                seconds.setdefault(recorded["option"], Counter()).update(recorded["seconds"])
            DURATIONS.write_text(json.dumps(
                {option: {name: round(s, 1) for name, s in sorted(files.items())} for option, files in sorted(seconds.items())},
                indent=1) + "\n")
            print(f"== {DURATIONS.name}: the seconds of {sum(map(len, seconds.values()))} files' tests, for the next runs' shards")
        return status


class Part(NamedTuple):
    arguments: list[str]
    environment: dict[str, str]
    niceness: int


def _run_parts(extra: list[str]) -> int:
    command = [sys.executable, "-m", "pytest", *extra]
    environment = {**os.environ, **ENVIRONMENT}
    parts = {
        **{f"emulator shard {i + 1}/{SHARDS}": Part(["-m", "emulator", f"--emulator-shard={i}/{SHARDS}"], environment, 0)
           for i in range(SHARDS)},
        "every other test": Part(["-m", "not emulator", "--other-tests", *OTHER_WORKERS], environment, OTHER_NICENESS),
    }

    def start(part: Part, output: Any) -> subprocess.Popen:
        return subprocess.Popen([*command, *part.arguments], stdout=output, stderr=subprocess.STDOUT if output else None,
                                env=part.environment, preexec_fn=lambda: os.nice(part.niceness))

    [(first, first_part), *others] = parts.items()
    outputs = {name: tempfile.TemporaryFile(mode="w+") for name, _ in others}
    running = {name: start(part, outputs[name]) for name, part in others}
    print(f"== {first} (the other reports follow it)", flush=True)
    statuses = {first: start(first_part, None).wait()}
    for name, process in running.items():
        statuses[name] = process.wait()
        outputs[name].seek(0)
        print(f"\n== {name}", flush=True)
        sys.stdout.write(outputs[name].read())
        outputs[name].close()
    # pytest exits 5 when a selection holds no test: a part with nothing to run is not a failure.
    failed = [name for name, status in statuses.items() if status not in (0, 5)]
    print(f"\n== {'FAILED: ' + ', '.join(failed) if failed else 'every part passed'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
