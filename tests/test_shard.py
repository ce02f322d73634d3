"""Sharded Gram operators on 4 simulated CPU devices equal the single-device ones.

JAX fixes the device count when it is first imported, so the comparisons run in a fresh Python
process started with ``XLA_FLAGS=--xla_force_host_platform_device_count=4``; this file holds the
script and checks what it reports. Run alone with ``pytest tests/test_shard.py``.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

from jaxmtl.errors import ShapeError
from jaxmtl.operators.sharded import (
    ShardedGramOperator,
    ShardedKernelOperator,
    row_mesh,
)

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import json, sys
import jax
jax.config.update("jax_enable_x64", sys.argv[1] == "float64")
import jax.numpy as jnp
import numpy as np
from jaxmtl.kernels import Gaussian
from jaxmtl.operators import SeparableOperator
from jaxmtl.operators.blocked import BlockedKernelOperator
from jaxmtl.operators.sharded import ShardedGramOperator, ShardedKernelOperator, row_mesh
from jaxmtl.paths import iterative_path

dtype = np.float64 if sys.argv[1] == "float64" else np.float32
out = {"devices": len(jax.devices())}
rng = np.random.default_rng(0)
for n in (61,):  # rows padded to 64, a multiple of the 4 devices
    X = rng.normal(size=(n, 3)).astype(dtype)
    Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1])].astype(dtype)
    A = np.array([[1.0, 0.3], [0.3, 1.0]], dtype)
    k = Gaussian(np.asarray(1.5, dtype))
    mask = jnp.asarray(np.arange(n) % 4 != 0)
    mesh = row_mesh()
    sharded = ShardedKernelOperator(k, X, A, mesh, block_size=8)
    single = BlockedKernelOperator(k, X, A, block_size=8)  # one device, the same blocks of rows
    stored = SeparableOperator(k(X, X), jnp.asarray(A))
    gram = ShardedGramOperator(k(X, X), A, mesh)
    prod = jax.jit(lambda o, c: o.mv_padded(c))(sharded, jnp.asarray(Y))
    paths = {}
    for name, op in (("sharded", sharded), ("single", single), ("stored", stored), ("gram", gram)):
        res = iterative_path(op, Y, "nu_method", 30, eval_op=op, Y_eval=Y, mask=mask, tau=0.5)
        paths[name] = {"coef": np.asarray(res.coef).tolist(), "losses": np.asarray(res.losses).tolist()}
    out[str(n)] = {"paths": paths, "product_devices": len(prod.sharding.device_set),
                   "shard_rows": [s.data.shape[0] for s in prod.addressable_shards]}
print("RESULT " + json.dumps(out))
"""


def run_sharded(precision: str) -> dict:
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, precision], check=False, capture_output=True, text=True, env=env,
                          timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("precision,tol", [("float64", 1e-12), ("float32", 1e-6)])
def test_shard_paths_equal_single_device(precision, tol):
    out = run_sharded(precision)
    assert out["devices"] == 4
    for n in ("61",):
        res = out[n]
        assert res["product_devices"] == 4 and res["shard_rows"] == [16, 16, 16, 16]
        p = res["paths"]
        # the same row blocks on one device and across four: equal to round-off
        assert rel(p["sharded"]["coef"], p["single"]["coef"]) <= tol
        assert rel(p["sharded"]["losses"], p["single"]["losses"]) <= tol
        # the stored Gram (row-sharded or not): equal up to the summation order of K @ C
        assert rel(p["gram"]["coef"], p["stored"]["coef"]) <= tol
        assert rel(p["sharded"]["coef"], p["stored"]["coef"]) <= (1e-10 if precision == "float64" else 1e-4)


def test_shard_single_device_mesh_and_errors():
    # the in-process mesh has this process's one device: the operators still equal the dense products
    X = np.random.default_rng(1).normal(size=(10, 2))
    A = np.eye(2)
    from jaxmtl.kernels import Gaussian

    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 2)
    C = np.random.default_rng(2).normal(size=(10, 2))
    np.testing.assert_allclose(np.asarray(ShardedKernelOperator(Gaussian(1.0), X, A, row_mesh()).mv(C)), K @ C,
                               atol=1e-12)
    np.testing.assert_allclose(np.asarray(ShardedGramOperator(K, A).mv(C)), K @ C, atol=1e-12)
    with pytest.raises(ShapeError, match="square"):
        ShardedGramOperator(np.ones((3, 4)), A)
    with pytest.raises(ShapeError, match="square"):
        ShardedKernelOperator(Gaussian(1.0), X, np.ones((2, 3)))
    with pytest.raises(ShapeError, match="at least one device"):
        row_mesh([])
