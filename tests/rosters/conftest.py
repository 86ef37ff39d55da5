"""The roster commands' tests use the event tests' settings, receiver and deliverer, as the
sessions tests do."""

from tests.events.conftest import deliverer, make_deliverer, receiver, settings

__all__ = ["deliverer", "make_deliverer", "receiver", "settings"]
