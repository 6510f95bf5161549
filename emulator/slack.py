"""A stand-in for Slack as an app meets it: a real HTTP server on 127.0.0.1 that records and scripts answers.

An incoming webhook, and the Slack app behind it (its interactivity and slash commands):

    with SlackStandIn() as slack:
        slack.fail_next(2, status=500)          # the next two POSTs get 500, then 200 "ok" again
        slack.fail_next(1, status=429, retry_after=3)   # Slack's rate-limited answer
        slack.fail_for("bar@example.com")       # every POST whose body mentions this user gets 500
        slack.hang_next(seconds=10)             # the next POST gets no answer for 10 s
        slack.limit_rate(per_second=1, burst=4) # Slack's webhook pace (the default), on slack.now's clock
        slack.lift_rate_limit()                 # any number of posts at once, for a test of something else
        slack.revoke()                          # the webhook was removed: 404 no_service
        ... POST to slack.url ...
        slack.posts                             # every POST, in arrival order, with what it was answered

        slack.install(manifest, signing_secret) # the Slack app as its manifest (slack/app-manifest.json) declares it
        slack.click(seq, block=1, element=0)    # what a person's click on a button sends the app
        slack.shown(seq)                        # the message as shown now (after response_url updates)
        slack.slash_command("/oncall", "cover primary", user="U0123ABCD")   # what a person typing it sends the app

The app plays only what its manifest declares (https://api.slack.com/reference/manifests):
interactivity (``settings.interactivity``, ``is_enabled`` and ``request_url``) and slash commands
(``features.slash_commands``, each ``command`` and its ``url``). A click on a button sends the
request URL a signed ``block_actions`` payload (https://api.slack.com/interactivity/handling,
https://api.slack.com/docs/verifying-requests-from-slack); a POST to the payload's ``response_url``
replaces or deletes the message, or posts a new one. A declared slash command sends its URL the
signed form Slack sends (https://api.slack.com/interactivity/slash-commands); one the manifest lacks
reaches no app, and the person is told "/foo is not a valid command" as Slack tells them.
Standard library only, and no imports from the rest of this package, so it works both as
``emulator.slack`` and as a plain module.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import math
import re
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import urlencode

WEBHOOK_PATH = "/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
RESPONSE_URL_PATH = "/actions/T00000000/"
COMMAND_RESPONSE_URL_PATH = "/commands/T00000000/"
TEAM = {"id": "T00000000", "domain": "local"}
CHANNEL = {"id": "C00000000", "name": "alerts"}
APP_ID = "A00000000"
# Who clicks when the message mentions nobody (a mentioned member clicks otherwise).
DEFAULT_CLICKER = "U00000001"
# "You can use response_url up to 5 times within 30 minutes" (https://api.slack.com/interactivity/handling).
RESPONSE_URL_USES, RESPONSE_URL_SECONDS = 5, 30 * 60
# An incoming webhook takes about one message a second, with short bursts; beyond it 429 with
# Retry-After (https://api.slack.com/docs/rate-limits). The stand-in keeps that pace unless lifted.
PACE_PER_SECOND, PACE_BURST = 1.0, 4
_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")


@dataclass(frozen=True)
class RecordedPost:
    seq: int  # 1, 2, 3... in arrival order
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None when the body was not JSON
    status: int  # what the stand-in answered (after any hang)
    ts: str = ""  # the message's Slack timestamp ("epoch.micros", on the stand-in's clock)


@dataclass(frozen=True)
class Interaction:
    """One click as the app received it: the signed request and the app's answer."""

    seq: int  # the post clicked
    payload: dict
    request_body: str  # the raw form body that was signed
    headers: dict[str, str]
    status: int | None  # the app's HTTP status, None when it could not be reached
    answer: str


@dataclass(frozen=True)
class CommandRequest:
    """One slash command as a person typed it, and what became of it."""

    command: str
    text: str
    user: str
    fields: dict[str, str] | None  # the form sent to the app; None when the command reached no app
    request_body: str | None  # the raw form body that was signed
    headers: dict[str, str]
    status: int | None  # the app's HTTP status, None when no app was reached
    answer: str  # the app's answer, or what Slack told the person instead


class ManifestRefused(ValueError):
    """A manifest Slack would not create an app from (the part at fault, and why)."""


@dataclass(frozen=True)
class _Answer:
    status: int = 200
    retry_after: int | None = None
    hang_seconds: float = 0.0


@dataclass
class _ResponseUrl:
    seq: int | None  # the message clicked; None for a slash command's (no message to replace)
    issued_at: float
    uses: int = 0


@dataclass
class _Bucket:
    per_second: float
    burst: int
    tokens: float
    at: float | None  # None: full, from the first post on (the clock may be swapped after construction)
    log: list[float] = field(default_factory=list)


class SlackStandIn:
    def __init__(self, now: Callable[[], float] = time.time, *, paced: bool = True) -> None:
        # The clock for message timestamps, signatures and the rate limit: the emulator's simulated
        # clock once a deployment sets it, as the app's handlers see that clock as the time.
        self.now = now
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self._posts: list[RecordedPost] = []
        self._script: deque[_Answer] = deque()
        self._failing_users: dict[str, int] = {}
        self._revoked = False
        self._paced = paced  # the pace reset() returns to
        self._bucket: _Bucket | None = self._initial_pace()
        self._shown: dict[int, Any] = {}  # seq -> the message shown now, when changed (None: deleted)
        self._response_urls: dict[str, _ResponseUrl] = {}
        self._interactions: list[Interaction] = []
        self._commands_sent: list[CommandRequest] = []
        self.request_url: str | None = None  # interactivity's, when the manifest turns it on
        self._slash_commands: dict[str, str] = {}  # command -> its URL, as the manifest declares them
        self._signing_secret: str | None = None
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
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the Slack stand-in is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        return self.base_url + WEBHOOK_PATH

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

    def revoke(self) -> None:
        """The webhook was removed: every POST to it gets 404 ``no_service``, as Slack answers."""
        with self._lock:
            self._revoked = True

    def limit_rate(self, *, per_second: float = PACE_PER_SECOND, burst: int = PACE_BURST) -> None:
        """Slack's webhook rate limit: about ``per_second`` messages a second, with short bursts.

        A post over it gets 429 with ``Retry-After`` (whole seconds until a post would be accepted)
        and is not delivered (https://api.slack.com/docs/rate-limits). Measured on ``self.now``.
        On by default (Slack's pace), starting with a full burst.
        """
        with self._lock:
            self._bucket = _Bucket(per_second, burst, float(burst), None)

    def _initial_pace(self) -> _Bucket | None:
        return _Bucket(PACE_PER_SECOND, PACE_BURST, float(PACE_BURST), None) if self._paced else None

    def lift_rate_limit(self) -> None:
        """Take any number of posts at once, until reset(): for a test that measures something else."""
        with self._lock:
            self._bucket = None

    def reset(self) -> None:
        """Forget what was received and every scripted answer, back to the pace it was made with (a full
        burst); the installed app stays."""
        with self._lock:
            self._posts.clear()
            self._script.clear()
            self._failing_users.clear()
            self._revoked = False
            self._bucket = self._initial_pace()
            self._shown.clear()
            self._response_urls.clear()
            self._interactions.clear()
            self._commands_sent.clear()

    # -- what was received ---------------------------------------------------------------------
    @property
    def posts(self) -> list[RecordedPost]:
        with self._lock:
            return list(self._posts)

    @property
    def delivered(self) -> list[RecordedPost]:
        """POSTs answered with a 2xx: the messages a Slack channel would show."""
        return [post for post in self.posts if 200 <= post.status < 300]

    @property
    def interactions(self) -> list[Interaction]:
        with self._lock:
            return list(self._interactions)

    @property
    def commands(self) -> list[CommandRequest]:
        """Every slash command typed, in order, those that reached no app included."""
        with self._lock:
            return list(self._commands_sent)

    def shown(self, seq: int) -> Any:
        """The message ``seq`` as the channel shows it now: its body, as updated; None once deleted."""
        with self._lock:
            if seq in self._shown:
                return self._shown[seq]
            post = next((p for p in self._posts if p.seq == seq), None)
            return post.body if post is not None else None

    # -- the app, as its manifest declares it ------------------------------------------------------
    def install(self, manifest: dict, signing_secret: str) -> None:
        """The Slack app created from ``manifest`` (its URLs filled in) and installed, with its signing secret.

        Plays what the manifest declares and nothing else: clicks reach ``settings.interactivity``'s
        ``request_url`` only if ``is_enabled``; each of ``features.slash_commands`` reaches its ``url``.
        Refused (ManifestRefused): what Slack refuses, a slash command without the ``commands`` bot scope;
        and what could reach no app, a URL that is not http(s) (a placeholder left unfilled), a command
        not starting with "/"."""
        interactivity = (manifest.get("settings") or {}).get("interactivity") or {}
        request_url = None
        if interactivity.get("is_enabled"):
            request_url = _checked_url(interactivity.get("request_url"), "settings.interactivity.request_url")
        commands = {}
        declared = (manifest.get("features") or {}).get("slash_commands") or []
        for n, entry in enumerate(declared):
            command = entry.get("command")
            if not isinstance(command, str) or not re.fullmatch(r"/[^\s/]+", command):
                raise ManifestRefused(f"features.slash_commands[{n}].command: {command!r} is not a slash command")
            commands[command] = _checked_url(entry.get("url"), f"features.slash_commands[{n}].url")
        if commands and "commands" not in ((manifest.get("oauth_config") or {}).get("scopes") or {}).get("bot", []):
            # Slack's manifest validation (apps.manifest.validate): "Slash Commands requires `commands` bot scope".
            raise ManifestRefused("oauth_config.scopes.bot: slash commands require the `commands` bot scope")
        with self._lock:
            self.request_url, self._slash_commands, self._signing_secret = request_url, commands, signing_secret

    @property
    def interactive(self) -> bool:
        return self.request_url is not None

    @property
    def slash_commands(self) -> dict[str, str]:
        """The slash commands the installed app declares, each with its URL."""
        with self._lock:
            return dict(self._slash_commands)

    def sign(self, timestamp: str, body: str) -> str:
        """``X-Slack-Signature`` for a request: v0= and the hex HMAC-SHA256 of ``v0:timestamp:body``."""
        if self._signing_secret is None:
            raise RuntimeError("interactivity is not set up: no signing secret")
        base = f"v0:{timestamp}:{body}".encode()
        return "v0=" + hmac.new(self._signing_secret.encode(), base, hashlib.sha256).hexdigest()

    def click(self, seq: int, *, block: int, element: int, user: str | None = None) -> dict:
        """A person clicks button ``element`` of block ``block`` of message ``seq`` as shown now.

        Returns what Slack does: the ``url`` the client opens (the button's, if any) and, where
        interactivity is set up, the ``interaction`` sent to the app (its HTTP status and answer).
        """
        message = self.shown(seq)
        try:
            button = message["blocks"][block]["elements"][element]
        except (KeyError, IndexError, TypeError):
            raise LookupError(f"message {seq} has no button {element} in block {block}") from None
        if not isinstance(button, dict) or button.get("type") != "button":
            raise LookupError(f"element {element} of block {block} of message {seq} is not a button")
        result: dict[str, Any] = {"url": button.get("url"), "interaction": None}
        if self.request_url is not None:
            result["interaction"] = self._send_block_actions(seq, message, block, element, user)
        return result

    def slash_command(self, command: str, text: str = "", *, user: str = DEFAULT_CLICKER) -> dict:
        """A person types ``command text`` in the channel: Slack sends the command's URL the signed form it
        sends (https://api.slack.com/interactivity/slash-commands#app_command_handling), stamped with
        ``self.now``, and shows the person the answer. A command no installed app declares reaches no app:
        Slack tells the person it is not a valid command. Returns ``sent``, the app's ``status`` and the
        ``answer`` (the app's body, or Slack's words)."""
        with self._lock:
            url = self._slash_commands.get(command)
        if url is None:
            answer = f"{command} is not a valid command"
            with self._lock:
                self._commands_sent.append(CommandRequest(command, text, user, None, None, {}, None, answer))
            return {"sent": False, "status": None, "answer": answer}
        now = self.now()
        token = secrets.token_hex(12)
        with self._lock:
            self._response_urls[token] = _ResponseUrl(None, now)
        fields = {
            "token": "stand-in-verification-token",  # Slack's deprecated verification token
            "team_id": TEAM["id"], "team_domain": TEAM["domain"],
            "channel_id": CHANNEL["id"], "channel_name": CHANNEL["name"],
            "user_id": user, "user_name": user.lower(),
            "command": command, "text": text,
            "api_app_id": APP_ID, "is_enterprise_install": "false",
            "response_url": f"{self.base_url}{COMMAND_RESPONSE_URL_PATH}{token}",
            "trigger_id": f"{int(now)}.{secrets.token_hex(16)}",
        }
        body = urlencode(fields)
        status, answer, headers = self._post_signed(url, body, now)
        with self._lock:
            self._commands_sent.append(CommandRequest(command, text, user, fields, body, headers, status, answer))
        return {"sent": True, "status": status, "answer": answer}

    def _post_signed(self, url: str, body: str, now: float) -> tuple[int | None, str, dict[str, str]]:
        """POST a form to the app signed as Slack signs: its status (None if unreachable), its answer, the headers."""
        timestamp = str(int(now))
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": self.sign(timestamp, body),
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        }
        request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
        status: int | None
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - a loopback URL
                status, answer = response.status, response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            status, answer = error.code, error.read().decode(errors="replace")
        except OSError as error:
            status, answer = None, f"could not reach {url}: {error}"
        return status, answer, headers

    def _send_block_actions(self, seq: int, message: dict, block: int, element: int, user: str | None) -> dict:
        now = self.now()
        post = next(p for p in self.posts if p.seq == seq)
        blocks = _with_ids(seq, message.get("blocks") or [])
        button = blocks[block]["elements"][element]
        clicker = user or next(iter(_MENTION.findall(json.dumps(message))), DEFAULT_CLICKER)
        token = secrets.token_hex(12)
        with self._lock:
            self._response_urls[token] = _ResponseUrl(seq, now)
        action = {
            "action_id": button["action_id"],
            "block_id": blocks[block]["block_id"],
            "text": button.get("text"),
            "type": "button",
            "action_ts": f"{now:.6f}",
            **{key: button[key] for key in ("value", "url", "style") if key in button},
        }
        payload = {
            "type": "block_actions",
            "user": {"id": clicker, "username": clicker.lower(), "name": clicker.lower(), "team_id": TEAM["id"]},
            "api_app_id": APP_ID,
            "token": "stand-in-verification-token",  # Slack's deprecated verification token
            "container": {"type": "message", "message_ts": post.ts, "channel_id": CHANNEL["id"], "is_ephemeral": False},
            "trigger_id": f"{int(now)}.{seq}.{secrets.token_hex(16)}",
            "team": TEAM,
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": CHANNEL,
            "message": {"type": "message", "subtype": "bot_message", "bot_id": "B00000000", "ts": post.ts,
                        "text": message.get("text", ""), "blocks": blocks},
            "state": {"values": {}},
            "response_url": f"{self.base_url}{RESPONSE_URL_PATH}{seq}/{token}",
            "actions": [action],
        }
        body = urlencode({"payload": json.dumps(payload)})
        status, answer, headers = self._post_signed(self.request_url or "", body, now)
        with self._lock:
            self._interactions.append(Interaction(seq, payload, body, headers, status, answer))
        return {"status": status, "answer": answer}

    # -- serving -------------------------------------------------------------------------------
    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        raw = request.rfile.read(int(request.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if request.path.startswith(RESPONSE_URL_PATH):
            return self._respond(request, request.path[len(RESPONSE_URL_PATH):].partition("/")[2], body)
        if request.path.startswith(COMMAND_RESPONSE_URL_PATH):
            return self._respond(request, request.path[len(COMMAND_RESPONSE_URL_PATH):], body)
        with self._lock:
            text = body.get("text") if isinstance(body, dict) else None
            answer = self._answer_for(text if isinstance(text, str) else raw.decode(errors="replace"))
            self._posts.append(RecordedPost(next(self._seq), request.path, dict(request.headers.items()), body,
                                            answer.status, f"{self.now():.6f}"))
        if answer.hang_seconds and self._stopping.wait(answer.hang_seconds):
            return
        headers = {"Retry-After": str(answer.retry_after)} if answer.retry_after is not None else {}
        _reply(request, answer.status, _reply_text(answer.status), headers)

    def _answer_for(self, body_text: str) -> _Answer:
        if self._revoked:
            return _Answer(404)
        for user, status in self._failing_users.items():
            if user in body_text:
                return _Answer(status)
        if self._script:
            return self._script.popleft()
        return self._take_rate_token()

    def _take_rate_token(self) -> _Answer:
        bucket = self._bucket
        if bucket is None:
            return _Answer()
        now = self.now()
        if bucket.at is not None:
            bucket.tokens = min(float(bucket.burst), bucket.tokens + max(0.0, now - bucket.at) * bucket.per_second)
        bucket.at = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return _Answer()
        return _Answer(429, retry_after=max(1, math.ceil((1 - bucket.tokens) / bucket.per_second)))

    def _respond(self, request: BaseHTTPRequestHandler, token: str, body: Any) -> None:
        """A POST to a response_url: replace or delete the message clicked, or post a new one (always, for
        a slash command's: it has no message to replace)."""
        with self._lock:
            issued = self._response_urls.get(token)
            expired = issued is None or issued.uses >= RESPONSE_URL_USES or self.now() - issued.issued_at > RESPONSE_URL_SECONDS
            if expired or not isinstance(body, dict):
                status = 404 if expired else 400
            else:
                issued.uses += 1
                status = 200
                if issued.seq is not None and body.get("delete_original"):
                    self._shown[issued.seq] = None
                elif issued.seq is not None and body.get("replace_original"):
                    self._shown[issued.seq] = {k: v for k, v in body.items() if k not in ("replace_original", "response_type")}
                else:
                    self._posts.append(RecordedPost(next(self._seq), request.path, dict(request.headers.items()), body,
                                                    200, f"{self.now():.6f}"))
        if status == 200:
            _reply(request, 200, b'{"ok":true}', content_type="application/json")
        else:
            _reply(request, status, b"expired_url" if status == 404 else b"invalid_payload")


def _checked_url(url: Any, where: str) -> str:
    if not isinstance(url, str) or not re.fullmatch(r"https?://[^\s<>]+", url):
        raise ManifestRefused(f"{where}: {url!r} is not an http(s) URL (a placeholder left unfilled?)")
    return url


def _with_ids(seq: int, blocks: list) -> list:
    """Blocks as Slack stores them: every block has a block_id and every button an action_id."""
    shown = []
    for b, block in enumerate(blocks):
        block = dict(block)
        block.setdefault("block_id", f"{seq}.{b}")
        if isinstance(block.get("elements"), list):
            block["elements"] = [
                {**element, "action_id": element.get("action_id") or f"{seq}.{b}.{e}"} if isinstance(element, dict) else element
                for e, element in enumerate(block["elements"])
            ]
        shown.append(block)
    return shown


def _reply_text(status: int) -> bytes:
    if status < 300:
        return b"ok"
    return {404: b"no_service", 429: b"rate_limited"}.get(status, b"internal_error" if status >= 500 else b"invalid_payload")


def _reply(request: BaseHTTPRequestHandler, status: int, text: bytes, headers: dict[str, str] | None = None,
           content_type: str = "text/plain") -> None:
    try:
        request.send_response(status)
        request.send_header("Content-Type", content_type)
        request.send_header("Content-Length", str(len(text)))
        for name, value in (headers or {}).items():
            request.send_header(name, value)
        request.end_headers()
        request.wfile.write(text)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client gave up waiting (a hang longer than its timeout)
