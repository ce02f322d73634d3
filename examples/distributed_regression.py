"""Two estimators on rows spread over processes: the exact kernel's ν-method path
(``DistributedKernelRegressor``) and the library's Nyström estimator with its defaults
(``ApproximateKernelRegressor(mesh=...)``), each selected by k-fold CV.

Every process runs this same script; each reads only its rows of the memory-mapped ``.npy`` files
and every process ends with the same model. On one machine::

    python -m jaxmtl.distributed.launch --processes 2 examples/distributed_regression.py /tmp/jaxmtl_demo

On a cluster, one process per host (``srun python examples/distributed_regression.py DIR`` under
SLURM, or ``mpirun``, ``torchrun``): :func:`jaxmtl.distributed.initialize` reads the scheduler's
variables. Without a launcher it runs as one process.
"""

import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

from jaxmtl.distributed import initialize  # noqa: E402

spec = initialize(timeout=300) if "JAXMTL_NUM_PROCESSES" in os.environ or "SLURM_NTASKS" in os.environ else None

import numpy as np  # noqa: E402

from jaxmtl import ApproximateKernelRegressor  # noqa: E402
from jaxmtl.distributed import global_mesh  # noqa: E402
from jaxmtl.distributed.estimator import DistributedKernelRegressor  # noqa: E402

folder = sys.argv[1] if len(sys.argv) > 1 else "jaxmtl_distributed_demo"
os.makedirs(folder, exist_ok=True)
X_path, y_path, Xt_path = (os.path.join(folder, f) for f in ("X.npy", "y.npy", "X_test.npy"))
if jax.process_index() == 0 and not os.path.exists(X_path):  # a data set on disk (a shared file system)
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(1500, 2))
    np.save(X_path, X)
    np.save(y_path, np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=1500))
    np.save(Xt_path, rng.uniform(-3, 3, size=(500, 2)))
if jax.process_count() > 1:
    from jax.experimental import multihost_utils

    multihost_utils.sync_global_devices("data written")

t0 = time.perf_counter()
model = DistributedKernelRegressor(n_steps=150, n_folds=5, block_rows=1024).fit(X_path, y_path)
pred = model.predict(Xt_path, out=os.path.join(folder, "predictions.npy"))  # streamed, written by process 0
Xt = np.load(Xt_path)
truth = np.sin(Xt[:, 0]) * np.cos(Xt[:, 1])
if jax.process_index() == 0:
    err = np.sqrt(np.mean((np.asarray(pred)[:, 0] - truth) ** 2))
    print(f"{jax.process_count()} process(es), exact kernel: width {float(model.kernel_.sigma):.3g}, step "
          f"{model.n_steps_}, test RMSE {err:.4f}, {time.perf_counter() - t0:.1f} s")

t0 = time.perf_counter()  # the same files through the estimator of one process, its rows spread
approx = ApproximateKernelRegressor(n_components=300, mesh=global_mesh()).fit(X_path, y_path)
err = np.sqrt(np.mean((approx.predict(Xt) - truth) ** 2))  # every process holds the fitted model
if jax.process_index() == 0:
    print(f"{jax.process_count()} process(es), Nyström (300 centres): width "
          f"{approx.best_params_['kernel_width']:.3g}, λ {approx.best_params_['param']:.2g}, test RMSE {err:.4f}, "
          f"{time.perf_counter() - t0:.1f} s")
