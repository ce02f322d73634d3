"""Multi-process scaling of the exact-kernel ν-method path: 1, 2 and 4 CPU processes on this machine.

Each configuration is started by ``python -m jaxmtl.distributed.launch`` (one CPU device per
process, Gloo collectives over 127.0.0.1) and measures, after compilation, medians of 3 runs of

* ``step``: one step of the compiled path (``path_scan`` on ``ShardedKernelOperator``, fixed τ,
  ``STEPS`` steps, divided by ``STEPS``): the all-gather of X and C, the row blocks of K(X_r, X)
  and C's update, and the norm / loss all-reductions;
* ``gather``: the all-gather alone (``GATHERS`` in a loop), the communication of a step;
* ``compute``: the local product alone, K(X_r, X) @ C on the process's n/P rows, without any
  collective (all processes at once, so they contend for the cores as in a step).

Strong scaling: n = ``N_STRONG`` rows whatever P; weak scaling: ``N_WEAK`` rows per process.
The communication volume per step is counted from the shapes: each process receives
(P − 1)/P · n · (p + d) numbers of 8 bytes by the all-gathers, plus a few scalars.

The machine has 2 cores shared with other users: 4 processes time-share 2 cores, so the 4-process
figures show the communication and oversubscription costs, not a speed-up (see docs/distributed.md).
Writes ``benchmarks/results/perf_distributed.json``.

The model of docs/distributed.md (compute and all-gather terms fitted to these measurements, then
projected to 8–64 hosts on 10 Gb/s Ethernet) is written beside them; ``--model-only`` refits it
on the recorded measurements.

Run: ``python benchmarks/perf_distributed.py`` (about 5 minutes).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

N_STRONG, N_WEAK, P_FEATURES, D_OUTPUTS, STEPS, GATHERS, BLOCK = 2048, 1024, 4, 2, 10, 20, 512
ROOT = Path(__file__).resolve().parent.parent


def _median(fn, repeats: int = 5) -> tuple[float, float]:
    """(median, minimum) seconds of ``repeats`` runs after a first (compiling) one."""
    import numpy as np

    fn()  # compile
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), float(np.min(times))


def worker(n: int) -> None:
    """One process of a configuration: prints ``RESULT {json}`` on process 0."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxmtl.distributed import global_mesh, global_rows, initialize

    initialize(timeout=120)
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import PartitionSpec

    from jaxmtl.filters import NuMethod
    from jaxmtl.kernels import Gaussian
    from jaxmtl.operators.blocked import blocked_kernel_matmul
    from jaxmtl.operators.sharded import AXIS, ShardedKernelOperator
    from jaxmtl.paths.scan import path_scan

    mesh = global_mesh()
    P = jax.process_count()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, P_FEATURES))
    Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1])]
    Xg, Yg = global_rows(X, mesh), global_rows(Y, mesh)
    valid = global_rows(np.ones(n, bool), mesh)
    op = ShardedKernelOperator(Gaussian(1.0), Xg, jnp.eye(D_OUTPUTS), mesh, BLOCK)
    path = jax.jit(lambda o, y, v: path_scan(o, y, NuMethod(), STEPS, tau=0.5, mask=v).coef)
    step = np.array(_median(lambda: path(op, Yg, valid).block_until_ready())) / STEPS

    rows = PartitionSpec(AXIS, None)

    def gathers(Z):
        def body(i, z):
            return jax.lax.all_gather(z, AXIS, tiled=True)[: z.shape[0]] * 0.5 + z * 0.5

        return jax.lax.fori_loop(0, GATHERS, body, Z)

    XC = global_rows(np.c_[X, Y], mesh)
    gather_fn = jax.jit(jax.shard_map(gathers, mesh=mesh, in_specs=rows, out_specs=rows))
    gather = np.array(_median(lambda: gather_fn(XC).block_until_ready())) / GATHERS

    lo = jax.process_index() * (n // P)
    Xl, Xa, Ca = jnp.asarray(X[lo:lo + n // P]), jnp.asarray(X), jnp.asarray(Y)
    local_fn = jax.jit(lambda a, b, c: blocked_kernel_matmul(Gaussian(1.0), a, b, c, BLOCK))
    compute = np.array(_median(lambda: local_fn(Xl, Xa, Ca).block_until_ready()))
    times = np.concatenate([step, gather, compute])
    from jax.experimental import multihost_utils

    every = np.asarray(multihost_utils.process_allgather(times)).reshape(P, 6) if P > 1 else times[None]
    if jax.process_index() == 0:
        worst = every.max(axis=0)  # the slowest process sets the pace
        print("RESULT " + json.dumps({
            "processes": P, "n": n, "step_s": float(worst[0]), "step_min_s": float(worst[1]),
            "gather_s": float(worst[2]), "gather_min_s": float(worst[3]),
            "compute_s": float(worst[4]), "compute_min_s": float(worst[5]),
            "received_bytes_per_step_per_process": int((P - 1) / P * n * (P_FEATURES + D_OUTPUTS) * 8),
        }), flush=True)


def run(processes: int, n: int) -> dict:
    cmd = [sys.executable, "-m", "jaxmtl.distributed.launch", "--processes", str(processes), "--timeout", "900",
           __file__, "--worker", str(n)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT),
                                                                             "JAX_PLATFORMS": "cpu"})
    lines = [ln.split("RESULT ", 1)[1] for ln in proc.stdout.splitlines() if "RESULT " in ln]
    if proc.returncode or not lines:
        raise RuntimeError(proc.stdout[-3000:] + proc.stderr[-3000:])
    return json.loads(lines[0])


# The network of the projection: 10 Gb/s Ethernet, 50 µs per ring stage; one device per host at
# the compute rate measured here; sizes and host counts projected.
NETWORK = {"name": "10 Gb/s Ethernet", "alpha_s": 50e-6, "beta_bytes_per_s": 1.25e9}
PROJECT_HOSTS, PROJECT_N = (8, 16, 32, 64), (10_000, 100_000, 1_000_000)
CORES = 2


def gather_model(P, n, alpha, beta):
    """Ring all-gather of X and C: (P − 1) stages of latency α, (P − 1)/P of the bytes at β."""
    return (P - 1) * alpha + (P - 1) / P * 8 * n * (P_FEATURES + D_OUTPUTS) / beta


def model(strong: list, weak: list) -> dict:
    """Fit c (compute per n²(p + d)), the per-step remainder, α and β; predict and project.

    Fitted on the minima of the repeats (the runs least disturbed by the machine's other users).

    t(P, n) = c·n²(p + d)/min(P, cores) + r·n/P + gather(P, n): on this machine at most 2
    processes compute at once (2 cores); in the projection every host has its own device.
    """
    import numpy as np

    ones = [x for x in strong + weak if x["processes"] == 1]
    work = np.array([x["n"] ** 2 * (P_FEATURES + D_OUTPUTS) for x in ones], float)
    c = float(np.dot(work, [x["compute_min_s"] for x in ones]) / np.dot(work, work))
    r = max(float(np.mean([(x["step_min_s"] - c * w) / x["n"] for x, w in zip(ones, work)])), 0.0)
    rows = [x for x in strong + weak if x["processes"] > 1]
    A = np.array([[x["processes"] - 1, (x["processes"] - 1) / x["processes"] * 8 * x["n"] * (P_FEATURES + D_OUTPUTS)]
                  for x in rows])
    coef, *_ = np.linalg.lstsq(A, np.array([x["gather_min_s"] for x in rows]), rcond=None)
    alpha, inv_beta = max(coef[0], 0.0), max(coef[1], 1e-15)

    def predict(P, n, cores, a, b):
        return c * n * n * (P_FEATURES + D_OUTPUTS) / min(P, cores) + r * n / P + gather_model(P, n, a, b)

    beside = [{"scaling": kind, "processes": x["processes"], "n": x["n"], "measured_step_s": x["step_s"],
               "measured_step_min_s": x["step_min_s"],
               "model_step_s": predict(x["processes"], x["n"], CORES, alpha, 1 / inv_beta)}
              for kind, xs in (("strong", strong), ("weak", weak)) for x in xs]
    projection = [{"hosts": P, "n": n,
                   "compute_s": c * n * n * (P_FEATURES + D_OUTPUTS) / P + r * n / P,
                   "gather_s": gather_model(P, n, NETWORK["alpha_s"], NETWORK["beta_bytes_per_s"]),
                   "step_s": predict(P, n, P, NETWORK["alpha_s"], NETWORK["beta_bytes_per_s"])}
                  for n in PROJECT_N for P in PROJECT_HOSTS]
    return {"compute_s_per_n2_p_plus_d": c, "remainder_s_per_row": r, "loopback_alpha_s": alpha,
            "loopback_beta_bytes_per_s": 1 / inv_beta, "cores_on_this_machine": CORES, "network": NETWORK,
            "beside_measurement": beside, "projection": projection}


def main() -> None:
    import jax

    path = ROOT / "benchmarks" / "results" / "perf_distributed.json"
    if "--model-only" in sys.argv:  # refit the model on the recorded measurements
        out = json.loads(path.read_text())
        out["model"] = model(out["strong"], out["weak"])
        path.write_text(json.dumps(out, indent=2) + "\n")
        print(json.dumps(out["model"], indent=2))
        return
    strong = [run(P, N_STRONG) for P in (1, 2, 4)]
    weak = [run(P, N_WEAK * P) for P in (1, 2, 4)]
    out = {
        "what": "exact Gaussian kernel, nu-method path step on ShardedKernelOperator across CPU processes",
        "dtype": "float64", "p": P_FEATURES, "d": D_OUTPUTS, "steps": STEPS, "block_size": BLOCK,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "jax": jax.__version__, "load_average_at_end": os.getloadavg(),
                    "note": "2 cores shared with other users while measuring; 4 processes oversubscribe them"},
        "strong": strong, "weak": weak, "model": model(strong, weak),
    }
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]))
    else:
        main()
