"""The kernel tests compare the compiled path with its reference, so they run in compiled
mode even under ``EMBER_KERNELS=numpy`` (restored afterwards); tests of the mode switch set
their own mode inside."""
import pytest

from ember import kernels


@pytest.fixture(autouse=True)
def _compiled_mode():
    old = kernels.set_mode("auto")
    yield
    kernels.set_mode(old)
