"""Progress between chunks: chunked_scan equals lax.scan and calls back once per chunk; compiled paths
report their steps to the active stage of a ``verbose`` fit, and reporting changes nothing computed."""

import io

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np

import pytest

from jaxmtl import MultiTaskRegressor
from jaxmtl._progress import ProgressBar, StageReporter, chunked_scan, report_step
from jaxmtl.datasets import make_multitask_toy
from jaxmtl.kernels import Gaussian


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


@pytest.mark.filterwarnings("ignore::jaxmtl.errors.GridEdgeWarning")
def test_matrix_free_fit_draws_its_steps_with_verbose_and_nothing_without(capsys):
    toy = make_multitask_toy(10, rng=0)
    kwargs = dict(route="matrix_free", n_steps=40, kernel=Gaussian(0.5), omegas=[0.0, 0.5], family="common_similarity")
    quiet = MultiTaskRegressor(**kwargs).fit(toy.x, toy.y, toy.tasks)
    assert capsys.readouterr().err == ""
    loud = MultiTaskRegressor(**kwargs, verbose=True).fit(toy.x, toy.y, toy.tasks)
    err = capsys.readouterr().err
    assert "MultiTaskRegressor: 1 kernel(s) × 2 parameter(s) × 40 steps × 1 fold(s), matrix_free" in err
    assert "40/40" in err and "steps [" in err  # the scoring path's bar, drawn to its end
    refit = loud.best_params_["param"]
    assert f"refit: {refit} steps" in err and f"{refit}/{refit}" in err
    # reporting changes nothing computed
    np.testing.assert_array_equal(loud.cv_scores_, quiet.cv_scores_)
    np.testing.assert_array_equal(np.asarray(loud.coef_), np.asarray(quiet.coef_))


def test_report_step_reports_every_twentieth_of_the_path_to_the_active_stage():
    out = io.StringIO()

    def body(c, i):
        report_step(i, 100)
        return c + i, None

    with StageReporter("job", enabled=True, stream=out).stage("a path"):
        jax.block_until_ready(jax.jit(lambda xs: jax.lax.scan(body, 0.0, xs))(jnp.arange(1, 101)))
    text = out.getvalue()
    drawn = [int(s.split("/")[0].split()[-1]) for s in text.split("\r")[1:]]
    assert drawn == list(range(5, 101, 5))
    assert text.startswith("job: a path …\n") and text.rstrip().endswith("s") and "job: a path:" in text
