"""Progress between chunks: chunked_scan equals lax.scan and calls back once per chunk."""

import io

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np

from jaxmtl._progress import ProgressBar, chunked_scan


def body(c, x):
    c = 0.9 * c + jnp.sin(x)
    return c, c * x


def test_chunked_scan_equals_lax_scan_and_reports_each_chunk():
    xs = jnp.arange(23.0)
    seen = []
    carry, ys = jax.jit(lambda xs: chunked_scan(body, 0.0, xs, every=5, callback=seen.append))(xs)
    ref_carry, ref_ys = jax.lax.scan(body, 0.0, xs)
    np.testing.assert_allclose(carry, ref_carry, rtol=1e-14)
    np.testing.assert_allclose(ys, ref_ys, rtol=1e-14)
    assert seen == [5, 10, 15, 20, 23]


def test_progress_bar_draws_to_its_stream():
    out = io.StringIO()
    bar = ProgressBar(total=10, desc="path", stream=out)
    bar.update(5)
    bar.update(10)
    text = out.getvalue()
    assert "5/10" in text and "10/10" in text and text.endswith("\n")
    silent = io.StringIO()
    ProgressBar(total=10, enabled=False, stream=silent).update(10)
    assert silent.getvalue() == ""
