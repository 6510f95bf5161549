"""`make test`: the suite as two pytest processes, one per core, each with its half of the work.

One process runs the tests on the app deployed into the emulator (the ``emulator`` marker: they share
one deployment and mostly wait on simulated time and Lambda workers); the other runs everything else
(logic, handlers on moto, templates, the emulator's own fidelity tests). They never shared a process
happily anyway: moto's ``mock_aws`` resets moto's backends, which is why conftest.py orders deployment
tests last. The emulator half streams to the terminal; the other half's report follows it. Extra
arguments go to both processes, e.g. ``python -m tests.parallel -x``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile


def main(extra: list[str]) -> int:
    command = [sys.executable, "-m", "pytest", *extra]
    with tempfile.TemporaryFile(mode="w+") as rest_output:
        rest = subprocess.Popen([*command, "-m", "not emulator"], stdout=rest_output, stderr=subprocess.STDOUT)
        print("== tests on the emulator's deployment (the other half's report follows)", flush=True)
        emulator_status = subprocess.call([*command, "-m", "emulator"])
        rest_status = rest.wait()
        rest_output.seek(0)
        print("\n== every other test", flush=True)
        sys.stdout.write(rest_output.read())
    # pytest exits 5 when a selection holds no test: a half with nothing to run is not a failure.
    failed = [name for name, status in (("emulator", emulator_status), ("the rest", rest_status)) if status not in (0, 5)]
    print(f"\n== {'FAILED: ' + ', '.join(failed) if failed else 'both halves passed'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
