"""Deploys the app into a LocalAws with the real, pinned `cdk` CLI (bootstrap, then deploy --all; hot-swaps; watch)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
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
    aws: LocalAws, context: dict[str, str] | None = None, app_dir: Path = ROOT, also: Sequence[Path] = (),
    assemblies: Path | None = None,
) -> dict[str, dict[str, str]]:
    """Bootstrap and deploy every stack of the CDK app in ``app_dir``, then of each app in ``also``
    (such as examples/: its own log and templates); returns outputs by stack.

    Each app is synthesized with `cdk synth`, then deployed from that cloud assembly with `cdk deploy
    --app`. With ``assemblies``, a directory several deployments share (tests/parallel.py's shards),
    an app already synthesized there with the same ``context`` is deployed from there: every
    LocalAws has the same account and region, so the assembly is the same.
    """
    if not CDK.exists():
        raise DeployError(f"{CDK} is missing: run `make setup` (npm ci) first")
    env = cdk_environment(aws)
    started = time.monotonic()

    def log(app: Path) -> Path:
        return aws.workdir / ("cdk.log" if app == app_dir else f"cdk-{app.name}.log")

    def synthesized(app: Path) -> Path:
        if assemblies is None:
            outdir = aws.workdir / ("cdk.out" if app == app_dir else f"cdk.out-{app.name}")
            return _synthesize(app, outdir, context, env, log(app))
        outdir = assemblies / f"{app.name}-{_digest(context)}"
        with _locked(outdir.with_suffix(".lock")):
            if not outdir.with_suffix(".done").exists():
                _synthesize(app, outdir, context, env, log(app))
                outdir.with_suffix(".done").touch()
        return outdir

    def deploy(app: Path, assembly: Path) -> None:
        _run([str(CDK), "deploy", "--all", "--require-approval", "never", "--no-notices", "--app", str(assembly)],
             env, log(app), app)

    # Every app synthesizes (most of a deployment's time) while the account is bootstrapped; the stacks
    # are then deployed one app at a time: moto's change sets are not safe to create concurrently.
    # Bootstrapping runs outside the app's directory: given an app, the CLI synthesizes it only to list
    # its environments, and the environment is named here.
    with ThreadPoolExecutor(max_workers=1 + len(also)) as pool:
        assemblies_of = {app: pool.submit(synthesized, app) for app in (app_dir, *also)}
        _run([str(CDK), "bootstrap", f"aws://{ACCOUNT_ID}/{REGION}", "--no-notices"], env, aws.workdir / "cdk-bootstrap.log",
             aws.workdir)
        for app, assembly in assemblies_of.items():
            deploy(app, assembly.result())
    aws.deploy_seconds = time.monotonic() - started
    return aws.stack_outputs()


def _synthesize(app: Path, outdir: Path, context: dict[str, str] | None, env: dict[str, str], log: Path) -> Path:
    _run([str(CDK), "synth", "--quiet", "--no-notices", "--output", str(outdir), "--app", f"{sys.executable} app.py",
          *_context_arguments(context)], env, log, app)
    return outdir


def _digest(context: dict[str, str] | None) -> str:
    return hashlib.sha256(json.dumps(context or {}, sort_keys=True).encode()).hexdigest()[:12]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Held by one process at a time (and released if it dies)."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
    """Stop a `cdk watch` and what it runs (a deployment in flight gets ``grace_seconds``), then reap it.

    Returns once its process group is gone: what the watch ran (a synthesis, say) can outlive the
    watch itself by a moment, and on a loaded machine did, still in the group after the watch was reaped.
    """
    try:
        os.killpg(watcher.pid, signal.SIGTERM)
        watcher.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        os.killpg(watcher.pid, signal.SIGKILL)
        watcher.wait()
    except ProcessLookupError:  # it had ended already
        watcher.wait()
    for signal_number in (0, signal.SIGKILL):  # 0 only asks whether any is left; then, after the grace, kill
        deadline = time.monotonic() + grace_seconds
        try:
            while time.monotonic() < deadline:
                os.killpg(watcher.pid, signal_number)
                time.sleep(0.05)
        except ProcessLookupError:  # none is left in the group
            return


def deploy_assembly(aws: LocalAws, assembly: Path) -> dict[str, dict[str, str]]:
    """Deploy every stack of an already synthesized cloud assembly into a bootstrapped LocalAws.

    What a test uses to add a small stack beside the app's without synthesizing it in a new process.
    """
    env = cdk_environment(aws)
    _run([str(CDK), "deploy", "--all", "--require-approval", "never", "--no-notices", "--app", str(assembly)],
         env, aws.workdir / "cdk.log", assembly)
    return aws.stack_outputs()
