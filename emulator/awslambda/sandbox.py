"""The Lambda sandbox: the Python a handler runs on and the only packages it can import besides its code.

On AWS a python3.13 function imports its own asset (/var/task), its layers and the SDK the runtime
bundles — nothing else. The emulator gives its workers the same: the runtime's pinned boto3/botocore
(requirements-lambda-runtime.txt) and, for the AWS-managed Powertools layer, the packages of the
pinned release (requirements-powertools-layer.txt), each installed into a directory of their own. The
interpreter is the runtime's Python version when the machine has it; otherwise the closest one found.

``python -m emulator.awslambda.sandbox`` (run by ``make setup``) builds the sandbox once; it is cached
under .lambda-sandbox/, keyed by the pins and the interpreter's version, so a change to either
builds a new one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = "python3.13"  # the runtime every function of this app declares
RUNTIME_REQUIREMENTS = ROOT / "requirements-lambda-runtime.txt"
POWERTOOLS_REQUIREMENTS = ROOT / "requirements-powertools-layer.txt"
CACHE_DIR = ROOT / ".lambda-sandbox"
_PYTHON_NAME = re.compile(r"python3\.(\d+)$")
# Printed by a candidate interpreter: its version and its real path (behind any version-manager shim).
_PROBE = "import sys; print('%d.%d.%d' % sys.version_info[:3], sys.executable)"


@dataclass(frozen=True)
class Interpreter:
    path: str
    version: str  # "3.13.0"

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])


def _candidates(search_path: str, home: Path, environ: dict[str, str]) -> list[Path]:
    """Every ``python3.N`` on PATH, then in pyenv, asdf and uv's installs, in that order."""
    found = [Path(d) / name for d in search_path.split(os.pathsep) if d and Path(d).is_dir()
             for name in sorted(os.listdir(d)) if _PYTHON_NAME.match(name)]
    pyenv_root = Path(environ.get("PYENV_ROOT") or home / ".pyenv")
    asdf_root = Path(environ.get("ASDF_DATA_DIR") or home / ".asdf")
    for pattern_root, pattern in (
        (pyenv_root / "versions", "*/bin/python3.*"),
        (asdf_root / "installs" / "python", "*/bin/python3.*"),
        (home / ".local" / "share" / "uv" / "python", "*/bin/python3.*"),
    ):
        found += sorted(p for p in pattern_root.glob(pattern) if _PYTHON_NAME.match(p.name))
    return [p for p in found if os.access(p, os.X_OK)]


def _probe(candidate: Path) -> Interpreter | None:
    try:
        result = subprocess.run([str(candidate), "-I", "-c", _PROBE], capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    if result.returncode != 0:  # e.g. a pyenv shim for a version that is installed but not active
        return None
    version, _, path = result.stdout.strip().partition(" ")
    return Interpreter(path=path or str(candidate), version=version)


def find_interpreter(runtime: str = RUNTIME, *, search_path: str | None = None, home: Path | None = None,
                     environ: dict[str, str] | None = None) -> Interpreter:
    """The runtime's Python (``python3.13``) if the machine has it, else the closest minor version found.

    Closest means the smallest distance in minor versions, the newer one on a tie; with nothing found
    at all, the interpreter running the emulator.
    """
    environ = dict(os.environ) if environ is None else environ
    wanted = int(_PYTHON_NAME.match(runtime).group(1))
    candidates = _candidates(environ.get("PATH", "") if search_path is None else search_path,
                             Path.home() if home is None else home, environ)
    ranked = sorted(candidates, key=lambda p: (abs(int(_PYTHON_NAME.match(p.name).group(1)) - wanted),
                                               -int(_PYTHON_NAME.match(p.name).group(1))))
    for candidate in ranked:
        interpreter = _probe(candidate)
        if interpreter is not None:
            return interpreter
    return Interpreter(path=sys.executable, version="%d.%d.%d" % sys.version_info[:3])


def substitution_notice(interpreter: Interpreter, runtime: str = RUNTIME) -> str | None:
    """The one line to print when handlers cannot run on the runtime's own Python version."""
    if f"python{interpreter.minor}" == runtime:
        return None
    return (f"Lambda sandbox: {runtime} is not installed here; handlers run on Python {interpreter.version} "
            f"({interpreter.path}) instead")


@dataclass(frozen=True)
class Sandbox:
    interpreter: Interpreter
    runtime_dir: Path  # the runtime's SDK, last on a handler's sys.path as /var/runtime is
    powertools_dir: Path  # the AWS-managed Powertools layer's python/ directory


def _key(interpreter: Interpreter) -> str:
    digest = hashlib.sha256(interpreter.minor.encode())
    for requirements in (RUNTIME_REQUIREMENTS, POWERTOOLS_REQUIREMENTS):
        digest.update(requirements.read_bytes())
    return digest.hexdigest()[:16]


def _sandbox(interpreter: Interpreter, root: Path) -> Sandbox:
    return Sandbox(interpreter, root / "runtime", root / "powertools" / "python")


def build(interpreter: Interpreter | None = None) -> Sandbox:
    """Install the pinned packages for ``interpreter``'s Python version, unless already cached."""
    interpreter = interpreter or find_interpreter()
    root = CACHE_DIR / _key(interpreter)
    if root.is_dir():
        return _sandbox(interpreter, root)
    partial = CACHE_DIR / f"{root.name}.partial-{uuid.uuid4().hex[:8]}"
    try:
        for requirements, target in ((RUNTIME_REQUIREMENTS, partial / "runtime"),
                                     (POWERTOOLS_REQUIREMENTS, partial / "powertools" / "python")):
            # The venv's pip installs wheels for the sandbox's Python version, which may have no pip.
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                 "--only-binary=:all:", "--no-compile", "--python-version", interpreter.minor,
                 "--target", str(target), "-r", str(requirements)],
                check=True,
            )
        # Byte-code for the sandbox's own Python, so no cold start compiles (or races to write) it.
        subprocess.run([interpreter.path, "-I", "-m", "compileall", "-q", str(partial)], check=True)
        try:
            partial.rename(root)
        except OSError:  # another set-up built it meanwhile
            if not root.is_dir():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return _sandbox(interpreter, root)


def locate() -> Sandbox:
    """The sandbox ``make setup`` built for this machine's interpreter; says so if it is missing."""
    interpreter = find_interpreter()
    root = CACHE_DIR / _key(interpreter)
    if not root.is_dir():
        raise RuntimeError(f"No Lambda sandbox for Python {interpreter.minor} and the current pins in {CACHE_DIR}; "
                           "run `make setup` (or python -m emulator.awslambda.sandbox)")
    return _sandbox(interpreter, root)


if __name__ == "__main__":
    build()
