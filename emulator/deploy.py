"""Deploys the app into a LocalAws with the real, pinned `cdk` CLI (bootstrap, then deploy --all; hot-swaps; watch)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from emulator.server import ACCOUNT_ID, REGION, LocalAws

ROOT = Path(__file__).resolve().parents[1]
CDK = ROOT / "node_modules" / ".bin" / "cdk"


class DeployError(RuntimeError):
    pass


def cdk_environment(aws: LocalAws) -> dict[str, str]:
    return {
        **os.environ,
        **aws.environment,
        # The app is synthesized by this interpreter (the project's venv).
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
        "CDK_DISABLE_VERSION_CHECK": "1",
        "CDK_DISABLE_CLI_TELEMETRY": "true",
    }


def _run(args: list[str], env: dict[str, str], log: Path, cwd: Path) -> None:
    with open(log, "ab") as out:
        result = subprocess.run(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise DeployError(f"{' '.join(args[:3])} failed (exit {result.returncode}); last output:\n{tail}")


def deploy_app(aws: LocalAws, context: dict[str, str] | None = None, app_dir: Path = ROOT) -> dict[str, dict[str, str]]:
    """Bootstrap and deploy every stack of the CDK app in ``app_dir``; returns outputs by stack."""
    if not CDK.exists():
        raise DeployError(f"{CDK} is missing: run `make setup` (npm ci) first")
    env = cdk_environment(aws)
    log = aws.workdir / "cdk.log"
    outdir = aws.workdir / "cdk.out"
    common = ["--no-notices", "--output", str(outdir), "--app", f"{sys.executable} app.py"]
    for key, value in (context or {}).items():
        common += ["--context", f"{key}={value}"]
    started = time.monotonic()
    _run([str(CDK), "bootstrap", f"aws://{ACCOUNT_ID}/{REGION}", *common], env, log, app_dir)
    _run([str(CDK), "deploy", "--all", "--require-approval", "never", *common], env, log, app_dir)
    aws.deploy_seconds = time.monotonic() - started
    return aws.stack_outputs()


def run_cdk(aws: LocalAws, args: list[str], *, app_dir: Path = ROOT, outdir: Path) -> str:
    """Run `cdk ARGS` in ``app_dir`` against ``aws``, synthesizing into ``outdir``; the CLI's output.

    For `cdk deploy --hotswap` and the like on an app already deployed; DeployError if it fails.
    """
    result = subprocess.run(
        [str(CDK), *args, "--require-approval", "never", "--no-notices", "--output", str(outdir),
         "--app", f"{sys.executable} app.py"],
        cwd=app_dir, env=cdk_environment(aws), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )
    if result.returncode != 0:
        raise DeployError(f"cdk {' '.join(args)} failed (exit {result.returncode}); last output:\n{result.stdout[-4000:]}")
    return result.stdout


def watch(aws: LocalAws) -> subprocess.Popen:
    """`cdk watch` on the app against ``aws``: every saved change hot-swapped, else deployed in full.

    Its output goes where this process's goes. cdk.json's ``watch`` says which files count.
    """
    return subprocess.Popen(
        [str(CDK), "watch", "--all", "--hotswap-fallback", "--require-approval", "never", "--no-notices",
         "--app", f"{sys.executable} app.py"],
        cwd=ROOT, env=cdk_environment(aws), stdin=subprocess.DEVNULL,
    )


def deploy_assembly(aws: LocalAws, assembly: Path) -> dict[str, dict[str, str]]:
    """Deploy every stack of an already synthesized cloud assembly into a bootstrapped LocalAws.

    What a test uses to add a small stack beside the app's without synthesizing it in a new process.
    """
    env = cdk_environment(aws)
    _run([str(CDK), "deploy", "--all", "--require-approval", "never", "--no-notices", "--app", str(assembly)],
         env, aws.workdir / "cdk.log", assembly)
    return aws.stack_outputs()
