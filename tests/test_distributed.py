"""Multi-process runs on 127.0.0.1 (JAX's CPU collectives, Gloo) equal the one-process library paths.

Each case starts ``tests/distributed_worker.py`` as 2 or 4 processes through the launcher
(``python -m jaxmtl.distributed.launch``: a free port, a hard timeout) and compares what every
process reports with references computed here, in one process, by the library's ordinary
functions: ``grid_path_losses`` / ``path_scan`` on ``BlockedKernelOperator`` for the exact
kernel, ``feature_statistics`` / ``feature_kfold_losses`` for Nyström.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import FLOAT32_PROMISE
from jaxmtl import ApproximateKernelRegressor
from jaxmtl.distributed import check_mesh, global_mesh, resolve_cluster
from jaxmtl.distributed.estimator import DistributedKernelRegressor
from jaxmtl.errors import ParameterError
from jaxmtl.filters.spectral import get_filter
from jaxmtl.kernels import Gaussian
from jaxmtl.operators.blocked import BlockedCrossOperator, BlockedKernelOperator
from jaxmtl.operators.nystrom import NystromFeatures, feature_statistics
from jaxmtl.paths.preconditioned import feature_coefficients, feature_kfold_losses
from jaxmtl.paths.scan import grid_path_losses, path_scan
from jaxmtl.selection.criteria import kfold_masks

ROOT = Path(__file__).resolve().parent.parent
WORKER = str(ROOT / "tests" / "distributed_worker.py")
WIDTHS, STEPS, FOLDS, CENTRES = (0.7, 1.5), 20, 3, 20
ROUTES = {"exact": ("nu_method", None), "landweber": ("landweber", None), "nystrom": ("nu_method", "nystrom")}


def write_data(folder: Path, n: int = 61):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    Y = np.c_[np.sin(X[:, 0]) + 0.1 * rng.normal(size=n), np.cos(X[:, 1])]
    Xt = rng.normal(size=(13, 3))
    for name, a in (("X", X), ("Y", Y), ("Xt", Xt)):
        np.save(folder / f"{name}.npy", a)
    return X, Y, Xt


def launch(processes: int, precision: str, scenario: str, folder: Path, timeout: float = 150, routes: str = "",
           **env):
    cmd = [sys.executable, "-m", "jaxmtl.distributed.launch", "--processes", str(processes), "--timeout",
           str(timeout), "--grace", "20", WORKER, precision, scenario, str(folder), routes]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", **env})
    results = [json.loads(line.split("RESULT ", 1)[1]) for line in proc.stdout.splitlines() if "RESULT " in line]
    return proc, sorted(results, key=lambda r: r["process"]), time.perf_counter() - t0


def reference(X, Y, Xt, filt_name, approximation):
    """The one-process library computation the distributed estimator must reproduce."""
    filt = get_filter(filt_name)
    masks = kfold_masks(X.shape[0], FOLDS, 0)
    Xj, Yj = jnp.asarray(X), jnp.asarray(Y)
    if approximation is None:
        def build(kern, _, data):
            return BlockedKernelOperator(kern, data, jnp.eye(2), 8)

        kernels = jax.tree.map(lambda *v: jnp.stack(v), *[Gaussian(w) for w in WIDTHS])
        losses, _ = grid_path_losses(build, kernels, jnp.zeros(1), Xj, Yj, jnp.asarray(masks), filt, STEPS)
        scores = np.asarray(losses)[:, :, 0].mean(axis=1)
        iw, it = np.unravel_index(np.argmin(scores), scores.shape)
        coef = path_scan(build(Gaussian(WIDTHS[iw]), None, Xj), Yj, filt, int(it) + 1).coef
        pred = BlockedCrossOperator(Gaussian(WIDTHS[iw]), jnp.asarray(Xt), Xj, jnp.eye(2), 8).mv(coef)
    else:
        rng = np.random.default_rng(0)
        Z = X[np.sort(rng.choice(X.shape[0], CENTRES, replace=False))]
        groups = np.argmin(masks, axis=0)
        a, V = jnp.ones((1, 2)), jnp.eye(2)
        fits = []
        for w in WIDTHS:
            fm = NystromFeatures.from_centres(Gaussian(w), jnp.asarray(Z))
            st = feature_statistics(fm, Xj, Yj, groups, FOLDS)
            fits.append((fm, st, np.asarray(feature_kfold_losses(st, a, V, filt, jnp.arange(1, STEPS + 1)))
                         .mean(axis=0)[0]))
        scores = np.stack([f[2] for f in fits])
        iw, it = np.unravel_index(np.argmin(scores), scores.shape)
        fm, st, _ = fits[iw]
        pred = fm(jnp.asarray(Xt)) @ feature_coefficients(st, a[0], V, filt, int(it) + 1)
    return scores, WIDTHS[iw], int(it) + 1, np.asarray(pred)


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.abs(a - b).max() / np.abs(b).max()


def check_equal_to_one_process(tmp_path, processes, precision, tol, routes):
    """Every process's selection equals the reference's; predictions within ``tol`` (relative), the
    held-out losses within 100·tol (the ν-method carries round-off from step to step: float64
    losses differ by ~1e-12 between two compilations of the same path on one process)."""
    X, Y, Xt = write_data(tmp_path)
    proc, results, _ = launch(processes, precision, "paths", tmp_path, routes=",".join(routes))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [r["process"] for r in results] == list(range(processes))
    for r in results:
        assert r["processes"] == processes and r["devices"] == processes
        assert "mesh must span every process" in r["local_mesh_error"]
        assert r["to_host_equal"]
    for name in routes:
        filt, approx = ROUTES[name]
        scores, width, step, pred = reference(X, Y, Xt, filt, approx)
        for r in results:  # every process: the reference's numbers and its selection
            got = r[name]
            assert rel(got["scores"], scores) <= 100 * tol
            assert (got["width"], got["step"]) == (width, step)
            assert rel(got["pred"], pred) <= tol
        # the streamed predictions written by process 0 are the returned ones
        np.testing.assert_array_equal(np.load(results[0][name]["pred_file"]), np.asarray(results[0][name]["pred"]))


def test_distributed_two_processes_equal_one_process_float64(tmp_path):
    jax.config.update("jax_enable_x64", True)
    check_equal_to_one_process(tmp_path, 2, "float64", 1e-10, ("exact", "landweber", "nystrom"))


def check_approximate_equal_to_one_process(tmp_path, processes, precision, tol):
    """ApproximateKernelRegressor(mesh=...) on ``processes`` processes, each reading its own rows of the
    .npy files, selects and predicts what the same estimator fitted in this process on the arrays does."""
    X, Y, Xt = write_data(tmp_path)
    proc, results, _ = launch(processes, precision, "paths", tmp_path, routes="approximate")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ref = ApproximateKernelRegressor(n_components=20).fit(X, Y)
    assert len(results) == processes
    for r in results:
        got = r["approximate"]
        assert (got["width"], got["family"]) == (ref.best_params_["kernel_width"], ref.family_)
        np.testing.assert_allclose(got["param"], ref.best_params_["param"], rtol=1e-12)
        assert rel(got["y_mean"], ref.y_mean_) <= tol
        assert rel(got["pred"], ref.predict(Xt)) <= tol


def test_approximate_estimator_on_two_processes_equals_one_process_float64(tmp_path):
    jax.config.update("jax_enable_x64", True)
    check_approximate_equal_to_one_process(tmp_path, 2, "float64", 1e-10)


def test_approximate_estimator_on_two_processes_equals_one_process_float32(tmp_path):
    # JAX's default configuration: two processes sum their statistics in another order than one
    # process does; the selection is the same and predictions agree within float32's promise
    with jax.enable_x64(False):
        check_approximate_equal_to_one_process(tmp_path, 2, "float32", FLOAT32_PROMISE["rtol"])


def test_approximate_estimator_refuses_a_bad_row_on_every_process(tmp_path):
    _, Y, _ = write_data(tmp_path)
    Y[-1, 0] = np.nan  # in the last process's rows only
    np.save(tmp_path / "Ynan.npy", Y)
    proc, results, _ = launch(2, "float64", "paths", tmp_path, routes="refused")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    errors = {r["process"]: r["refused"] for r in results}
    assert errors[1].startswith("NonFiniteError") and "y" in errors[1]
    assert errors[0].startswith("DistributedError") and "process(es) [1]" in errors[0]


def test_distributed_four_processes_equal_one_process_float32(tmp_path):
    with jax.enable_x64(False):
        check_equal_to_one_process(tmp_path, 4, "float32", 2e-4, ("exact",))


@pytest.mark.slow
def test_distributed_four_processes_equal_one_process_float64(tmp_path):
    # four shards add their partial products in another order than one process does, and the iterative
    # routes carry that round-off through hundreds of steps: predictions measured 4.6e-10 apart
    check_equal_to_one_process(tmp_path, 4, "float64", 1e-9, ("exact", "landweber", "nystrom"))


def test_distributed_process_that_dies_stops_the_others_with_a_clear_error(tmp_path):
    write_data(tmp_path)
    proc, results, seconds = launch(2, "float64", "die", tmp_path, timeout=150)
    assert proc.returncode != 0  # process 1 exited with status 3
    assert [r["process"] for r in results] == [0]
    assert results[0]["error"] is not None and "another process died or left" in results[0]["error"]
    assert results[0]["seconds"] < 100 and seconds < 150


def test_distributed_process_that_never_joins_gives_a_clear_error(tmp_path):
    write_data(tmp_path)
    proc, results, seconds = launch(2, "float64", "nojoin", tmp_path, timeout=90, WORKER_JOIN_TIMEOUT="4")
    assert results == []
    assert "not every process joined the coordinator" in proc.stdout
    assert "exited with status 75" in proc.stderr
    assert seconds < 60


def test_distributed_bad_mesh_and_cluster_arguments_are_refused_by_name():
    from jax.sharding import Mesh

    with pytest.raises(ParameterError, match="mesh must be a jax.sharding.Mesh"):
        check_mesh("rows")
    with pytest.raises(ParameterError, match=r"mesh must have the one axis \('rows',\)"):
        check_mesh(Mesh(np.asarray(jax.devices()), ("data",)))
    with pytest.raises(ParameterError, match="mesh must be a jax.sharding.Mesh"):
        DistributedKernelRegressor(mesh=jax.devices()).fit(np.zeros((4, 1)), np.zeros(4))
    with pytest.raises(ParameterError, match="approximation must be one of"):
        DistributedKernelRegressor(approximation="rff").fit(np.zeros((4, 1)), np.zeros(4))
    with pytest.raises(ParameterError, match="filter must be 'nu_method' or 'landweber'; received 'tikhonov'"):
        DistributedKernelRegressor(filter="tikhonov").fit(np.zeros((4, 1)), np.zeros(4))
    with pytest.raises(ParameterError, match="devices must hold at least one device"):
        global_mesh([])
    with pytest.raises(ParameterError, match=r"process_id must lie in \[0, num_processes=2\); received 2"):
        resolve_cluster("127.0.0.1:1234", 2, 2, env={})
    with pytest.raises(ParameterError, match="coordinator must be 'host:port'"):
        resolve_cluster("127.0.0.1:12:34", 2, 0, env={})
    with pytest.raises(ParameterError, match="num_processes must be an integer >= 1; received 'x'"):
        resolve_cluster("h:1", "x", 0, env={})
    with pytest.raises(ParameterError, match="coordinator must be given"):
        resolve_cluster(env={})


def test_distributed_cluster_variables_of_the_usual_schedulers():
    assert resolve_cluster(env={"SLURM_NTASKS": "8", "SLURM_PROCID": "3", "SLURM_STEP_NODELIST": "gpu[07-09,12]"}) \
        == ("gpu07:61234", 8, 3, "slurm")
    assert resolve_cluster(env={"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "2", "MASTER_ADDR": "n0",
                                "JAXMTL_COORDINATOR_PORT": "5000"}) == ("n0:5000", 4, 2, "openmpi")
    assert resolve_cluster(env={"WORLD_SIZE": "2", "RANK": "1", "MASTER_ADDR": "h", "MASTER_PORT": "29500"}) \
        == ("h:29500", 2, 1, "torchrun")
    # explicit arguments win over the environment
    assert resolve_cluster("a:1", 3, 0, env={"WORLD_SIZE": "2", "RANK": "1", "MASTER_ADDR": "h"}).coordinator == "a:1"


def test_distributed_estimator_one_process_equals_library_path_and_reads_memory_maps(tmp_path):
    # the same estimator on this process's one device: the library's path, from .npy memory maps
    X, Y, Xt = write_data(tmp_path)
    scores, width, step, pred = reference(X, Y, Xt, "nu_method", None)
    model = DistributedKernelRegressor(kernel_widths=list(WIDTHS), n_steps=STEPS, n_folds=FOLDS, block_size=8,
                                       block_rows=7).fit(str(tmp_path / "X.npy"), str(tmp_path / "Y.npy"))
    assert rel(model.cv_scores_, scores) <= 1e-8 and (float(model.kernel_.sigma), model.n_steps_) == (width, step)
    assert rel(model.predict(str(tmp_path / "Xt.npy")), pred) <= 1e-10
    single = DistributedKernelRegressor(kernel_widths=[1.0], n_steps=5, n_folds=2).fit(X, Y[:, 0])
    assert single.predict(Xt).shape == (13,)
