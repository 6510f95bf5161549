"""A warm Lambda sandbox: one process per concurrent instance of a function, run by the emulator.

The emulator starts ``python -m emulator.lambda_worker`` with the function's environment, its code
and layers extracted on disk, and a socket (fd in EMULATOR_WORKER_FD). Each request carries an
event, the Lambda context fields and the simulated-clock offset; the handler sees simulated time
through ``time.time``/``datetime.now`` and its ``time.sleep`` is simulated by the emulator.
Messages are pickled dicts over ``multiprocessing.connection.Connection``.
"""

from __future__ import annotations

import datetime as _datetime
import importlib
import json
import os
import sys
import time as _time
import traceback
from multiprocessing.connection import Connection

_real_time = _time.time
_offset = 0.0
_conn: Connection


def _sim_time() -> float:
    return _real_time() + _offset


def _sim_time_ns() -> int:
    return int(_sim_time() * 1e9)


def _sim_sleep(seconds: float) -> None:
    """Ask the emulator to let ``seconds`` of simulated time pass, then resume."""
    global _offset
    if seconds <= 0:
        return
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


def main() -> None:
    global _conn, _offset
    _conn = Connection(int(os.environ.pop("EMULATOR_WORKER_FD")))
    # Lambda's order: function code first, then each layer's python/ directory.
    code_dir = os.environ["LAMBDA_TASK_ROOT"]
    layer_dirs = [d for d in os.environ.pop("EMULATOR_LAYER_PATHS", "").split(os.pathsep) if d]
    sys.path[:0] = [code_dir, *layer_dirs]
    os.chdir(code_dir)
    _install_simulated_clock()

    module_name, _, function_name = os.environ["_HANDLER"].rpartition(".")
    handler = None
    init_error: dict | None = None
    try:
        handler = getattr(importlib.import_module(module_name), function_name)
    except SyntaxError as exc:
        init_error = _error(exc, "Runtime.UserCodeSyntaxError")
    except AttributeError as exc:
        init_error = _error(exc, "Runtime.HandlerNotFound")
    except Exception as exc:  # noqa: BLE001 - the Python runtime reports any import failure this way
        init_error = _error(exc, "Runtime.ImportModuleError")
        init_error["errorMessage"] = f"Unable to import module '{module_name}': {exc}"
    _conn.send({"type": "ready"})

    while True:
        try:
            request = _conn.recv()
        except EOFError:
            return
        _offset = request["offset"]
        if init_error is not None:
            _conn.send(init_error)
            continue
        try:
            event = json.loads(request["payload"] or b"null")
            context = LambdaContext(request["context"], request["deadline"])
            result = handler(event, context)
            payload = json.dumps(result).encode()
            reply = {"type": "result", "payload": payload}
        except Exception as exc:  # noqa: BLE001 - the Lambda error contract covers every exception
            reply = _error(exc)
        sys.stdout.flush()
        sys.stderr.flush()
        _conn.send(reply)


if __name__ == "__main__":
    main()
