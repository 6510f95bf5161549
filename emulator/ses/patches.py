"""SES v2 as a new account has it: identities verified at creation, the sandbox's recipients checked, mail kept."""

from __future__ import annotations

import base64
import email
import json
from email.utils import getaddresses, parseaddr
from typing import Any, Callable

# The mailbox simulator's domain: its addresses receive mail in the sandbox without being verified.
SIMULATOR_DOMAIN = "simulator.amazonses.com"


def install_identities_verified_at_creation() -> None:
    """An identity is verified for sending as soon as it is created (the emulator mails no link)."""
    from moto.ses.models import EmailIdentity

    original = EmailIdentity.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.verified_for_sending_status = True
        self.verification_status = "SUCCESS"

    EmailIdentity.__init__ = __init__


def install_sandbox_and_mail_log(sandbox: Callable[[], bool]) -> None:
    """SendEmail refuses an unverified sender, and in the sandbox an unverified recipient, naming every
    identity that failed; a mail sent is kept per recipient with its text body (``mail_log``)."""
    from moto.ses.exceptions import MessageRejectedError
    from moto.sesv2.responses import SESV2Response

    original = SESV2Response.send_email

    def send_email(self: Any) -> str:
        params = json.loads(self.body)
        backend = self.sesv2_backend.core_backend
        source, recipients, subject, text = _mail(params)
        failed = [] if _verified(backend, source) else [parseaddr(source)[1]]
        if sandbox():
            failed += [address for address in recipients if not _verified(backend, address)]
        if failed:
            raise MessageRejectedError(
                "Email address is not verified. The following identities failed the check in region "
                f"{self.region.upper()}: {', '.join(failed)}")
        answer = original(self)
        for address in recipients:
            mail_log(self.region, self.current_account).append(
                {"to": address, "from": source, "subject": subject, "text": text})
        return answer

    SESV2Response.send_email = send_email


def mail_log(region: str, account: str) -> list[dict]:
    """The mail the account sent in the region, oldest first: {"to", "from", "subject", "text"}."""
    from moto.sesv2.models import sesv2_backends

    backend = sesv2_backends[account][region]
    if not hasattr(backend, "emulator_mail"):  # on the backend, so a reset of moto's backends clears it
        backend.emulator_mail = []
    return backend.emulator_mail


def _verified(backend: Any, address: str) -> bool:
    _, bare = parseaddr(address)
    return bare.rpartition("@")[2].lower() == SIMULATOR_DOMAIN or backend._is_verified_address(bare)


def _mail(params: dict) -> tuple[str, list[str], str, str]:
    """Sender, recipients (bare addresses), subject and text body of a SendEmail request."""
    destination = params.get("Destination", {})
    recipients = [parseaddr(a)[1] for key in ("ToAddresses", "CcAddresses", "BccAddresses") for a in destination.get(key, [])]
    source = params.get("FromEmailAddress") or ""
    content = params.get("Content", {})
    if "Raw" in content:
        message = email.message_from_bytes(base64.b64decode(content["Raw"]["Data"]))
        source = source or message.get("From", "")
        recipients += [a for _, a in getaddresses(message.get_all("To", []) + message.get_all("Cc", [])) if a]
        part = next((p for p in message.walk() if p.get_content_type() == "text/plain"), None)
        text = part.get_payload(decode=True).decode("utf-8", "replace") if part is not None else ""
        return source, recipients, message.get("Subject", ""), text
    simple = content.get("Simple", {})
    body = simple.get("Body", {})
    text = body.get("Text", {}).get("Data") or body.get("Html", {}).get("Data", "")
    return source, recipients, simple.get("Subject", {}).get("Data", ""), text
