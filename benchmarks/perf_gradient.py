"""Memory and time of the checkpointed matrix-free gradient against its forward path.

For n = 1000, 2000, 4000 training points (``--quick``: 250, 500), n/4 validation points,
d = 5 outputs, p = 5 features: the validation losses of a 64-step ν-method path over a Gaussian
kernel with the common-similarity output A_ω (:func:`jaxmtl.learning.checkpointed_path_losses`
over :class:`jaxmtl.learning.RematKernelOperator` and ``RematCrossOperator``, kernel blocks of
64 rows recomputed at every product, 8 checkpointed chunks of 8 steps), and the gradient of
their soft minimum with respect to the kernel width and ω (one reverse pass). Each measurement runs in a fresh subprocess; memory is
the high-water mark of XLA's buffer assignment for the compiled call (temporaries + arguments +
outputs: ``peak_mb``), with the process's peak resident set beside it (``rss_peak_mb``, the JAX
runtime and compiler included); time is the median of the timed calls after a warm-up, and
``time_over_forward`` the median ratio of this call to the forward path timed in the same process,
the two alternating (so that the load of a shared machine cancels):

* ``forward``      — the path's losses alone (no n × n matrix is ever formed);
* ``gradient``     — value and gradient, checkpointed (T/chunk states stored, each chunk recomputed);
* ``plain_dense``  — the same value and gradient through the plain scan (:func:`jaxmtl.paths.path_scan`)
  over the dense Gram K (n ≤ 2000: what bounded memory is compared with).

Target: the gradient's peak memory ≤ 3× the forward path's at n = 4000 (``--quick``: the
largest n). Output: ``results/perf_gradient.json`` (``perf_gradient_quick.json``).

Run: ``python benchmarks/perf_gradient.py [--quick]``.
"""

from __future__ import annotations

from pathlib import Path

from _bench import parse_args, set_threads

set_threads()  # before numpy / jax: one BLAS/XLA thread per process by default

D, P, STEPS, CHUNK, BLOCK, SIGMA, OMEGA = 5, 5, 64, 8, 64, 2.0, 0.5


def worker(task):
    from _bench import compile_seconds, float64_jax, median_time, timed, worker_memory

    jax = float64_jax()
    import jax.numpy as jnp
    import numpy as np

    from jaxmtl.filters import NuMethod
    from jaxmtl.kernels import Gaussian
    from jaxmtl.learning import (
        RematCrossOperator,
        RematKernelOperator,
        checkpointed_path_losses,
        soft_min,
    )
    from jaxmtl.operators import SeparableOperator, max_eigenvalue
    from jaxmtl.paths import path_scan

    kind, n = task["kind"], task["n"]
    m = n // 4
    rng = np.random.default_rng(n)
    Xall = rng.normal(size=(n + m, P))
    W = rng.normal(size=(P, D))
    Yall = np.tanh(Xall @ W) + 0.1 * rng.normal(size=(n + m, D))
    X, Y, Xv, Yv = (jnp.asarray(a) for a in (Xall[:n], Yall[:n], Xall[n:], Yall[n:]))
    filt = NuMethod()

    def A_of(om):
        return om * jnp.ones((D, D)) + (1.0 - om) * jnp.eye(D)

    # one fixed step, safe for every width near SIGMA and ω ≤ 1: 1 / (λ_max(K)·d / n) with margin
    K0 = Gaussian(SIGMA)(X[: min(n, 1000)], X[: min(n, 1000)])
    lam = float(max_eigenvalue(lambda v: K0 @ v, (K0.shape[0], 1), K0.dtype)) * n / K0.shape[0]
    tau = jnp.asarray(0.9 * n / (lam * D))

    def ckpt_losses(sigma, om):
        k = Gaussian(sigma)
        op = RematKernelOperator(k, X, A_of(om), block_size=BLOCK)
        ev = RematCrossOperator(k, Xv, X, A_of(om), block_size=BLOCK)
        return checkpointed_path_losses(op, Y, filt, STEPS, ev, Yv, tau=tau, chunk=CHUNK)

    def plain_losses(sigma, om):
        k = Gaussian(sigma)
        return path_scan(SeparableOperator(k(X, X), A_of(om)), Y, filt, STEPS,
                         SeparableOperator(k(Xv, X), A_of(om)), Yv, tau=tau).losses

    forward = jax.jit(lambda s, o: soft_min(ckpt_losses(s, o), 0.05))
    if kind == "forward":
        f = forward
    elif kind == "gradient":
        f = jax.jit(jax.value_and_grad(lambda s, o: soft_min(ckpt_losses(s, o), 0.05), argnums=(0, 1)))
    else:  # plain_dense
        f = jax.jit(jax.value_and_grad(lambda s, o: soft_min(plain_losses(s, o), 0.05), argnums=(0, 1)))
    args = (jnp.asarray(SIGMA), jnp.asarray(OMEGA))
    comp, compiled = compile_seconds(f, *args)
    mem = compiled.memory_analysis()  # XLA's buffer assignment: the live buffers' high-water mark
    xla = {"temp_mb": mem.temp_size_in_bytes / 2**20, "argument_mb": mem.argument_size_in_bytes / 2**20,
           "output_mb": mem.output_size_in_bytes / 2**20}
    xla["peak_mb"] = xla["temp_mb"] + xla["argument_mb"] + xla["output_mb"]
    jax.block_until_ready(compiled(*args))
    r = timed(lambda: jax.block_until_ready(compiled(*args)), task.get("repeats", 2))
    res = r["result"]
    value = float(res if kind == "forward" else res[0])
    out = {"kind": kind, "n": n, "compile_s": comp, "value": value, "xla": xla,
           **{k: r[k] for k in ("first_s", "median_s", "repeats", "times")}}
    if kind != "forward":
        out["grad_sigma"], out["grad_omega"] = (float(g) for g in res[1])
    # the arrays the job needs: data, outputs, one coefficient state (3 n × d) and one kernel block
    ref = 8 * ((n + m) * (P + D) + 3 * n * D + BLOCK * n)
    out["memory"] = worker_memory(r["rss_base_kb"], ref)
    out.update(peak_mb=xla["peak_mb"], rss_alloc_mb=out["memory"]["alloc_peak_mb"],
               rss_peak_mb=out["memory"]["rss_peak_mb"])
    if kind != "forward":  # the time ratio from the same process, forward and this call alternating
        fwd = forward.lower(*args).compile()
        jax.block_until_ready(fwd(*args))
        pairs = [[median_time(lambda g=g: jax.block_until_ready(g(*args)), 1) for g in (fwd, compiled)]
                 for _ in range(max(2, task.get("repeats", 2)))]
        out["forward_times_same_process"] = [a for a, _ in pairs]
        out["time_over_forward"] = float(np.median([b / a for a, b in pairs]))
    return out


def main(argv=None):
    args = parse_args(__doc__, worker, argv)
    if args is None:  # worker mode
        return
    import numpy as np
    from _bench import float64_jax, gemm_gflops, report, run_isolated

    float64_jax()
    sizes = [250, 500] if args.quick else [1000, 2000, 4000]
    limits = {"gemm": gemm_gflops(1000, np.float64)}
    print(f"GEMM {limits['gemm']['gflops']:.1f} GFLOP/s", flush=True)
    tasks = [{"kind": kind, "n": n, "repeats": 2} for n in sizes for kind in ("forward", "gradient", "plain_dense")
             if kind != "plain_dense" or n <= 2000]
    rows = run_isolated(str(Path(__file__).resolve()), tasks, ("kind", "n"), timeout=1800)
    by = {(r["kind"], r["n"]): r for r in rows}
    for r in rows:
        fwd = by.get(("forward", r["n"]), {})
        if "peak_mb" in r and fwd.get("peak_mb"):
            r["memory_over_forward"] = r["peak_mb"] / fwd["peak_mb"]
            r.setdefault("time_over_forward", 1.0)
        r["dense_gram_mb"] = 8 * r["n"] ** 2 / 2**20
    big = sizes[-1]
    g, f = by[("gradient", big)], by[("forward", big)]
    ratio = g.get("memory_over_forward", float("nan"))
    targets = {"gradient_memory_le_3x_forward": {
        "n": big, "ratio": ratio, "gradient_mb": g.get("peak_mb"), "forward_mb": f.get("peak_mb"),
        "gradient_s": g.get("median_s"), "met": bool(ratio <= 3.0),
        "note": f"peak memory (XLA buffers) of value + gradient (width, ω) over the forward path's, ν-method {STEPS} steps "
                f"in chunks of {CHUNK}, kernel blocks of {BLOCK} rows recomputed"}}
    cols = ["n", "kind", "median_s", "compile_s", "peak_mb", "memory_over_forward", "time_over_forward",
            "dense_gram_mb", "rss_peak_mb"]
    report("perf_gradient", args.quick, rows, cols, targets, limits=limits, steps=STEPS, chunk=CHUNK, block=BLOCK,
           d=D, p=P, quick=args.quick)


if __name__ == "__main__":
    main()
