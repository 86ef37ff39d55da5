"""The sessions tests use the event tests' settings, receiver and deliverer."""

from tests.events.conftest import deliverer, make_deliverer, receiver, settings

__all__ = ["deliverer", "make_deliverer", "receiver", "settings"]
