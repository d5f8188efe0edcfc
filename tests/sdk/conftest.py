from tests.bridge.conftest import recorder, unit  # noqa: F401 - a unit of the test's own, recorded
