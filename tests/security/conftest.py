"""The hostile suite's stored world, for the security checks too."""

from tests.hostile.conftest import world as world
