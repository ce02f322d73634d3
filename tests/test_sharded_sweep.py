"""A sweep sharded over 4 simulated CPU devices (the width axis, and the data-set axis) equals the
unsharded ``jax.jit(jax.vmap(...))`` sweep; the helper's argument checks.

JAX fixes the device count when it is first imported, so the comparison runs in a fresh Python
process started with ``XLA_FLAGS=--xla_force_host_platform_device_count=4``."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import pytest

from jaxmtl.distributed.sweeps import shard_sweep, sweep_mesh
from jaxmtl.errors import ParameterError, ShapeError

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import json, sys
import jax
jax.config.update("jax_enable_x64", sys.argv[1] == "float64")
import jax.numpy as jnp
import numpy as np
from jaxmtl import KFold, regularization_path
from jaxmtl.distributed.sweeps import shard_sweep, sweep_mesh
from jaxmtl.filters import NuMethod
from jaxmtl.kernels import Gaussian, outputs
from jaxmtl.selection import kfold_masks

rng = np.random.default_rng(0)
X = rng.uniform(-2.0, 2.0, (40, 2))
Y = np.c_[np.sin(2 * X[:, 0]), np.cos(3 * X[:, 1]), X[:, 0] * X[:, 1]] + 0.1 * rng.normal(size=(40, 3))
family = outputs.common_similarity_eigh(3, jnp.linspace(0.0, 1.0, 4))
folds = KFold(kfold_masks(len(X), 4, 0))
steps = jnp.arange(1, 31)

def one_width(log_width, X, Y, family, folds):
    sel = regularization_path(Gaussian(jnp.exp(log_width))(X, X), Y, family, NuMethod(), steps, folds)
    return sel.losses, sel.best_param

def one_data_set(Y, X, family, folds):
    return regularization_path(Gaussian(1.0)(X, X), Y, family, NuMethod(), steps, folds).losses

log_widths = jnp.log(jnp.array([0.25, 0.5, 1.0, 2.0, 4.0, 8.0]))   # 6 points: padded to 8 on 4 devices
data_sets = jnp.stack([Y, Y[::-1], 2 * Y, Y ** 2, -Y])             # 5 data sets
shared = (X, Y, family, folds)
plain = jax.jit(jax.vmap(one_width, in_axes=(0, None, None, None, None)))(log_widths, *shared)
sharded = shard_sweep(one_width)(log_widths, *shared)
plain_sets = jax.jit(jax.vmap(one_data_set, in_axes=(0, None, None, None)))(data_sets, X, family, folds)
sharded_sets = shard_sweep(one_data_set, sweep_mesh())(data_sets, X, family, folds)
rel = lambda a, b: float(np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(np.asarray(b)).max())
print(json.dumps({
    "devices": len(jax.devices()),
    "mesh": sweep_mesh().devices.size,
    "width_losses": rel(sharded[0], plain[0]),
    "width_steps_equal": bool(np.array_equal(sharded[1], plain[1])),
    "data_set_losses": rel(sharded_sets, plain_sets),
    "shape": list(sharded[0].shape),
    "placed_on": len(sharded[0].sharding.device_set),
}))
"""


def run(precision: str) -> dict:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", SCRIPT, precision], capture_output=True, text=True, env=env,
                         timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# slow: it passes alone in about 10 s, but its 4-device process once made no progress for 600 s while
# the other test worker ran beside it on the 2-core machine; kept out of CI until that is understood
@pytest.mark.slow
def test_width_and_data_set_sweeps_sharded_over_4_devices_equal_the_unsharded_sweep():
    report = run("float64")
    assert report["devices"] == 4 and report["mesh"] == 4
    assert report["shape"] == [6, 4, 30]  # widths × ω × steps, the padding dropped
    assert report["placed_on"] == 4  # the results live on the 4 devices
    assert report["width_losses"] <= 1e-10 and report["width_steps_equal"]
    assert report["data_set_losses"] <= 1e-10


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(ParameterError, match="mesh must be a jax.sharding.Mesh with one axis"):
        shard_sweep(lambda w: w, mesh="cpu")
    sweep = shard_sweep(lambda v, x: v * x)
    with pytest.raises(ShapeError, match="one common, non-empty leading axis"):
        sweep({"a": jnp.ones(3), "b": jnp.ones(2)}, 1.0)
    with pytest.raises(ShapeError, match="leading sizes"):
        sweep(jnp.ones(0), 1.0)
