"""A stand-in for a Slack incoming webhook: a real HTTP server on 127.0.0.1 that records and scripts answers.

    with SlackStandIn() as slack:
        slack.fail_next(2, status=500)          # the next two POSTs get 500, then 200 "ok" again
        slack.fail_for("bar@example.com")       # every POST whose body mentions this user gets 500
        slack.hang_next(seconds=10)             # the next POST gets no answer for 10 s
        slack.rate_limit(per_second=1, burst=3) # Slack's webhook limit: over it, 429 with Retry-After
        ... POST to slack.url ...
        slack.posts                             # every POST, in arrival order, with what it was answered

Standard library only, and no imports from the rest of this package, so it works both as
``emulator.slack`` and as a plain module.
"""

from __future__ import annotations

import itertools
import json
import math
import threading
import time
from collections.abc import Callable
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WEBHOOK_PATH = "/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"


@dataclass(frozen=True)
class RecordedPost:
    seq: int  # 1, 2, 3... in arrival order
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None when the body was not JSON
    status: int  # what the stand-in answered (after any hang)


@dataclass(frozen=True)
class _Answer:
    status: int = 200
    retry_after: int | None = None
    hang_seconds: float = 0.0


class SlackStandIn:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self._posts: list[RecordedPost] = []
        self._script: deque[_Answer] = deque()
        self._failing_users: dict[str, int] = {}
        self._limit: _TokenBucket | None = None
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> "SlackStandIn":
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                stand_in._handle(self)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
                pass

        self._stopping.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # port 0: a free port
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="slack-stand-in", daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._stopping.set()  # releases hanging requests at once
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "SlackStandIn":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the Slack stand-in is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}{WEBHOOK_PATH}"

    # -- scripting -----------------------------------------------------------------------------
    def fail_next(self, count: int = 1, *, status: int = 500, retry_after: int | None = None) -> None:
        """Answer the next ``count`` POSTs with ``status`` (and a Retry-After header if given)."""
        with self._lock:
            self._script.extend(_Answer(status, retry_after) for _ in range(count))

    def hang_next(self, *, seconds: float, count: int = 1, status: int = 200) -> None:
        """Answer the next ``count`` POSTs only after ``seconds`` (longer than the client's timeout).

        The POST is recorded with ``status`` even though the client stopped waiting: like Slack, the
        stand-in may have delivered a message whose sender saw a timeout.
        """
        with self._lock:
            self._script.extend(_Answer(status, hang_seconds=seconds) for _ in range(count))

    def fail_for(self, user: str, *, status: int = 500) -> None:
        """Always answer ``status`` to POSTs whose text mentions ``user`` (checked before the script)."""
        with self._lock:
            self._failing_users[user] = status

    def rate_limit(self, *, per_second: float, burst: int, clock: Callable[[], float] = time.time) -> None:
        """Answer 429 with Retry-After to POSTs over ``per_second`` (after a ``burst``), as Slack does
        (https://api.slack.com/docs/rate-limits). ``clock``: the time the limit is kept in (simulated
        time, for a test under the emulator's clock)."""
        with self._lock:
            self._limit = _TokenBucket(per_second, burst, clock)

    def reset(self) -> None:
        with self._lock:
            self._posts.clear()
            self._script.clear()
            self._failing_users.clear()
            self._limit = None

    # -- what was received ---------------------------------------------------------------------
    @property
    def posts(self) -> list[RecordedPost]:
        with self._lock:
            return list(self._posts)

    @property
    def delivered(self) -> list[RecordedPost]:
        """POSTs answered with a 2xx: the messages a Slack channel would show."""
        return [post for post in self.posts if 200 <= post.status < 300]

    # -- serving -------------------------------------------------------------------------------
    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        raw = request.rfile.read(int(request.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with self._lock:
            text = body.get("text") if isinstance(body, dict) else None
            answer = self._answer_for(text if isinstance(text, str) else raw.decode(errors="replace"))
            self._posts.append(
                RecordedPost(next(self._seq), request.path, dict(request.headers.items()), body, answer.status)
            )
        if answer.hang_seconds and self._stopping.wait(answer.hang_seconds):
            return
        reply = b"ok" if answer.status < 300 else b"internal_error" if answer.status >= 500 else b"invalid_payload"
        try:
            request.send_response(answer.status)
            request.send_header("Content-Type", "text/plain")
            request.send_header("Content-Length", str(len(reply)))
            if answer.retry_after is not None:
                request.send_header("Retry-After", str(answer.retry_after))
            request.end_headers()
            request.wfile.write(reply)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting (a hang longer than its timeout)

    def _answer_for(self, body_text: str) -> _Answer:
        for user, status in self._failing_users.items():
            if user in body_text:
                return _Answer(status)
        if self._script:
            return self._script.popleft()
        wait = self._limit.take() if self._limit else 0.0
        return _Answer(429, retry_after=math.ceil(wait)) if wait else _Answer()


class _TokenBucket:
    """``burst`` messages at once, then one per ``1 / per_second`` seconds."""

    def __init__(self, per_second: float, burst: int, clock: Callable[[], float]) -> None:
        self._rate, self._burst, self._clock = per_second, burst, clock
        self._tokens, self._at = float(burst), clock()

    def take(self) -> float:
        """0 when a message may go now (and it is counted), else the seconds until one may."""
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._at) * self._rate)
        self._at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return 0.0
        return (1 - self._tokens) / self._rate
