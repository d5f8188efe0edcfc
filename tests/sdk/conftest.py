from tests.bridge.conftest import _cards_cleared, recorder  # noqa: F401 - a unit of the test's own, recorded, cleared
