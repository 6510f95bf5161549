"""Speed, not behaviour: how moto's server finds the service a request is for."""

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
