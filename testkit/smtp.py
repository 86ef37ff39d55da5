"""A real SMTP server (aiosmtpd) on a free loopback port that keeps and parses what it gets."""

from __future__ import annotations

import asyncio
import email
import email.policy
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from testkit.serve import free_port


@dataclass
class Mailbox:
    """What the server accepted; ``refuse`` plans answers to the next RCPT commands."""

    url: str = ""
    envelopes: list[tuple[str, list[str], bytes]] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    # Seconds between keeping a message and acknowledging it (a sender killed then has
    # handed it over without knowing).
    delay: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def refuse(self, *answers: str) -> None:
        """Answer the next RCPT TO commands with these replies (e.g. "550 5.1.1 no such user")."""
        with self.lock:
            self.refusals.extend(answers)

    @property
    def messages(self) -> list[EmailMessage]:
        with self.lock:
            raw = [content for _from, _to, content in self.envelopes]
        return [
            email.message_from_bytes(content, policy=email.policy.default)  # type: ignore[misc]
            for content in raw
        ]

    def wait_for(self, count: int, timeout: float = 30.0) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while len(self.envelopes) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.envelopes)} of {count} e-mails arrived")
            time.sleep(0.02)
        return self.messages


class _Handler:
    def __init__(self, mailbox: Mailbox) -> None:
        self.mailbox = mailbox

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: Any
    ) -> str:
        with self.mailbox.lock:
            if self.mailbox.refusals:
                return self.mailbox.refusals.pop(0)
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content = envelope.original_content or b""
        with self.mailbox.lock:
            self.mailbox.envelopes.append(
                (str(envelope.mail_from), list(envelope.rcpt_tos), bytes(content))
            )
        if self.mailbox.delay:
            await asyncio.sleep(self.mailbox.delay)
        return "250 Message accepted for delivery"


@contextmanager
def smtp_server(*, smtputf8: bool = True) -> Iterator[Mailbox]:
    """Run an SMTP server on 127.0.0.1 at a free port; yield its mailbox (url: smtp://...).
    ``smtputf8=False``: a server that does not offer SMTPUTF8 (RFC 6531), as many do not."""
    mailbox = Mailbox()
    port = free_port()
    controller = Controller(
        _Handler(mailbox), hostname="127.0.0.1", port=port, enable_SMTPUTF8=smtputf8
    )
    controller.start()
    mailbox.url = f"smtp://127.0.0.1:{port}"
    try:
        yield mailbox
    finally:
        controller.stop()
