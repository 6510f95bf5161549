"""Runs deployed Lambda functions without Docker: warm worker processes per function, like sandboxes.

Why processes and not threads: handlers read their environment and keep module state (clients,
Powertools singletons) per function, and one handler may synchronously invoke another; separate
warm processes keep all of that apart and cannot deadlock. A process is started once per
concurrent instance and reused, so an invocation costs a socket round trip, not a start-up.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import threading
import uuid
import zipfile
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable

from emulator.clock import SimClock
from emulator.faults import Faults

# Instances one function may run at once before further invocations queue. Lambda scales out at
# once, and a queued invocation holds the clock still (it is work not yet done), so a low cap made
# queued callback runners miss their task's heartbeat window in real time. Most instances only
# sleep in simulated time; each costs a process (~60 MB).
MAX_INSTANCES_PER_FUNCTION = 64
WORKER_SCRIPT = Path(__file__).with_name("lambda_worker.py")


@dataclass
class InvokeResult:
    payload: bytes
    error_type: str | None = None

    @property
    def errored(self) -> bool:
        return self.error_type is not None


def error_payload(error_type: str, message: str, stack: list[str] | None = None) -> bytes:
    return json.dumps({"errorMessage": message, "errorType": error_type, "stackTrace": stack or []}).encode()


class _Worker:
    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path) -> None:
        parent, child = socket.socketpair()
        env = {**env, "EMULATOR_WORKER_FD": str(child.fileno())}
        self.log = open(log_path, "ab")  # noqa: SIM115 - closed in kill()
        self.process = subprocess.Popen(
            argv, env=env, pass_fds=[child.fileno()], stdout=self.log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, cwd=env["LAMBDA_TASK_ROOT"],
        )
        child.close()
        self.sock = parent
        self.conn = Connection(os.dup(parent.fileno()))
        ready = self._recv(timeout=60)
        if ready is None or ready.get("type") != "ready":
            self.kill()
            raise RuntimeError(f"Lambda worker did not start; see {log_path}")

    def _recv(self, timeout: float) -> dict | None:
        return self.conn.recv() if self.conn.poll(timeout) else None

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.process.kill()
            self.process.wait(5)
        for closable in (self.conn, self.sock, self.log):
            with contextlib.suppress(Exception):
                closable.close()


class _FunctionPool:
    """Idle warm workers of one version of one function, and a cap on how many run at once."""

    def __init__(self, spawn: Callable[[], _Worker]) -> None:
        self._spawn = spawn
        self._idle: list[_Worker] = []
        self._slots = threading.BoundedSemaphore(MAX_INSTANCES_PER_FUNCTION)
        self._lock = threading.Lock()
        self.started = 0

    def acquire(self) -> _Worker:
        self._slots.acquire()
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                worker.kill()
        try:
            worker = self._spawn()
        except BaseException:
            self._slots.release()
            raise
        self.started += 1
        return worker

    def release(self, worker: _Worker, healthy: bool) -> None:
        if healthy and worker.alive():
            with self._lock:
                self._idle.append(worker)
        else:
            worker.kill()
        self._slots.release()

    def close(self) -> None:
        with self._lock:
            for worker in self._idle:
                worker.kill()
            self._idle.clear()


class LambdaRuntime:
    def __init__(
        self, clock: SimClock, endpoint_url: str, workdir: Path, layer_resolver: Callable[[str], Any], faults: Faults | None = None
    ) -> None:
        self.clock = clock
        self.faults = faults or Faults()
        self.endpoint_url = endpoint_url
        self.workdir = workdir
        self._resolve_layer = layer_resolver
        self._pools: dict[str, tuple[str, _FunctionPool]] = {}
        self._lock = threading.Lock()
        self.invocations: list[dict] = []  # one record per invocation, for summaries and tests

    # -- public -----------------------------------------------------------------------------------
    def invoke(self, fn: Any, payload: bytes, asynchronous: bool) -> InvokeResult | None:
        """Invoke moto's ``LambdaFunction`` ``fn``. Asynchronous (``Event``) returns None at once."""
        if asynchronous:
            reservation = self.clock.reserve()  # keep the clock still until the thread runs

            def run() -> None:
                with reservation.adopt():
                    self._invoke(fn, payload, "Event")

            threading.Thread(target=run, name=f"lambda-event-{fn.function_name}", daemon=True).start()
            return None
        with self.clock.busy():
            return self._invoke(fn, payload, "RequestResponse")

    def count(self, function_name_part: str | None = None) -> int:
        return sum(1 for r in self.invocations if function_name_part is None or function_name_part in r["function"])

    def close(self) -> None:
        with self._lock:
            for _, pool in self._pools.values():
                pool.close()
            self._pools.clear()

    # -- internals --------------------------------------------------------------------------------
    def _invoke(self, fn: Any, payload: bytes, invocation_type: str) -> InvokeResult:
        pool = self._pool_for(fn)
        request_id = str(uuid.uuid4())
        record = {"function": fn.function_name, "request_id": request_id, "type": invocation_type,
                  "start": self.clock.now(), "error": None, "memory_mb": int(fn.memory_size)}
        self.invocations.append(record)
        timeout_fault = self.faults.take_lambda_timeout(fn.function_name, payload)
        if timeout_fault is not None and not timeout_fault.run_handler:
            self.clock.sleep(float(fn.timeout))
            return self._finish(record, self._timed_out(request_id, float(fn.timeout)))
        try:
            worker = pool.acquire()
        except RuntimeError as exc:
            record["error"] = "Runtime.ExitError"
            return InvokeResult(error_payload("Runtime.ExitError", str(exc)), "Runtime.ExitError")
        deadline = self.clock.now() + float(fn.timeout)
        healthy = False
        try:
            worker.conn.send({
                "payload": payload,
                "offset": self.clock.offset,
                "deadline": deadline,
                "context": {
                    "function_name": fn.function_name,
                    "function_version": "$LATEST",
                    "invoked_function_arn": fn.function_arn,
                    "memory_limit_in_mb": int(fn.memory_size),
                    "aws_request_id": request_id,
                    "log_group_name": f"/aws/lambda/{fn.function_name}",
                    "log_stream_name": f"emulator/{request_id}",
                },
            })
            result, healthy = self._await_reply(worker, deadline, request_id, float(fn.timeout))
        finally:
            pool.release(worker, healthy)
        if timeout_fault is not None and result.error_type != "Sandbox.Timedout":
            # The handler did its work; its answer is lost when the function times out.
            self.clock.sleep(max(0.0, deadline - self.clock.now()))
            result = self._timed_out(request_id, float(fn.timeout))
        return self._finish(record, result)

    def _finish(self, record: dict, result: InvokeResult) -> InvokeResult:
        record["error"] = result.error_type
        record["end"] = self.clock.now()
        return result

    def _await_reply(self, worker: _Worker, deadline: float, request_id: str, timeout: float) -> tuple[InvokeResult, bool]:
        while True:
            if worker.conn.poll(0.01):
                try:
                    message = worker.conn.recv()
                except (EOFError, OSError):
                    message = None
                if message is None:
                    break
                if message["type"] == "sleep":
                    remaining = deadline - self.clock.now()
                    if message["seconds"] >= remaining:
                        self.clock.sleep(max(0.0, remaining))
                        return self._timed_out(request_id, timeout), False
                    self.clock.sleep(message["seconds"])
                    worker.conn.send({"offset": self.clock.offset})
                    continue
                if message["type"] == "result":
                    return InvokeResult(message["payload"]), True
                error_type = message["errorType"]
                body = error_payload(error_type, message["errorMessage"], message.get("stackTrace"))
                return InvokeResult(body, error_type), not error_type.startswith("Runtime.")
            if self.clock.now() > deadline:
                return self._timed_out(request_id, timeout), False
            if not worker.alive():
                break
        return InvokeResult(error_payload("Runtime.ExitError", f"RequestId: {request_id} Error: Runtime exited"), "Runtime.ExitError"), False

    @staticmethod
    def _timed_out(request_id: str, timeout: float) -> InvokeResult:
        message = f"RequestId: {request_id} Error: Task timed out after {timeout:.2f} seconds"
        return InvokeResult(error_payload("Sandbox.Timedout", message), "Sandbox.Timedout")

    def _pool_for(self, fn: Any) -> _FunctionPool:
        identity = json.dumps(
            [fn.function_arn, fn.code_sha_256, fn.handler, fn.timeout, fn.memory_size,
             fn.environment_vars, [layer["Arn"] for layer in fn.layers]],
            sort_keys=True, default=str,
        )
        key = hashlib.sha256(identity.encode()).hexdigest()[:16]
        with self._lock:
            current = self._pools.get(fn.function_arn)
            if current is None or current[0] != key:
                if current is not None:  # redeployed: retire the old version's warm workers
                    current[1].close()
                current = (key, _FunctionPool(lambda: self._spawn(fn, key)))
                self._pools[fn.function_arn] = current
            return current[1]

    def _spawn(self, fn: Any, key: str) -> _Worker:
        root = self.workdir / "functions" / f"{fn.function_name}-{key}"
        code_dir = root / "task"
        if not code_dir.exists():
            _unzip(fn.code_bytes, code_dir)
        layer_paths = [str(self._layer_dir(layer["Arn"])) for layer in fn.layers]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "en_US.UTF-8",
            "TZ": "UTC",
            "AWS_REGION": fn.region,
            "AWS_DEFAULT_REGION": fn.region,
            "AWS_ACCESS_KEY_ID": "emulator",
            "AWS_SECRET_ACCESS_KEY": "emulator",
            "AWS_SESSION_TOKEN": "emulator",
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{fn.run_time}",
            "AWS_LAMBDA_FUNCTION_NAME": fn.function_name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(fn.memory_size),
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{fn.function_name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": "emulator",
            "LAMBDA_TASK_ROOT": str(code_dir),
            "_HANDLER": fn.handler,
            # No X-Ray daemon runs locally; Powertools' Tracer would otherwise try to reach one.
            "POWERTOOLS_TRACE_DISABLED": "true",
            "EMULATOR_LAYER_PATHS": os.pathsep.join(p for p in layer_paths if p),
            **{k: str(v) for k, v in (fn.environment_vars or {}).items()},
        }
        log_path = self.workdir / "logs" / f"{fn.function_name}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        # -P: the worker's own directory stays off sys.path, so only the function's code is importable
        return _Worker([sys.executable, "-P", str(WORKER_SCRIPT)], env, log_path)

    def _layer_dir(self, layer_arn: str) -> str:
        layer = self._resolve_layer(layer_arn)
        if layer is None or not getattr(layer, "code_bytes", b""):
            # AWS-managed layers (Powertools): their packages are installed beside the emulator.
            return ""
        target = self.workdir / "layers" / hashlib.sha256(layer_arn.encode()).hexdigest()[:16]
        if not target.exists():
            _unzip(layer.code_bytes, target)
        return str(target / "python")


def _unzip(data: bytes, target: Path) -> None:
    # One partial directory per call: two cold starts of one function at once (a Map, or load)
    # extracted into the same directory, and the second failed once the first had renamed it.
    partial = target.with_name(f"{target.name}.partial-{uuid.uuid4().hex[:8]}")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(partial)
    try:
        partial.rename(target)
    except OSError:  # another thread extracted it first
        import shutil

        shutil.rmtree(partial, ignore_errors=True)
