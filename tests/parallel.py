"""`make test`: the suite as three pytest processes sharing the machine's two cores.

Two processes run the tests on the app deployed into the emulator (the ``deployment`` marker, which
tests/conftest.py gives them), each on a deployment of its own and half of those test files
(``--emulator-shard``): they spend much of their time waiting on simulated time and Lambda workers, so
two of them fill the cores. The third runs everything else (logic, handlers on moto, templates, the
emulator's own fidelity tests, and last those starting emulators of their own), which never
shared a process happily with a deployment anyway: moto's ``mock_aws`` resets moto's backends, which
is why conftest.py orders deployment tests last. The first shard streams to the terminal; the other
reports follow it. Extra arguments go to every process, e.g. ``python -m tests.parallel -x``. Each part
ends with its ten slowest tests. The shards are dealt on the seconds each file took in a real run
(tests/shard_durations.json); ``python -m tests.parallel --record-durations`` runs the suite and
rewrites that file from what the shards measured (run it on an otherwise idle machine).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

SHARDS = 2
# The environment variable naming the directory where the shards share the apps' cloud assemblies
# (tests/conftest.py's deployment).
SHARED_ASSEMBLIES = "TESTS_SHARED_ASSEMBLIES"


# The shards' syntheses skip aws-cdk-lib's built-in CloudFormation validation: 6 to 9 s of CPU each
# (its WebAssembly rules engine is compiled anew in every synthesizing process; a full synth of the app
# took 14 s of CPU with it, 5 without), a dozen times a run for the deployments, redeploys and hot-swaps,
# each repeating what test_app_infrastructure checks once on the context they deploy with. `make demo`
# and a real `cdk deploy` validate as always.
SHARD_ENVIRONMENT = {"CDK_VALIDATION": "false"}
SLOWEST = 10
DURATIONS = Path(__file__).with_name("shard_durations.json")
RECORD_DURATIONS = "TESTS_RECORD_DURATIONS"  # tests/conftest.py writes each shard's seconds there


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
            seconds: Counter[str] = Counter()
            for shard in Path(measured).glob("shard-*.json"):
                seconds.update(json.loads(shard.read_text()))
            DURATIONS.write_text(json.dumps({name: round(s, 1) for name, s in sorted(seconds.items())}, indent=1) + "\n")
            print(f"== {DURATIONS.name}: the seconds of {len(seconds)} files, for the next runs' shards")
        return status


def _run_parts(extra: list[str]) -> int:
    command = [sys.executable, "-m", "pytest", *extra]
    shard_env = {**os.environ, **SHARD_ENVIRONMENT}
    parts = {  # name -> (arguments, environment; None: this process's)
        **{f"emulator shard {i + 1}/{SHARDS}": (["-m", "deployment", f"--emulator-shard={i}/{SHARDS}"], shard_env)
           for i in range(SHARDS)},
        "every other test": (["-m", "not deployment"], None),
    }
    [(first, (first_args, first_env)), *others] = parts.items()
    outputs = {name: tempfile.TemporaryFile(mode="w+") for name, _ in others}
    running = {name: subprocess.Popen([*command, *args], stdout=outputs[name], stderr=subprocess.STDOUT, env=env)
               for name, (args, env) in others}
    print(f"== {first} (the other reports follow it)", flush=True)
    statuses = {first: subprocess.call([*command, *first_args], env=first_env)}
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
