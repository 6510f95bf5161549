"""Runs deployed Lambda functions without Docker: warm worker processes per function, like sandboxes.

Why processes and not threads: handlers read their environment and keep module state (clients,
Powertools singletons) per function, and one handler may synchronously invoke another; separate
warm processes keep all of that apart and cannot deadlock. A process is started once per
concurrent instance and reused, so an invocation costs a socket round trip, not a start-up.

Each instance is a fork of a zygote (see worker.py) running the runtime's Python with only
the Lambda sandbox's packages (sandbox.py): what the runtime and AWS-managed layers hold is
imported once and shared copy-on-write, so an instance costs a few MB instead of a whole interpreter.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
import zipfile
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable

from emulator.awslambda import asynchronous as lambda_async
from emulator.awslambda import logs as lambda_logs
from emulator.awslambda import sandbox as lambda_sandbox
from emulator.awslambda.concurrency import Concurrency
from emulator.awslambda.trace import new_trace_id
from emulator.clock import SimClock
from emulator.faults import Faults

# Instances one function may run at once before further invocations queue. Lambda scales out at
# once, and a queued invocation holds the clock still (it is work not yet done), so a low cap made
# queued callback runners miss their task's heartbeat window in real time. Most instances only
# sleep in simulated time; each is a forked process sharing the zygote's pages.
MAX_INSTANCES_PER_FUNCTION = 64
# An instance left idle this many real seconds is stopped, and a later invocation starts a new one (a
# cold start). Lambda too reclaims idle execution environments, after a time it does not document; a
# burst's instances (a Map's items, fifty alerts at once) are mostly not needed again, and each holds
# memory of its own.
IDLE_INSTANCE_SECONDS = 10.0
# Instances of all functions together beyond which idle ones are stopped at once, the longest idle
# first: each holds memory of its own, and a burst (fifty alerts started together) would otherwise
# leave dozens idle beside the instances still at work. Busy instances are never stopped.
MAX_INSTANCES = 100
# Real seconds an instance has to import its handler and report ready; a function's later cold starts
# wait as long for its first (_FunctionPool) before they start anyway.
WORKER_READY_SECONDS = 60.0
# Events of one function its asynchronous queue starts at once. Lambda puts an event in the
# function's queue and answers at once; "a separate process reads events from the queue and sends
# them to your function" (invocation-async), at a pace it does not document. Here a few at a time,
# each until its handler returns or first sleeps (a job runner sleeping through its job holds none):
# an alarm storm's hundreds of events, each started at once on two cores, took the CPU from the
# synchronous calls (a machine's tasks) whose timeouts run meanwhile, and each needed a cold start.
EVENT_STARTS_PER_FUNCTION = 8
WORKER_SCRIPT = Path(__file__).with_name("worker.py")
# What a zygote imports before forking instances, per directory it preloads: the bulk of every
# handler's start-up (boto3; Powertools and the X-Ray SDK its Tracer loads), none of it the handler's
# own code, which each instance imports itself as a cold start does.
PRELOAD_MODULES = {"runtime": ("boto3",), "powertools": ("aws_lambda_powertools", "aws_xray_sdk.core")}
# What the zygote (shared by every function) holds until a fork gives the instance its role's keys.
_DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "emulator", "AWS_SECRET_ACCESS_KEY": "emulator", "AWS_SESSION_TOKEN": "emulator"}
# Lambda sets these for every function alike (PATH as the python3.13 runtime has it, minus /var/lang/bin).
_COMMON_ENV = {"PATH": "/usr/local/bin:/usr/bin/:/bin:/opt/bin", "LANG": "en_US.UTF-8", "TZ": "UTC"}


class _StartSlot:
    """One event's hold on its function's start slots, given back once however often it is released."""

    def __init__(self, slots: threading.Semaphore) -> None:
        self._slots: threading.Semaphore | None = slots

    def release(self) -> None:
        slots, self._slots = self._slots, None
        if slots is not None:
            slots.release()


@dataclass
class InvokeResult:
    payload: bytes
    error_type: str | None = None
    throttled: str | None = None  # the Reason the invocation was throttled with (the function never ran)

    @property
    def errored(self) -> bool:
        return self.error_type is not None


def error_payload(error_type: str, message: str, stack: list[str] | None = None) -> bytes:
    return json.dumps({"errorMessage": message, "errorType": error_type, "stackTrace": stack or []}).encode()


# A zygote request (a fork, or sharing what a cold start loaded) that took this long in real time is
# logged: every cold start on the zygote waits behind it (see _Zygote), and a machine's task timeout
# runs meanwhile.
SLOW_ZYGOTE_SECONDS = 5.0
_log = logging.getLogger(__name__)


def _report_slow(request: str, asked: float, locked: float) -> None:
    waited, served = locked - asked, time.monotonic() - locked
    if waited + served >= SLOW_ZYGOTE_SECONDS:
        _log.warning("Lambda zygote: %s waited %.1f s for the zygote, then %.1f s for its answer", request, waited, served)


class _Zygote:
    """A preloaded interpreter that forks instances; one per set of AWS-managed layers."""

    def __init__(self, sandbox: lambda_sandbox.Sandbox, preload: list[tuple[str, str]], env: dict[str, str],
                 log_path: Path) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {
            **env,
            "EMULATOR_ZYGOTE_FD": str(child.fileno()),
            "EMULATOR_RUNTIME_PATH": str(sandbox.runtime_dir),
            "EMULATOR_PRELOAD_PATHS": os.pathsep.join(path for _, path in preload),
            "EMULATOR_PRELOAD_MODULES": ",".join(
                module for kind in ("runtime", *(kind for kind, _ in preload)) for module in PRELOAD_MODULES[kind]
            ),
        }
        with open(log_path, "ab") as log:
            # -I -S: no development venv, no site-packages, no PYTHON* variables; the zygote sets sys.path.
            self.process = subprocess.Popen(
                [sandbox.interpreter.path, "-I", "-S", str(WORKER_SCRIPT)], env=env, pass_fds=[child.fileno()],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        child.close()
        self.sock = parent
        self._lock = threading.Lock()
        self._shared: set = set()  # module names and botocore loads already sent
        if self._reply(timeout=60) is None:
            self.close()
            raise RuntimeError(f"Lambda zygote did not start; see {log_path}")

    def _reply(self, timeout: float) -> dict | None:
        data = self.sock.recv(4096) if _readable(self.sock, timeout) else b""
        return json.loads(data) if data else None

    def fork(self, request: dict) -> tuple[socket.socket, int]:
        """A new instance configured by ``request``; returns the socket to talk to it and its pid."""
        parent, child = socket.socketpair()
        asked = locked = time.monotonic()
        try:
            with self._lock:
                locked = time.monotonic()
                socket.send_fds(self.sock, [json.dumps(request).encode()], [child.fileno()])
                reply = self._reply(timeout=30)
        except OSError:  # the zygote is gone
            reply = None
        finally:
            child.close()
        _report_slow("a fork", asked, locked)
        if reply is None:
            parent.close()
            raise RuntimeError("Lambda zygote did not fork an instance")
        return parent, reply["pid"]

    def share(self, loaded: dict) -> None:
        """Have the zygote load what an instance's cold start loaded, for later instances to share."""
        if not self._unshared(loaded):  # the usual case: no need to wait for the zygote
            return
        asked = time.monotonic()
        with self._lock, contextlib.suppress(OSError):  # a zygote that is gone is replaced at the next fork
            locked = time.monotonic()
            # Again under the lock: cold starts of one function at once all loaded the same modules,
            # and each sending them again had the zygote walk its new objects again.
            new = self._unshared(loaded)
            if not new:
                return
            self.sock.send(json.dumps(new).encode())
            self._reply(timeout=30)
            self._shared.update(new["modules"], (tuple(load) for load in new["botocore_loads"]))
        _report_slow(f"sharing {len(new['modules'])} modules", asked, locked)

    def _unshared(self, loaded: dict) -> dict | None:
        """What of ``loaded`` the zygote does not hold yet; None if it holds it all."""
        new = {"modules": [m for m in loaded["modules"] if m not in self._shared],
               "botocore_loads": [load for load in loaded["botocore_loads"] if tuple(load) not in self._shared]}
        return new if new["modules"] or new["botocore_loads"] else None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.sock.close()  # the zygote exits on EOF
            self.process.kill()
            self.process.wait(5)


class _Worker:
    """One instance: a forked process, watched through a pidfd so a reused pid is never signalled."""

    def __init__(self, zygote: _Zygote, request: dict, stream: str) -> None:
        began = time.monotonic()
        self.log_path = Path(request["log"])  # what this instance alone prints (stdout and stderr)
        self.log_read = 0  # how much of it has gone to CloudWatch Logs
        self.stream = stream  # its log stream
        self.sock, self.pid = zygote.fork(request)
        self.conn = Connection(os.dup(self.sock.fileno()))
        try:
            self.pidfd = os.pidfd_open(self.pid)
        except ProcessLookupError:  # already gone
            self.pidfd = None
        ready = self._recv(timeout=WORKER_READY_SECONDS) if self.pidfd is not None else None
        if ready is None or ready.get("type") != "ready":
            self.kill()
            raise RuntimeError(f"Lambda worker did not start; see {self.log_path}")
        self.loaded = ready["loaded"]
        # The cold start (fork and handler import), in real milliseconds: its REPORT's Init Duration.
        self.init_ms: float | None = (time.monotonic() - began) * 1000
        self.idle_since = time.monotonic()  # real time; set again each time it goes back to its pool

    def printed(self) -> list[str]:
        """The complete lines the instance printed since the last look (a line still being written waits)."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self.log_read)
                text = log.read()
        except FileNotFoundError:
            return []
        complete = text.rfind(b"\n") + 1
        self.log_read += complete
        return text[:complete].decode("utf-8", "replace").splitlines()

    def max_memory_mb(self) -> int:
        """The instance's peak resident memory (VmHWM), in MB as the REPORT line gives it."""
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:  # gone
            return 0
        kib = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)
        return round(kib / 1024)

    def _recv(self, timeout: float) -> dict | None:
        return self.conn.recv() if self.conn.poll(timeout) else None

    def alive(self) -> bool:
        if self.pidfd is None:
            return False
        return not _readable(self.pidfd, 0)  # a pidfd is readable once it exited

    def kill(self) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            os.close(self.pidfd)
            self.pidfd = None
        for closable in (self.conn, self.sock):
            with contextlib.suppress(Exception):
                closable.close()


class _FunctionPool:
    """Idle warm workers of one version of one function, and a cap on how many run at once.

    Its first cold start goes alone: cold starts that come meanwhile wait until it is ready (or has
    failed), then fork from a zygote that holds what it imported, instead of each importing the
    handler's packages again, all at once on the machine's two cores (Lambda starts each instance on
    hardware of its own). Alone on a fresh deployment, the 200-alarm storm test started 278 instances,
    whose processes used 39 s of CPU, that way, and 104 using 24 s this way. A waiting instance starts
    one cold start's wall time later.
    """

    def __init__(self, spawn: Callable[[], _Worker], went_idle: Callable[[], None]) -> None:
        self._spawn = spawn
        self._went_idle = went_idle
        self._idle: list[_Worker] = []
        self._slots = threading.BoundedSemaphore(MAX_INSTANCES_PER_FUNCTION)
        self._lock = threading.Lock()
        self._closed = False
        self._first_started = threading.Event()  # set once the first cold start is ready or failed
        self._first_claimed = False
        self.started = 0
        self.busy = 0

    def acquire(self) -> _Worker:
        self._slots.acquire()
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    self.busy += 1
                    return worker
                worker.kill()
            first = not self._first_claimed  # this cold start is the function's first
            self._first_claimed = True
        if not first:
            self._first_started.wait(WORKER_READY_SECONDS)
        try:
            worker = self._spawn()
        except BaseException:
            self._slots.release()
            raise
        finally:
            if first:
                self._first_started.set()
        with self._lock:
            self.started += 1
            self.busy += 1
        return worker

    def release(self, worker: _Worker, healthy: bool) -> None:
        with self._lock:
            # A retired version's instance (the function was updated meanwhile) is not reused.
            idle = healthy and not self._closed and worker.alive()
            self.busy -= 1
            if idle:
                worker.idle_since = time.monotonic()
                self._idle.append(worker)
        if not idle:
            worker.kill()
        self._slots.release()
        if idle:
            self._went_idle()

    def idle_instances(self) -> list[_Worker]:
        with self._lock:
            return list(self._idle)

    def stop(self, workers: list[_Worker]) -> None:
        """Stop those of ``workers`` that are still idle."""
        with self._lock:
            stopping = [worker for worker in self._idle if worker in workers]
            self._idle = [worker for worker in self._idle if worker not in workers]
        for worker in stopping:
            worker.kill()

    def close(self) -> None:
        """Stop the idle instances; busy ones finish their invocation, then stop."""
        with self._lock:
            self._closed = True
            for worker in self._idle:
                worker.kill()
            self._idle.clear()


class LambdaRuntime:
    def __init__(
        self, clock: SimClock, endpoint_url: str, workdir: Path, layer_resolver: Callable[[str], Any], faults: Faults | None = None,
        *, account_id: str, region: str, on_output: Callable[[list[str]], None] | None = None,
        concurrency: Concurrency | None = None, credentials: Callable[[Any], dict[str, str]] | None = None,
    ) -> None:
        self.clock = clock
        self.concurrency = concurrency
        # The keys a function's handler gets (its role's session): AWS_ACCESS_KEY_ID, ..._SECRET_..., ..._SESSION_TOKEN.
        self._credentials = credentials or (lambda fn: dict(_DUMMY_CREDENTIALS))
        # Told an invocation's log lines as they reach CloudWatch Logs, as CloudWatch reads embedded metrics from them.
        self._on_output = on_output
        self._logs = lambda_logs.LogSink(account_id, region)
        self.faults = faults or Faults()
        self.endpoint_url = endpoint_url
        self.workdir = workdir
        self._resolve_layer = layer_resolver
        self.sandbox = lambda_sandbox.locate()
        notice = lambda_sandbox.substitution_notice(self.sandbox.interpreter)
        if notice:
            print(notice, flush=True)
        self._pools: dict[str, tuple[str, _FunctionPool]] = {}
        self._zygotes: dict[tuple[str, ...], _Zygote] = {}
        self._lock = threading.Lock()
        self._zygote_lock = threading.Lock()  # a zygote takes a second to start: not under self._lock
        self._archives = _Archives()
        self.invocations: list[dict] = []  # one record per invocation, for summaries and tests
        self._event_starts: dict[str, threading.Semaphore] = {}  # per function ARN
        self._local = threading.local()  # .event_start: the start slot this thread's event holds
        self._closed = threading.Event()
        threading.Thread(target=self._stop_idle_instances, name="lambda-idle-instances", daemon=True).start()

    # -- public -----------------------------------------------------------------------------------
    def invoke(self, fn: Any, payload: bytes, asynchronous: bool, trace_id: str | None = None) -> InvokeResult | None:
        """Invoke moto's ``LambdaFunction`` ``fn``. Asynchronous (``Event``) returns None at once.

        ``trace_id`` is the caller's X-Amzn-Trace-Id, which the handler's AWS calls carry on.
        """
        if asynchronous:
            reservation = self.clock.reserve()  # keep the clock still until the thread runs

            def run() -> None:
                with reservation.adopt():
                    self._run_event(fn, payload, trace_id)

            threading.Thread(target=run, name=f"lambda-event-{fn.function_name}", daemon=True).start()
            return None
        with self.clock.busy():
            return self._invoke(fn, payload, "RequestResponse", trace_id=trace_id)

    def count(self, function_name_part: str | None = None) -> int:
        return sum(1 for r in self.invocations if function_name_part is None or function_name_part in r["function"])

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            for _, pool in self._pools.values():
                pool.close()
            self._pools.clear()
            for zygote in self._zygotes.values():
                zygote.close()
            self._zygotes.clear()

    # -- internals --------------------------------------------------------------------------------
    def _stop_idle_instances(self) -> None:
        while not self._closed.wait(1.0):
            cutoff = time.monotonic() - IDLE_INSTANCE_SECONDS
            for pool in self._live_pools():
                pool.stop([worker for worker in pool.idle_instances() if worker.idle_since < cutoff])

    def _stop_idle_beyond_limit(self) -> None:
        """Keep at most MAX_INSTANCES instances: stop idle ones, the longest idle first."""
        pools = self._live_pools()
        idle = [(worker, pool) for pool in pools for worker in pool.idle_instances()]
        excess = sum(pool.busy for pool in pools) + len(idle) - MAX_INSTANCES
        if excess <= 0:  # the usual case, on every invocation's release: no sorting
            return
        for worker, pool in sorted(idle, key=lambda wp: wp[0].idle_since)[:excess]:
            pool.stop([worker])

    def _live_pools(self) -> list[_FunctionPool]:
        with self._lock:
            return [pool for _, pool in self._pools.values()]

    def _run_event(self, fn: Any, payload: bytes, trace_id: str | None) -> None:
        """One queued event: its attempts and retries, then its record to the destination (lambda_async)."""
        config = lambda_async.AsyncConfig.of(fn)
        request_id = str(uuid.uuid4())  # every attempt of one event has the same
        with self._lock:
            starts = self._event_starts.setdefault(fn.function_arn, threading.Semaphore(EVENT_STARTS_PER_FUNCTION))

        def attempt() -> InvokeResult:
            starts.acquire()  # waits its turn in the queue; between retries it holds no slot
            self._local.event_start = _StartSlot(starts)
            try:
                return self._invoke(fn, payload, "Event", request_id, trace_id)
            finally:
                self._local.event_start.release()
                self._local.event_start = None

        outcome = lambda_async.process(attempt, config, self.clock)
        record = lambda_async.invocation_record(
            function_arn=fn.function_arn, request_id=request_id, payload=payload, outcome=outcome, now=self.clock.now()
        )
        lambda_async.deliver(config, record)

    def _invoke(self, fn: Any, payload: bytes, invocation_type: str, request_id: str | None = None,
                trace_id: str | None = None) -> InvokeResult:
        throttled = self.concurrency.start(fn) if self.concurrency is not None else None
        if throttled is not None:  # not an invocation: the function does not run
            return InvokeResult(error_payload("TooManyRequestsException", "Rate Exceeded."), "TooManyRequestsException", throttled)
        try:
            return self._run(fn, payload, invocation_type, request_id, trace_id)
        finally:
            if self.concurrency is not None:
                self.concurrency.finish(fn)

    def _run(self, fn: Any, payload: bytes, invocation_type: str, request_id: str | None, trace_id: str | None) -> InvokeResult:
        pool = self._pool_for(fn)
        request_id = request_id or str(uuid.uuid4())
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
        started = self.clock.now()
        deadline = started + float(fn.timeout)
        healthy = False
        group = lambda_logs.log_group(fn)

        def log(at: float, lines: list[str]) -> None:
            """Lines reach the stream as they come, not at the end: `aws logs tail --follow` asks only for
            lines newer than the last it saw, so a long invocation's START stamped before them would be missed."""
            self._logs.put(group, worker.stream, [(at, line) for line in lines])
            if self._on_output is not None:
                self._on_output(lines)

        init_ms, worker.init_ms = worker.init_ms, None  # only the instance's first invocation reports its init
        record["log"] = {"group": group, "stream": worker.stream}
        try:
            # What the cold start's init printed comes before START, as the runtime logs it.
            log(started, [*worker.printed(), lambda_logs.start_line(request_id)])
            worker.conn.send({
                "payload": payload,
                "trace_id": trace_id or new_trace_id(self.clock.now()),
                "offset": self.clock.offset,
                "deadline": deadline,
                "context": {
                    "function_name": fn.function_name,
                    "function_version": "$LATEST",
                    "invoked_function_arn": fn.function_arn,
                    "memory_limit_in_mb": int(fn.memory_size),
                    "aws_request_id": request_id,
                    "log_group_name": group,
                    "log_stream_name": worker.stream,
                },
            })
            result, healthy = self._await_reply(worker, deadline, request_id, float(fn.timeout), log)
        finally:
            # Read before the instance goes back to its pool, where the next invocation may print.
            ended = self.clock.now()
            log(ended, [*worker.printed(), lambda_logs.end_line(request_id),
                        lambda_logs.report_line(request_id, (ended - started) * 1000, int(fn.memory_size),
                                                worker.max_memory_mb(), init_ms)])
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

    def _await_reply(self, worker: _Worker, deadline: float, request_id: str, timeout: float,
                     log: Callable[[float, list[str]], None]) -> tuple[InvokeResult, bool]:
        # One poll on the reply pipe and the pidfd together, blocking until the simulated deadline (see
        # _real_seconds_until): with many invocations in flight, a selector built per look
        # (Connection.poll) and a second poll per look for the pidfd were most of the emulator's own CPU.
        poller = select.poll()
        reply = worker.conn.fileno()
        poller.register(reply, select.POLLIN)
        if worker.pidfd is not None:
            poller.register(worker.pidfd, select.POLLIN)  # a pidfd is readable once the process exited
        while True:
            ready = {fd for fd, _ in poller.poll(self._real_seconds_until(deadline) * 1000)}
            if reply in ready:
                try:
                    message = worker.conn.recv()
                except (EOFError, OSError):
                    message = None
                if message is None:
                    break
                if message["type"] == "sleep":
                    # The worker flushed before asking: what it printed so far is stamped now, not at the end.
                    log(self.clock.now(), worker.printed())
                    if getattr(self._local, "event_start", None) is not None:
                        self._local.event_start.release()  # started: the next event may start
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
            if worker.pidfd is None or worker.pidfd in ready:
                break
        return InvokeResult(error_payload("Runtime.ExitError", f"RequestId: {request_id} Error: Runtime exited"), "Runtime.ExitError"), False

    def _real_seconds_until(self, deadline: float) -> float:
        """How long to block for a worker's message before looking at the clock and the worker again.

        Until the deadline at the clock's rate, at most a second (a pause or a change of speed re-times
        it; a worker that exits is seen at once, its pidfd becoming readable): a storm holds hundreds of
        invocations at once, and each waking every few milliseconds to poll kept the emulator's one
        interpreter too busy to serve their handlers' requests.
        """
        rate = self.clock.rate
        remaining = deadline - self.clock.now()
        return max(0.0, min(remaining / rate if rate else 1.0, 1.0))

    @staticmethod
    def _timed_out(request_id: str, timeout: float) -> InvokeResult:
        message = f"RequestId: {request_id} Error: Task timed out after {timeout:.2f} seconds"
        return InvokeResult(error_payload("Sandbox.Timedout", message), "Sandbox.Timedout")

    def _pool_for(self, fn: Any) -> _FunctionPool:
        identity = json.dumps(
            [fn.function_arn, fn.code_sha_256, fn.handler, fn.timeout, fn.memory_size, fn.role,
             fn.environment_vars, [layer["Arn"] for layer in fn.layers]],
            sort_keys=True, default=str,
        )
        key = hashlib.sha256(identity.encode()).hexdigest()[:16]
        with self._lock:
            current = self._pools.get(fn.function_arn)
            if current is None or current[0] != key:
                if current is not None:  # updated (deploy or hot-swap): retire the old version's instances
                    current[1].close()
                current = (key, _FunctionPool(lambda: self._spawn(fn, key), self._stop_idle_beyond_limit))
                self._pools[fn.function_arn] = current
            return current[1]

    def _spawn(self, fn: Any, key: str) -> _Worker:
        if fn.run_time != lambda_sandbox.RUNTIME:
            raise RuntimeError(f"The emulator's Lambda sandbox runs {lambda_sandbox.RUNTIME} functions, not {fn.run_time}")
        root = self.workdir / "functions" / f"{fn.function_name}-{key}"
        code_dir = root / "task"
        self._archives.extract(fn.code_bytes, code_dir)
        layers = [self._layer_dir(layer["Arn"]) for layer in fn.layers]
        common = {
            **_COMMON_ENV,
            **_DUMMY_CREDENTIALS,
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{fn.run_time}",
            # No X-Ray daemon runs locally; Powertools' Tracer would otherwise try to reach one.
            "POWERTOOLS_TRACE_DISABLED": "true",
        }
        stream = lambda_logs.stream_name(self.clock.now())
        env = {
            **common,
            "AWS_REGION": fn.region,
            "AWS_DEFAULT_REGION": fn.region,
            "AWS_LAMBDA_FUNCTION_NAME": fn.function_name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(fn.memory_size),
            "AWS_LAMBDA_LOG_GROUP_NAME": lambda_logs.log_group(fn),
            "AWS_LAMBDA_LOG_STREAM_NAME": stream,
            "LAMBDA_TASK_ROOT": str(code_dir),
            **self._credentials(fn),
            "_HANDLER": fn.handler,
            **{k: str(v) for k, v in (fn.environment_vars or {}).items()},
        }
        # Each instance prints to a file of its own, so that its lines go to its own stream.
        log_path = self.workdir / "logs" / fn.function_name / f"{stream.rpartition(']')[2]}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        managed = [(kind, path) for kind, path in layers if kind != "function"]
        # Imports at the zygote's start see what every Lambda has: LAMBDA_TASK_ROOT set (the X-Ray
        # SDK picks its Lambda mode from it), the rest of the function's environment comes at the fork.
        zygote = self._zygote(managed, {**common, "LAMBDA_TASK_ROOT": str(self.workdir / "functions")})
        request = {
            "env": env,
            "layers": [path for _, path in layers],
            "own_layers": [path for kind, path in layers if kind == "function"],
            "log": str(log_path),
        }
        worker = _Worker(zygote, request, stream)
        zygote.share(worker.loaded)
        return worker

    def _zygote(self, managed: list[tuple[str, str]], env: dict[str, str]) -> _Zygote:
        key = tuple(path for _, path in managed)
        with self._zygote_lock:
            if key not in self._zygotes or self._zygotes[key].process.poll() is not None:
                log_path = self.workdir / "logs" / "lambda-zygote.log"
                log_path.parent.mkdir(parents=True, exist_ok=True)
                self._zygotes[key] = _Zygote(self.sandbox, managed, env, log_path)
            return self._zygotes[key]

    def _layer_dir(self, layer_arn: str) -> tuple[str, str]:
        """``(kind, python/ directory)`` of a layer: ``function`` for layers deployed with the app."""
        layer = self._resolve_layer(layer_arn)
        if layer is None or not getattr(layer, "code_bytes", b""):
            # AWS-managed (only Powertools is known): the sandbox holds its pinned release.
            return "powertools", str(self.sandbox.powertools_dir)
        target = self.workdir / "layers" / hashlib.sha256(layer_arn.encode()).hexdigest()[:16]
        self._archives.extract(layer.code_bytes, target)
        return "function", str(target / "python")


class _Archives:
    """Function code and layers, each extracted once to its directory however many cold starts need it at once.

    Each cold start extracting a copy for itself held a load test's first 61 cold starts of one
    function 22-45 s, past the 20 s timeout of the state invoking it (the shared layer has 650 files).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one extraction at a time: each is a fraction of a second

    def extract(self, data: bytes, target: Path) -> None:
        """Extract the zip archive ``data`` to ``target`` unless it is there already."""
        if target.exists():  # the usual case: no waiting behind another function's extraction
            return
        with self._lock:
            if target.exists():
                return
            # Into a partial directory first: a target that exists is always whole.
            partial = target.with_name(f"{target.name}.partial")
            shutil.rmtree(partial, ignore_errors=True)  # left by an emulator stopped while extracting
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                archive.extractall(partial)
            partial.rename(target)


def _readable(fd: Any, timeout: float) -> bool:
    """Whether ``fd`` can be read within ``timeout`` seconds. poll, not select: a storm of instances
    takes file descriptors past select()'s 1,024."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(timeout * 1000))
