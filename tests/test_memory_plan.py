"""Memory plans of batched sweeps: chunks equal the whole batch; a plan that cannot fit is refused."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from _reference import problem
from jaxmtl.errors import ParameterError
from jaxmtl.paths import FIXED_BUDGET, common_similarity_path, default_memory_budget, omega_path_bytes, plan_chunk
from jaxmtl.selection import kfold_masks

OMEGAS = np.array([0.0, 0.2, 0.5, 0.7, 1.0])


def item() -> int:
    """Bytes of JAX's default float now: 8 with x64 on, 4 in its default float32."""
    return jnp.zeros(()).dtype.itemsize


def test_plan_chunk_is_the_largest_batch_under_the_budget():
    assert plan_chunk(10, 100, 7, budget=100 + 3 * 7) == 3
    assert plan_chunk(10, 100, 7, budget=100 + 3 * 7 - 1) == 2
    assert plan_chunk(4, 0, 1, budget=1e9) == 4
    with pytest.raises(ParameterError, match="memory_budget=106 bytes"):
        plan_chunk(10, 100, 7, budget=106)
    with pytest.raises(ParameterError, match="positive number of bytes"):
        plan_chunk(10, 100, 7, budget=-5)


def test_default_budget_is_the_fixed_one_where_the_device_reports_no_memory():
    class NoStats:
        def memory_stats(self):
            return None

    class Gpu:
        def memory_stats(self):
            return {"bytes_limit": 1000, "bytes_in_use": 200}

    assert default_memory_budget(NoStats()) == FIXED_BUDGET
    assert default_memory_budget(Gpu()) == int(0.75 * 800)
    assert default_memory_budget() > 0


@pytest.mark.parametrize("folds", [False, True])
def test_chunked_omega_sweep_equals_the_whole_batch(folds):
    _, K, _, Y = problem(n=24, d=2)
    kw = {"Y_eval": Y}
    k = 1
    if folds:
        masks = kfold_masks(24, 3, 0)
        held = (~masks).astype(float)
        kw = {"Y_eval": Y, "w_eval": held / held.sum(1, keepdims=True), "mask": masks}
        k = 3
    whole = common_similarity_path(K, Y, OMEGAS, "nu_method", 20, **kw)
    fixed, per = omega_path_bytes(24, 2, 20, k, itemsize=item())
    chunked = common_similarity_path(K, Y, OMEGAS, "nu_method", 20, memory_budget=fixed + 2 * per, **kw)
    assert chunked.losses.shape == whole.losses.shape == ((3,) if folds else ()) + (5, 20)
    for a, b in zip(chunked, whole):  # 3 calls of 2 ω (the last padded) against one of 5
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10 if item() == 8 else 1e-5,
                                   atol=1e-14 if item() == 8 else 1e-6)


def test_a_budget_below_one_omega_is_refused_naming_it():
    _, K, _, Y = problem(n=24, d=2)
    fixed, per = omega_path_bytes(24, 2, 20, itemsize=item())
    with pytest.raises(ParameterError, match=f"memory_budget={fixed + per - 1} bytes.*one omega"):
        common_similarity_path(K, Y, OMEGAS, "nu_method", 20, memory_budget=fixed + per - 1)
    with pytest.raises(ParameterError, match="memory_budget=.*cannot hold one batch member"):  # K alone: 12.8 GB
        plan_chunk(11, *omega_path_bytes(40_000, 10, 150), budget=FIXED_BUDGET)
