"""The suite's precision, and fresh compilation caches per module.

Two runs (both in ``.ci/run``):

* ``python -m pytest -q`` — float64 (``jax_enable_x64`` on), so that fast paths can be compared
  with dense references tightly;
* ``JAXMTL_TEST_PRECISION=float32 python -m pytest -q`` — JAX's default configuration (x64 off),
  the one users run: only the modules in ``FLOAT32_MODULES`` are collected, with the float32
  tolerances of :data:`FLOAT32_PROMISE`.

Many modules switch x64 on when imported (so that they run alone in float64); an autouse
fixture sets the run's precision again before every test.

Compiled programs are dropped after each test module: one process compiles thousands of them
over the whole suite, and holding them all grows memory without bound.

LAPACK runs single-threaded in the suite's processes (``OPENBLAS_NUM_THREADS=1`` unless set): JAX's
CPU backend calls the OpenBLAS that SciPy ships for its factorisations and eigendecompositions,
and with two test workers on two cores each worker's OpenBLAS threads spin against the other's
(docs/performance.md, "Several processes on one machine": an 80 × 80 eigendecomposition took
20–80 ms instead of 0.4 ms on a loaded machine).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before SciPy's OpenBLAS is loaded (see above)

from pathlib import Path

import jax
import pytest
from threadpoolctl import threadpool_limits

threadpool_limits(1)  # and the BLAS libraries already loaded (NumPy's) single-threaded too

PRECISION = os.environ.get("JAXMTL_TEST_PRECISION", "float64")
if PRECISION not in ("float32", "float64"):
    raise pytest.UsageError(f"JAXMTL_TEST_PRECISION must be 'float32' or 'float64'; received {PRECISION!r}.")
X64 = PRECISION == "float64"

# The float32 run: every estimator, filter, path, selection criterion, persistence, predictors and
# the scikit-learn compatibility tests (check_estimator on every estimator) in the default configuration.
# (test_matmul_precision.py is not among them: every fit there pins its dtype, so it computes the same
# programs in either run, and runs in the float64 run only.)
FLOAT32_MODULES = ("test_float32.py", "test_precision.py", "test_sklearn_compat.py",
                   "test_docstring_examples.py", "test_vector_valued_families.py", "test_hyper_gradients.py",
                   "test_regularization_path.py", "test_extending.py", "test_lineax.py", "test_export.py",
                   "test_export_all.py", "test_traced_api.py", "test_streaming.py", "test_approximate_mesh.py",
                   "test_direct_route.py", "test_estimator_routes.py", "test_falkon_grid.py", "test_buckets.py",
                   "test_buckets_multitask.py", "test_buckets_fields.py",
                   "test_buckets_solvers.py", "test_buckets_output_kernel.py", "test_buckets_mixed_effect.py")

# What float32 promises (used by the tests of FLOAT32_MODULES): unit roundoff 6e-8; a path or a
# solve at a conditioning κ loses log10(κ) digits, so coefficients and predictions of the
# well-conditioned problems tested agree with float64 to `rtol`; a selected model's test error is
# within `error_factor` of float64's (plus `error_atol` for near-zero errors).
FLOAT32_PROMISE = {"rtol": 2e-3, "atol": 2e-4, "error_factor": 1.1, "error_atol": 1e-3}

jax.config.update("jax_enable_x64", X64)

# JAXMTL_TEST_PRODUCTS=tf32 (or bfloat16): the whole run with every float32 product that is not asked
# for HIGHEST rounded as a GPU's tensor cores (TPU's) round it under JAX's default precision
# (:func:`jaxmtl._emulate.emulated_products`), so that a CPU reproduces what the suite meets on an
# accelerator: the library's own computations must not depend on JAX's default precision.
PRODUCTS = os.environ.get("JAXMTL_TEST_PRODUCTS", "")
if PRODUCTS:
    from jaxmtl._emulate import MANTISSA_BITS, emulated_products

    if PRODUCTS not in MANTISSA_BITS:
        raise pytest.UsageError(f"JAXMTL_TEST_PRODUCTS must be one of {sorted(MANTISSA_BITS)}; received {PRODUCTS!r}.")
    _EMULATION = emulated_products(MANTISSA_BITS[PRODUCTS])  # held: for the life of the process
    _EMULATION.__enter__()


# Modules that compare float32 with float64 explicitly (``dtype=``), and the docstring examples (written
# for a fresh session): they run in the float32 run only, in JAX's default configuration.
FLOAT32_ONLY_MODULES = ("test_float32.py", "test_docstring_examples.py")


def pytest_ignore_collect(collection_path: Path, config):
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        if not X64:
            return collection_path.name not in FLOAT32_MODULES
        if collection_path.name in FLOAT32_ONLY_MODULES:
            return True
    return None


# Tests that run a benchmark or reproduction script end to end (its --quick mode, in a subprocess):
# marked ``scripts``, outside the default run (``python -m pytest -q`` stays a few minutes), run by
# ``.ci/run`` with ``-m scripts``.
SCRIPT_MODULES = ("test_repro_scripts.py", "test_repro_music.py", "test_independent_filter.py",
                  "test_perf_solvers_table.py", "test_gpu_suite.py", "test_perf_scale_quick.py",
                  "test_million_quick.py", "test_perf_routes_quick.py", "test_perf_features_quick.py")
# Modules whose tests fit estimators end to end on real or generated data sets, run subprocesses or
# execute whole pages (tutorials, README, the API walks): marked ``long``, outside the default run,
# run by ``.ci/run`` with ``-m "long or scripts"`` (and in its float32 run). The default run keeps
# the dense-reference tests of the kernels, operators, filters, paths, criteria and estimators.
LONG_MODULES = ("test_reliability.py", "test_reliability_must_accept.py", "test_distributed.py",
                "test_task_field_models.py", "test_demo.py", "test_readme.py", "test_tutorials.py",
                "test_defaults.py", "test_multitask_families.py", "test_properties.py", "test_gradient_search.py",
                "test_rls2.py", "test_progress.py", "test_approximate_small.py", "test_null_model.py",
                "test_row_blocks.py", "test_compilation_cache.py", "test_export.py", "test_export_all.py",
                "test_sharded_sweep.py", "test_predictor_interface.py",
                "test_hostile_numerics.py", "test_matmul_precision.py", "test_vector_valued_families.py",
                "test_sklearn_compat.py", "test_extending.py", "test_traced_api.py", "test_hyper_gradients.py",
                "test_docstring_examples.py", "test_float32.py", "test_precision.py", "test_lineax.py",
                "test_regularization_path.py")
SCRIPT_TESTS = ("test_benchmark_quick_mode_runs", "test_the_precision_benchmark_quick_mode_records_its_figures")


# Modules in descending order of their run time on the 2-core machine (the end-to-end and float32
# runs, measured with --durations): xdist's loadfile scheduler hands files out in collection order,
# so the longest start first and the short ones fill the end (xdist's own reorder, by number of
# tests, is switched off in pyproject: it put modules of one test that runs for a minute or two
# last, where one worker ran them while the other idled). Unlisted modules follow, largest first.
HEAVY_MODULES = ("test_float32.py", "test_repro_scripts.py", "test_tutorials.py", "test_docstring_examples.py",
                 "test_sklearn_compat.py", "test_matmul_precision.py",
                 "test_distributed.py", "test_readme.py", "test_demo.py", "test_vector_valued_families.py",
                 "test_approximate_small.py", "test_reliability.py", "test_task_field_models.py",
                 "test_million_quick.py", "test_multitask_families.py", "test_defaults.py", "test_rls2.py",
                 "test_compilation_cache.py", "test_gpu_suite.py", "test_traced_api.py", "test_hyper_gradients.py",
                 "test_default_fit_times.py", "test_reliability_must_accept.py", "test_perf_scale_quick.py",
                 "test_properties.py", "test_hostile_numerics.py", "test_extending.py", "test_independent_filter.py")


def _longest_first(items: list) -> None:
    """Order ``items`` module by module: HEAVY_MODULES first in their order, then the others by their
    number of tests (largest first); a module's tests keep their order."""
    counts: dict = {}
    for item in items:
        counts[item.path] = counts.get(item.path, 0) + 1
    rank = {name: i for i, name in enumerate(HEAVY_MODULES)}
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)), -counts[item.path], str(item.path)))


@pytest.hookimpl(tryfirst=True)  # before the -m selection reads the marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SCRIPT_MODULES or item.originalname in SCRIPT_TESTS:
            item.add_marker(pytest.mark.scripts)
        elif item.path.name in LONG_MODULES:
            item.add_marker(pytest.mark.long)
    _longest_first(items)


def pytest_report_header(config):
    products = f", float32 products emulated as {PRODUCTS}" if PRODUCTS else ""
    return f"jaxmtl test precision: {PRECISION} (jax_enable_x64={X64}){products}"


@pytest.fixture(autouse=True)
def _run_precision():
    jax.config.update("jax_enable_x64", X64)
    yield


@pytest.fixture(autouse=True, scope="module")
def _fresh_compilation_caches():
    yield
    jax.clear_caches()


class _Programs:
    """Counts XLA compilations (``jax.monitoring`` backend-compile events) while registered."""

    def __init__(self):
        self.count = 0

    def __call__(self, event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            self.count += 1


@pytest.fixture
def programs():
    """The programs compiled during the test, counted with jax.monitoring."""
    counter = _Programs()
    jax.monitoring.register_event_duration_secs_listener(counter)
    yield counter
    jax.monitoring.unregister_event_duration_listener(counter)
