"""Speed, not behaviour: how moto finds the service a request is for, and the backend that serves it."""

from __future__ import annotations

from typing import Any


def install_service_found_once_per_host() -> None:
    """The service a host name stands for is worked out once per host name, not at every request.

    moto's server does it for every request while holding the one lock all requests share: it lists
    moto's package directory and stats each of its ~170 entries (a name such as
    ``dynamodb.us-east-1.amazonaws.com`` never matches one, so all are looked at), then tries its URL
    patterns one by one. Under load the requests queue on that lock: the 10,000-item Map test's
    Lambda handlers spent most of their time waiting there. What a host stands for depends on nothing
    but the host and moto's installed package, which do not change while the emulator runs; a host
    moto does not know is looked up again each time, as before (and reported as before).
    """
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    original = DomainDispatcherApplication.get_backend_for_host
    found: dict[str, Any] = {}

    def get_backend_for_host(self: Any, host: str | None) -> Any:
        if host is None:
            return None
        if host not in found:
            backend = original(self, host)
            if backend is None:
                return None
            found[host] = backend
        return found[host]

    DomainDispatcherApplication.get_backend_for_host = get_backend_for_host


def install_backend_found_without_the_lock() -> None:
    """An account's backend already made is returned at once, without moto's one shared lock.

    moto's ``BackendDict[account]`` takes the lock every backend lookup in the process shares, then
    looks for itself in the list of backends in use (the list ``BackendDict.reset()`` empties) by
    comparing with each in turn, a Python ``__eq__`` per service, at every lookup, of which a request
    makes several. Under the alarm storm's load that was 7% of the emulator's busy time. A lookup
    that finds the account's backend, by a dict known to be on that list since the last reset,
    changes nothing: it is served from the dict directly. Any other takes moto's own path, which
    puts the dict on the list, as before.
    """
    from moto.core.base_backend import BackendDict

    original_getitem = BackendDict.__getitem__
    original_reset = BackendDict.reset.__func__
    listed: set[int] = set()  # the ids of the dicts moto has put on its list since the last reset

    def __getitem__(self: Any, account_id: str) -> Any:
        if id(self) in listed and dict.__contains__(self, account_id):
            return dict.__getitem__(self, account_id)
        backend = original_getitem(self, account_id)
        listed.add(id(self))
        return backend

    def reset(cls: Any) -> None:
        listed.clear()
        original_reset(cls)

    BackendDict.__getitem__ = __getitem__
    BackendDict.reset = classmethod(reset)


def install_actions_listed_once_per_class() -> None:
    """The actions a service's response class implements are listed once per class, not at every request.

    moto looks for the requested action among the methods of the handling class by
    ``inspect.getmembers``, which walks and sorts every attribute of the class and its bases for each
    request: a tenth of the emulator's time serving a DynamoDB GetItem. A class's methods are what
    moto and ``install_all``'s patches made them before the first request, and nothing adds one
    while the emulator serves, so the list made at a class's first request holds.
    """
    from moto.core import responses

    original = responses.method_names_from_class
    listed: dict[type, frozenset[str]] = {}

    def method_names_from_class(clazz: type) -> frozenset[str]:
        if clazz not in listed:
            listed[clazz] = frozenset(original(clazz))
        return listed[clazz]

    responses.method_names_from_class = method_names_from_class


def install_request_lines_made_only_when_logged() -> None:
    """werkzeug's server makes a log line for each request (its path decoded, the date formatted, the
    status coloured) before its logger decides whether to show it: 4% of serving a GetItem. The
    emulator keeps werkzeug's logger at ERROR (emulator/session.py), where the line is never shown;
    a logger that would show a request line at INFO still gets it, made as before.
    """
    import logging

    from moto.moto_server.werkzeug_app import MotoRequestHandler

    original = MotoRequestHandler.log_request
    logger = logging.getLogger("werkzeug")

    def log_request(self: Any, code: int | str = "-", size: int | str = "-") -> None:
        if logger.isEnabledFor(logging.INFO):
            original(self, code, size)

    MotoRequestHandler.log_request = log_request
