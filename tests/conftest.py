"""Tests run in float64 so that fast paths can be compared with dense references tightly."""

import jax

jax.config.update("jax_enable_x64", True)
