"""A real SMTP server and a real HTTP SMS gateway for the notification tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from testkit.receiver import Receiver, receiving
from testkit.smtp import Mailbox, smtp_server

# The console's signed-in clients, for the notification pages.
from tests.console.conftest import console_as, make_staff

__all__ = ["console_as", "make_staff"]


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    with smtp_server() as box:
        yield box


@pytest.fixture
def gateway() -> Iterator[Receiver]:
    with receiving("/2010-04-01/Accounts/AC123/Messages.json") as receiver:
        yield receiver
