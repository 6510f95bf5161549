"""A warm Lambda sandbox: one process per concurrent instance of a function, run by the emulator.

The emulator starts this script once per set of AWS-managed layers as a *zygote*: the runtime's
Python, isolated from every development package (``-I -S``), with the simulated clock installed and
the runtime's SDK and those layers' heavy packages imported (``EMULATOR_PRELOAD_*``). Each instance
of a function is a fork of it: its pages are shared copy-on-write until written, and from the fork
on it has its own environment, sys.path (the function's code, then its layers, then the runtime's
SDK) and module state, and imports its handler as a cold start does. A fork request carries the
instance's environment, layers and log file, and the socket (SCM_RIGHTS) it talks to the emulator on.

Each request to an instance carries an event, the Lambda context fields and the simulated-clock
offset; the handler sees simulated time through ``time.time``/``datetime.now`` and its
``time.sleep`` is simulated by the emulator. Messages to an instance are pickled dicts over
``multiprocessing.connection.Connection``; fork requests and replies are JSON datagrams.
"""

from __future__ import annotations

import contextlib
import datetime as _datetime
import gc
import importlib
import importlib.machinery
import json
import os
import signal
import socket
import sys
import sysconfig
import threading
import time as _time
import traceback
from multiprocessing.connection import Connection

_real_time = _time.time
_offset = 0.0
_conn: Connection
_sleep_turn = threading.Lock()


def _sim_time() -> float:
    return _real_time() + _offset


def _sim_time_ns() -> int:
    return int(_sim_time() * 1e9)


def _sim_sleep(seconds: float) -> None:
    """Ask the emulator to let ``seconds`` of simulated time pass, then resume.

    The connection carries one request and its reply at a time, so sleeps from a handler's threads
    (botocore back-off in a thread pool) take turns: simulated time counts them one after another,
    longer than on AWS, but no thread ever reads another's reply.
    """
    global _offset
    if seconds <= 0:
        return
    # What the handler printed so far reaches its log stream stamped before the sleep, as on AWS.
    sys.stdout.flush()
    sys.stderr.flush()
    with _sleep_turn:
        _conn.send({"type": "sleep", "seconds": float(seconds)})
        reply = _conn.recv()
        _offset = reply["offset"]


class _SimDateTime(_datetime.datetime):
    @classmethod
    def now(cls, tz=None):  # noqa: ANN001 - same signature as datetime.now
        return cls.fromtimestamp(_sim_time(), tz)

    @classmethod
    def utcnow(cls):
        return cls.fromtimestamp(_sim_time(), _datetime.timezone.utc).replace(tzinfo=None)

    @classmethod
    def today(cls):
        return cls.fromtimestamp(_sim_time())


def _install_simulated_clock() -> None:
    _time.time = _sim_time
    _time.time_ns = _sim_time_ns
    _time.sleep = _sim_sleep
    # date.today() is left on the real clock: replacing datetime.date would break isinstance checks.
    _datetime.datetime = _SimDateTime


class LambdaContext:
    """The fields and method of the Python runtime's context object."""

    def __init__(self, fields: dict, deadline: float) -> None:
        self.function_name = fields["function_name"]
        self.function_version = fields["function_version"]
        self.invoked_function_arn = fields["invoked_function_arn"]
        self.memory_limit_in_mb = fields["memory_limit_in_mb"]
        self.aws_request_id = fields["aws_request_id"]
        self.log_group_name = fields["log_group_name"]
        self.log_stream_name = fields["log_stream_name"]
        self.identity = None
        self.client_context = None
        self._deadline = deadline

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - _sim_time()) * 1000))


def _error(exc: BaseException, error_type: str | None = None) -> dict:
    return {
        "type": "error",
        "errorType": error_type or type(exc).__name__,
        "errorMessage": str(exc),
        "stackTrace": traceback.format_tb(exc.__traceback__)[1:],
    }


def _import_handler(handler_setting: str) -> tuple[object, dict | None]:
    module_name, _, function_name = handler_setting.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), function_name), None
    except SyntaxError as exc:
        return None, _error(exc, "Runtime.UserCodeSyntaxError")
    except AttributeError as exc:
        return None, _error(exc, "Runtime.HandlerNotFound")
    except Exception as exc:  # noqa: BLE001 - the Python runtime reports any import failure this way
        error = _error(exc, "Runtime.ImportModuleError")
        error["errorMessage"] = f"Unable to import module '{module_name}': {exc}"
        return None, error


def _log_error(error: dict) -> None:
    """What the Python runtime writes to the function's log for an unhandled error (text log format):
    ``[ERROR] <type>: <message>``, then the traceback."""
    lines = [f"[ERROR] {error['errorType']}: {error['errorMessage']}", "Traceback (most recent call last):"]
    lines += [line for element in error["stackTrace"] for line in element.splitlines()]
    print("\n".join(lines), flush=True)


def _serve(handler: object, init_error: dict | None) -> None:
    global _offset
    # What the init printed is in the log before the first invocation's START, as on AWS.
    sys.stdout.flush()
    sys.stderr.flush()
    _conn.send({"type": "ready", "loaded": _what_to_share()})
    while True:
        try:
            request = _conn.recv()
        except EOFError:
            return
        _offset = request["offset"]
        if init_error is not None:
            _conn.send(init_error)
            continue
        # Lambda sets this per invocation; the SDK sends it as X-Amzn-Trace-Id with every call.
        os.environ["_X_AMZN_TRACE_ID"] = request["trace_id"]
        try:
            event = json.loads(request["payload"] or b"null")
            context = LambdaContext(request["context"], request["deadline"])
            result = handler(event, context)
            payload = json.dumps(result).encode()
            reply = {"type": "result", "payload": payload}
        except Exception as exc:  # noqa: BLE001 - the Lambda error contract covers every exception
            reply = _error(exc)
            _log_error(reply)
        sys.stdout.flush()
        sys.stderr.flush()
        _conn.send(reply)


# -- the zygote ---------------------------------------------------------------------------------------
# What the zygote holds for its instances to share: modules imported from the sandbox (the runtime's
# SDK and the managed layers) and the SDK data parsed into the shared botocore loader.
_sandbox_dirs: tuple[str, ...] = ()
_preloaded: set[str] = set()
_botocore_loads: list[list] = []


def _what_to_share() -> dict:
    """What this instance's cold start loaded from the sandbox that the zygote does not hold yet."""
    modules = [name for name, module in list(sys.modules.items())
               if name not in _preloaded and (getattr(module, "__file__", None) or "").startswith(_sandbox_dirs)]
    return {"modules": modules, "botocore_loads": _botocore_loads}


def _share(what: dict) -> None:
    """Import and parse what an instance's cold start did, so instances forked later share it."""
    before = set(sys.modules)
    for name in what["modules"]:
        with contextlib.suppress(Exception):  # one that needs the function's own environment stays per instance
            importlib.import_module(name)
    _preloaded.update(set(sys.modules) - before)
    if what["botocore_loads"]:
        import boto3.session
        from botocore.exceptions import DataNotFoundError

        # A boto3 session: its loader also searches boto3's own data (resource models).
        session = boto3.session.Session()
        for service_name, type_name, api_version in what["botocore_loads"]:
            with contextlib.suppress(DataNotFoundError):  # found on the instance's own paths only
                session._loader.load_service_model(service_name, type_name, api_version)
        # A throwaway client per service fills the SDK's per-service caches here, once, instead of
        # in every instance's first client (about 3 MB an instance for S3).
        for service_name in {load[0] for load in what["botocore_loads"] if load[1] == "service-2"}:
            with contextlib.suppress(Exception):  # a model found on the instance's own paths only
                session.client(service_name, region_name="us-east-1", aws_access_key_id="-", aws_secret_access_key="-")
        _botocore_loads.clear()
    _keep_shared()


# CPython 3.12 and 3.13 on 64-bit builds with the GIL: an object whose reference count is UINT_MAX is
# immortal; Py_INCREF and Py_DECREF leave it unwritten (PEP 683; Include/object.h of those releases).
_IMMORTAL_REFCOUNT = 0xFFFFFFFF
_CAN_IMMORTALIZE = (
    sys.version_info[:2] in ((3, 12), (3, 13)) and sys.maxsize > 2**32 and not sysconfig.get_config_var("Py_GIL_DISABLED")
)


def _keep_shared() -> None:
    """Keep what the zygote holds now shared with every instance forked later, page for page.

    A forked instance copies a page of the zygote's as soon as it writes to it, and merely reading an
    object writes its reference count (and the collector writes its header). So every object that
    exists now, and every object they hold, is made immortal where the interpreter supports it (the
    use PEP 683 names: objects shared across a fork keep their pages), then frozen out of the
    collector. The zygote keeps all of them anyway, for its whole life. An S3 client's first creation
    in an instance copies about 4 MB fewer pages this way.
    """
    gc.collect()
    if _CAN_IMMORTALIZE:
        import ctypes

        seen: set[int] = set()
        new = gc.get_objects()  # the collector's objects not frozen yet
        for holder in new:
            if holder is new:
                continue
            for obj in (holder, *gc.get_referents(holder)):
                address = id(obj)
                if address in seen:
                    continue
                seen.add(address)
                refcount = ctypes.c_ssize_t.from_address(address)
                if 0 < refcount.value < 2**31:  # not immortal already
                    refcount.value = _IMMORTAL_REFCOUNT
    gc.freeze()


def _share_botocore_data() -> None:
    """One botocore data loader for every session, warmed with what every client reads.

    On AWS each boto3/botocore session parses the SDK's JSON files into its own loader: the endpoint
    and partition tables alone take 7 MB, and Powertools' utilities each open a session of their own.
    Here every session of every instance gets the zygote's loader, whose contents are shared pages;
    the data is the same, parsed once. One throwaway client (its session is discarded) imports what
    creating a client imports; the service models instances parse are shared through ``_share``.
    """
    import botocore.loaders
    import botocore.session

    shared = botocore.loaders.create_loader()
    for name in ("endpoints", "partitions", "sdk-default-configuration", "_retry"):
        shared.load_data(name)
    parse = shared.load_service_model

    def load_service_model(service_name: str, type_name: str, api_version: str | None = None) -> dict:
        _botocore_loads.append([service_name, type_name, api_version])
        return parse(service_name, type_name, api_version)

    shared.load_service_model = load_service_model
    botocore.session.Session._register_data_loader = lambda self: self._components.lazy_register_component(
        "data_loader", lambda: shared
    )
    _share_event_aliases()
    _check_handlers_once()
    botocore.session.Session().create_client(
        "sts", region_name="us-east-1", aws_access_key_id="-", aws_secret_access_key="-"
    )
    _botocore_loads.clear()


def _share_event_aliases() -> None:
    """One table of botocore's event names under its aliases for every session and client.

    Every botocore session registers the SDK's hundred-odd built-in handlers, and every event name is
    rewritten through the SDK's aliases (``EVENT_ALIASES``) on the way; each session and each client
    keeps its own table of the names rewritten so far, so every instance's first sessions (its own,
    and one per Powertools utility) worked them all out again: a fifth of a handler's import in a
    profile of a cold start. The rewriting depends on the name and the aliases alone, so emitters
    with the SDK's own aliases share one table, filled here and in every instance's cold start.
    """
    import botocore.hooks

    aliased: dict[str, str] = {}
    original_init = botocore.hooks.EventAliaser.__init__

    def __init__(self: botocore.hooks.EventAliaser, event_emitter: object, event_aliases: dict | None = None) -> None:
        original_init(self, event_emitter, event_aliases)
        if self._event_aliases == botocore.hooks.EVENT_ALIASES:  # a client's emitter holds a copy of them
            self._alias_name_cache = aliased

    botocore.hooks.EventAliaser.__init__ = __init__


def _check_handlers_once() -> None:
    """Each function registered as an event handler is checked for ``**kwargs`` once, not at every
    registration.

    botocore refuses a handler that takes no keyword arguments, and checks it with
    ``inspect.getfullargspec`` each time one is registered: a hundred-odd times a session, most of
    them the SDK's own functions again, the largest part of a session's start after the aliases. A
    function's parameters never change, so the answer is kept per function (a bound method's is its
    function's); any other callable is checked as before. Weakly: a closure a handler registers is
    forgotten with it, and keeps nothing it holds alive.
    """
    import types
    import weakref

    import botocore.hooks

    original = botocore.hooks.accepts_kwargs
    answers: weakref.WeakKeyDictionary[types.FunctionType, str | None] = weakref.WeakKeyDictionary()  # its ** parameter's name

    def accepts_kwargs(handler: object) -> str | None:
        function = getattr(handler, "__func__", handler)
        if not isinstance(function, types.FunctionType):
            return original(handler)
        if function not in answers:
            answers[function] = original(handler)
        return answers[function]

    botocore.hooks.accepts_kwargs = accepts_kwargs


def _drop_shadowed_preloads(own_dirs: list[str]) -> None:
    """Forget every preloaded module if the function ships its own copy of any of them.

    On AWS a package in the function's code or layers shadows the runtime's (a newer boto3, say), and
    whatever the layer's packages import resolves to it as well; so all preloads go, not only that one.
    """
    tops = {name.partition(".")[0] for name in _preloaded}
    if any(importlib.machinery.PathFinder.find_spec(top, own_dirs) for top in tops):
        for name in _preloaded:
            sys.modules.pop(name, None)
        _preloaded.clear()


def _read_zone_path_from_environment() -> None:
    """zoneinfo's search path as a process started with the function's environment reads it.

    zoneinfo reads PYTHONTZPATH once, when imported. A zoneinfo the zygote imported (pydantic, which
    Powertools' parser uses, imports it) read the zygote's environment, without the function's
    variables, and may hold zones read from the host's database; on AWS the function's process starts
    with its variables, so a function with PYTHONTZPATH empty reads only the tzdata package it ships.
    """
    zoneinfo = sys.modules.get("zoneinfo")
    if zoneinfo is not None:
        zoneinfo.reset_tzpath()
        zoneinfo.ZoneInfo.clear_cache()


def _instance(request: dict, sock_fd: int, stdlib: list[str], runtime_dir: str) -> None:
    """Become one instance of a function: its log, environment, paths and handler; serve until told to stop."""
    global _conn
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a handler's subprocesses are its own to wait for
    log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.environ.clear()
    os.environ.update(request["env"])
    _read_zone_path_from_environment()
    code_dir = request["env"]["LAMBDA_TASK_ROOT"]
    # Lambda's order: function code first, then each layer's python/ directory, then the runtime.
    sys.path[:] = [code_dir, *request["layers"], *stdlib, runtime_dir]
    _drop_shadowed_preloads([code_dir, *request["own_layers"]])
    os.chdir(code_dir)
    _conn = Connection(sock_fd)
    _serve(*_import_handler(os.environ["_HANDLER"]))


def zygote() -> None:
    global _sandbox_dirs
    control = socket.socket(fileno=int(os.environ.pop("EMULATOR_ZYGOTE_FD")))
    stdlib = list(sys.path)  # -S: the interpreter's standard library only
    runtime_dir = os.environ.pop("EMULATOR_RUNTIME_PATH")
    preload_dirs = [d for d in os.environ.pop("EMULATOR_PRELOAD_PATHS").split(os.pathsep) if d]
    _sandbox_dirs = (*preload_dirs, runtime_dir)
    sys.path[:] = [*preload_dirs, *stdlib, runtime_dir]
    # Before any preload, so modules that keep a reference to time.time/sleep get the simulated ones.
    _install_simulated_clock()
    before = set(sys.modules)
    for module in os.environ.pop("EMULATOR_PRELOAD_MODULES").split(","):
        importlib.import_module(module)
    if "botocore" in sys.modules:
        _share_botocore_data()
    _preloaded.update(set(sys.modules) - before)
    _keep_shared()
    # Instances are reaped by the kernel; the emulator watches them through pidfds.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    control.send(json.dumps({"type": "ready"}).encode())
    while True:
        data, fds, _, _ = socket.recv_fds(control, 1 << 20, 1)
        if not data:  # the emulator closed its end
            return
        if not fds:  # what an instance's cold start loaded
            _share(json.loads(data))
            control.send(b"{}")
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            control.close()
            try:
                _instance(json.loads(data), fds[0], stdlib, runtime_dir)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(0)
        os.close(fds[0])
        control.send(json.dumps({"pid": pid}).encode())


if __name__ == "__main__":
    zygote()
