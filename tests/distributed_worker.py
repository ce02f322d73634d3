"""One process of the multi-process tests (started by ``jaxmtl.distributed.launch``).

argv: precision ('float64' | 'float32'), a scenario ('paths' | 'die' | 'nojoin'), a data folder
holding X.npy, Y.npy, Xt.npy (written by the test), and for 'paths' the routes to run
(comma-separated: exact, landweber, nystrom of DistributedKernelRegressor; approximate:
ApproximateKernelRegressor with ``mesh=``; refused: the same on Ynan.npy). Prints one ``RESULT {json}`` line.
"""

import json
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", sys.argv[1] == "float64")

from jaxmtl.distributed import global_mesh, global_rows, initialize, to_host  # noqa: E402

precision, scenario, folder = sys.argv[1:4]
if scenario == "nojoin" and os.environ["JAXMTL_PROCESS_ID"] == "1":
    sys.exit(0)  # this process never joins: the others must stop with a clear error
# a long heartbeat in 'die': process 0 must reach its collective (compiling first) before the
# runtime declares process 1 dead, so that the failure it sees is the collective's
spec = initialize(timeout=float(os.environ.get("WORKER_JOIN_TIMEOUT", "60")),
                  heartbeat_timeout=120 if scenario == "die" else 20)

import numpy as np  # noqa: E402
from jax.sharding import Mesh  # noqa: E402

from jaxmtl import ApproximateKernelRegressor  # noqa: E402
from jaxmtl.distributed.estimator import DistributedKernelRegressor  # noqa: E402
from jaxmtl.errors import DistributedError, ParameterError  # noqa: E402

out = {"process": jax.process_index(), "processes": jax.process_count(), "devices": len(jax.devices())}
t0 = time.perf_counter()
if scenario == "die":
    from jax.experimental import multihost_utils

    multihost_utils.process_allgather(np.ones(1))  # one collective together (the peers connect)
    if jax.process_index() == 1:
        os._exit(3)  # dies after joining, before the collectives
    try:
        DistributedKernelRegressor(kernel_widths=[1.0], n_steps=5, n_folds=2).fit(os.path.join(folder, "X.npy"),
                                                                                 os.path.join(folder, "Y.npy"))
        out["error"] = None
    except DistributedError as err:
        out["error"] = str(err)
    out["seconds"] = time.perf_counter() - t0
    print("RESULT " + json.dumps(out), flush=True)
    os._exit(0)

# a mesh over this process's devices only is refused by name
try:
    DistributedKernelRegressor(mesh=Mesh(np.asarray(jax.local_devices()), ("rows",))).fit(
        np.zeros((4, 1)), np.zeros(4))
    out["local_mesh_error"] = None
except ParameterError as err:
    out["local_mesh_error"] = str(err)

X, Y, Xt = (os.path.join(folder, f) for f in ("X.npy", "Y.npy", "Xt.npy"))
# every process's rows gathered back: the file itself (padding sliced off)
gathered = to_host(global_rows(X, global_mesh()))
out["to_host_equal"] = bool(np.array_equal(gathered[:61], np.load(X).astype(gathered.dtype)))
ROUTES = {"exact": {}, "landweber": {"filter": "landweber"}, "nystrom": {"approximation": "nystrom", "n_components": 20}}
for name in sys.argv[4].split(","):
    kwargs, t1 = ROUTES.get(name), time.perf_counter()
    if name == "approximate":  # the library's estimator with the mesh: each process reads its own rows
        est = ApproximateKernelRegressor(n_components=20, mesh=global_mesh()).fit(X, Y)
        out[name] = {"pred": est.predict(Xt).tolist(), "width": est.best_params_["kernel_width"],
                     "param": est.best_params_["param"], "family": est.family_, "y_mean": est.y_mean_.tolist(),
                     "seconds": time.perf_counter() - t1}
        continue
    if name == "refused":  # a non-finite output in process 1's rows: every process raises, none hangs
        try:
            ApproximateKernelRegressor(n_components=20, mesh=global_mesh()).fit(X, os.path.join(folder, "Ynan.npy"))
            out[name] = None
        except (ValueError, RuntimeError) as err:
            out[name] = f"{type(err).__name__}: {err}"
        continue
    model = DistributedKernelRegressor(kernel_widths=[0.7, 1.5], n_steps=20, n_folds=3, block_size=8,
                                       block_rows=16, mesh=global_mesh(), **kwargs).fit(X, Y)
    pred_file = os.path.join(folder, f"pred_{name}_{jax.process_count()}.npy")
    model.predict(Xt, out=pred_file)
    out[name] = {"scores": model.cv_scores_.tolist(), "width": float(model.kernel_.sigma), "step": model.n_steps_, "pred": model.predict(Xt).tolist(), "pred_file": pred_file,
                 "seconds": time.perf_counter() - t1}
out["seconds"] = time.perf_counter() - t0
print("RESULT " + json.dumps(out), flush=True)
