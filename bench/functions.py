"""The app's Lambda assets: each handler module's import time (a cold-start proxy) and zip size."""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from emulator.server import ACCOUNT_ID, REGION
from emulator.session import Deployment

LAMBDAS_DIR = Path(__file__).resolve().parents[1] / "lambdas"
SHARED_LAYER_DIR = LAMBDAS_DIR / "shared_layer"

# What a fresh Lambda sandbox does first: import the handler module, code before layers on sys.path.
IMPORT_PROBE = """
import sys, time
sys.path[:0] = sys.argv[1:]
started = time.perf_counter()
import handler
print(time.perf_counter() - started)
"""


@dataclass(frozen=True)
class Asset:
    name: str
    zip_bytes: int
    import_seconds: float | None  # None for the layer, which has no handler


def _handler_text(code: bytes) -> str | None:
    with zipfile.ZipFile(io.BytesIO(code)) as archive:
        return archive.read("handler.py").decode() if "handler.py" in archive.namelist() else None


def _deployed_functions() -> list:
    from moto.awslambda.models import lambda_backends

    return list(lambda_backends[ACCOUNT_ID][REGION]._lambdas.all())


def _environment(function: object, deployment: Deployment) -> dict[str, str]:
    """The function's own variables over what the Lambda runtime sets, pointed at the emulator."""
    return {
        "PATH": "/usr/bin:/bin",
        "LANG": "en_US.UTF-8",
        "TZ": "UTC",
        "AWS_LAMBDA_FUNCTION_NAME": function.function_name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size),
        "POWERTOOLS_TRACE_DISABLED": "true",
        **deployment.aws.environment,
        **{key: str(value) for key, value in (function.environment_vars or {}).items()},
    }


def _import_seconds(asset_dir: Path, env: dict[str, str]) -> float:
    output = subprocess.run(
        [sys.executable, "-P", "-c", IMPORT_PROBE, str(asset_dir), str(SHARED_LAYER_DIR / "python")],
        cwd=asset_dir, env=env, capture_output=True, text=True, check=True,
    )
    return float(output.stdout.strip().splitlines()[-1])


def assets(deployment: Deployment) -> list[Asset]:
    """Every asset under lambdas/, matched to its deployed function by the handler it ships."""
    functions = _deployed_functions()
    by_handler = {}
    for function in functions:
        text = _handler_text(function.code_bytes)
        if text is not None:
            by_handler.setdefault(text, function)
    found = []
    for asset_dir in sorted(p for p in LAMBDAS_DIR.iterdir() if (p / "handler.py").is_file()):
        function = by_handler.get((asset_dir / "handler.py").read_text())
        if function is None:
            raise LookupError(f"no deployed function ships {asset_dir.name}/handler.py")
        found.append(Asset(asset_dir.name, int(function.code_size), _import_seconds(asset_dir, _environment(function, deployment))))
    shared = [layer for function in functions for layer in function.layers if "LambdaLayersShared" in layer["Arn"]]
    if shared:
        found.append(Asset("shared_layer (patterns_common)", int(shared[0]["CodeSize"]), None))
    return found
