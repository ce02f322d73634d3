"""Tests run in float64 so that fast paths can be compared with dense references tightly.

Compiled programs are dropped after each test module: one process compiles thousands of them
over the whole suite, and holding them all grows memory without bound.
"""

import jax
import pytest

jax.config.update("jax_enable_x64", True)


@pytest.fixture(autouse=True, scope="module")
def _fresh_compilation_caches():
    yield
    jax.clear_caches()
