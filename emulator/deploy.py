"""Deploys the app into a LocalAws with the real, pinned `cdk` CLI (bootstrap, then deploy --all; hot-swaps; watch)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TextIO

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


def _context_arguments(context: dict[str, str] | None) -> list[str]:
    return [argument for key, value in (context or {}).items() for argument in ("--context", f"{key}={value}")]


def _run(args: list[str], env: dict[str, str], log: Path, cwd: Path) -> None:
    with open(log, "ab") as out:
        result = subprocess.run(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise DeployError(f"{' '.join(args[:3])} failed (exit {result.returncode}); last output:\n{tail}")


def deploy_app(
    aws: LocalAws, context: dict[str, str] | None = None, app_dir: Path = ROOT, also: Sequence[Path] = ()
) -> dict[str, dict[str, str]]:
    """Bootstrap and deploy every stack of the CDK app in ``app_dir``, then of each app in ``also``
    (such as examples/: its own log and templates); returns outputs by stack."""
    if not CDK.exists():
        raise DeployError(f"{CDK} is missing: run `make setup` (npm ci) first")
    env = cdk_environment(aws)
    started = time.monotonic()

    def cdk(app: Path, *command: str, assembly: Path | None = None) -> None:
        suffix = "" if app == app_dir else f"-{app.name}"
        outdir = aws.workdir / f"cdk.out{suffix}"
        source = ["--app", str(assembly)] if assembly else ["--output", str(outdir), "--app", f"{sys.executable} app.py"]
        common = ["--no-notices", *source, *_context_arguments(context)]
        _run([str(CDK), *command, *common], env, aws.workdir / f"cdk{suffix}.log", app)

    def assembly(app: Path) -> Path:
        return aws.workdir / f"cdk.out-{app.name}"

    # The other apps synthesize (most of a deployment's time) while this one deploys; their stacks are
    # deployed after it, one app at a time: moto's change sets are not safe to create concurrently.
    with ThreadPoolExecutor(max_workers=1 + len(also)) as pool:
        synthesized = [pool.submit(cdk, app, "synth", "--quiet") for app in also]
        cdk(app_dir, "bootstrap", f"aws://{ACCOUNT_ID}/{REGION}")
        cdk(app_dir, "deploy", "--all", "--require-approval", "never")
        for app, synth in zip(also, synthesized):
            synth.result()
            cdk(app, "deploy", "--all", "--require-approval", "never", assembly=assembly(app))
    aws.deploy_seconds = time.monotonic() - started
    return aws.stack_outputs()


def run_cdk(
    aws: LocalAws, args: list[str], *, app_dir: Path = ROOT, outdir: Path, context: dict[str, str] | None = None
) -> str:
    """Run `cdk ARGS` in ``app_dir`` against ``aws``, synthesizing into ``outdir``; the CLI's output.

    For `cdk deploy --hotswap` and the like on an app already deployed; DeployError if it fails.
    """
    result = subprocess.run(
        [str(CDK), *args, "--require-approval", "never", "--no-notices", "--output", str(outdir),
         "--app", f"{sys.executable} app.py", *_context_arguments(context)],
        cwd=app_dir, env=cdk_environment(aws), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )
    if result.returncode != 0:
        raise DeployError(f"cdk {' '.join(args)} failed (exit {result.returncode}); last output:\n{result.stdout[-4000:]}")
    return result.stdout


def watch(
    aws: LocalAws, context: dict[str, str] | None = None, *, app_dir: Path = ROOT, output: TextIO | None = None
) -> subprocess.Popen:
    """`cdk watch` on the CDK app in ``app_dir`` against ``aws``: every saved change hot-swapped, else
    deployed in full. Stop it with stop_watch.

    ``context`` must be what the app was deployed with: the CLI deploys every stack once as it starts,
    and a stack synthesized with other context differs from the deployed one, so it would be deployed
    in full. Its output goes to ``output`` (default: where this process's goes); the app's cdk.json's
    ``watch`` says which files count.
    """
    # The CLI diffs a hot-swap against the template it last hot-swapped, cached per account and region
    # in cdk.out: every emulator has the same account, so a past session's cache would stand for the
    # app just deployed, and the CLI would redeploy what did not change or skip what did.
    shutil.rmtree(app_dir / "cdk.out" / ".hotswap-cache", ignore_errors=True)
    return subprocess.Popen(
        # Without --all the CLI's watch, on an app of several stacks, waits forever after its first
        # synthesis, printing nothing (though it warns that --all is an unknown option it will ignore).
        # It deploys with approval never asked, so --require-approval is not given.
        [str(CDK), "watch", "--all", "--hotswap-fallback", "--no-notices", "--app", f"{sys.executable} app.py",
         *_context_arguments(context)],
        cwd=app_dir, env=cdk_environment(aws), stdin=subprocess.DEVNULL, stdout=output,
        stderr=None if output is None else subprocess.STDOUT,
        # Its own process group: the app's synthesis it runs goes with it when it is stopped.
        start_new_session=True,
    )


def stop_watch(watcher: subprocess.Popen, grace_seconds: float = 10) -> None:
    """Stop a `cdk watch` and what it runs (a deployment in flight gets ``grace_seconds``), then reap it."""
    try:
        os.killpg(watcher.pid, signal.SIGTERM)
        watcher.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        os.killpg(watcher.pid, signal.SIGKILL)
        watcher.wait()
    except ProcessLookupError:  # it had ended already
        watcher.wait()


def deploy_assembly(aws: LocalAws, assembly: Path) -> dict[str, dict[str, str]]:
    """Deploy every stack of an already synthesized cloud assembly into a bootstrapped LocalAws.

    What a test uses to add a small stack beside the app's without synthesizing it in a new process.
    """
    env = cdk_environment(aws)
    _run([str(CDK), "deploy", "--all", "--require-approval", "never", "--no-notices", "--app", str(assembly)],
         env, aws.workdir / "cdk.log", assembly)
    return aws.stack_outputs()
