"""Filters against their definitions, recurrences and the admissibility bounds of Definition 1."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmtl.errors import ParameterError
from jaxmtl.filters import IteratedTikhonov, Landweber, NuMethod, Tikhonov, TruncatedSVD, get_filter

SIGMA = np.concatenate([[0.0], np.geomspace(1e-8, 1.0, 200)])


def test_tikhonov_and_tsvd_formulas():
    lam = 1e-3
    np.testing.assert_allclose(Tikhonov()(SIGMA, lam), 1 / (SIGMA + lam), rtol=1e-14)
    expected = np.where(SIGMA >= lam, 1 / np.where(SIGMA > 0, SIGMA, 1), 0.0)
    np.testing.assert_allclose(TruncatedSVD()(SIGMA, lam), expected, rtol=1e-14)


@pytest.mark.parametrize("order", [1, 2, 5])
def test_iterated_tikhonov_formula_and_iteration(order):
    lam = 1e-2
    s = SIGMA[1:]
    formula = ((s + lam) ** order - lam**order) / (s * (s + lam) ** order)
    np.testing.assert_allclose(IteratedTikhonov(order)(s, lam), formula, rtol=1e-8)
    # the iterative map (σ + λ) gᵢ = 1 + λ gᵢ₋₁ on each eigenvalue
    g = np.zeros_like(s)
    for _ in range(order):
        g = (1 + lam * g) / (s + lam)
    np.testing.assert_allclose(IteratedTikhonov(order)(s, lam), g, rtol=1e-10)
    assert float(IteratedTikhonov(order)(jnp.array([0.0]), lam)[0]) == pytest.approx(order / lam)


def test_landweber_equals_its_recurrence_and_closed_form():
    tau, t = 0.9, 37
    g = np.zeros_like(SIGMA)
    for _ in range(t):
        g = g + tau * (1 - SIGMA * g)
    np.testing.assert_allclose(Landweber()(SIGMA, t, tau), g, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(Landweber().closed_form(SIGMA, t, tau), g, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("nu", [1.0, 2.5])
def test_nu_method_equals_explicit_recurrence(nu):
    t = 25
    g, g_prev = np.zeros_like(SIGMA), np.zeros_like(SIGMA)
    for i in range(1, t + 1):
        u = (i - 1) * (2 * i - 3) * (2 * i + 2 * nu - 1) / (
            (i + 2 * nu - 1) * (2 * i + 4 * nu - 1) * (2 * i + 2 * nu - 3))
        w = 4 * (2 * i + 2 * nu - 1) * (i + nu - 1) / ((i + 2 * nu - 1) * (2 * i + 4 * nu - 1))
        g, g_prev = g + u * (g - g_prev) + w * (1 - SIGMA * g), g
    np.testing.assert_allclose(NuMethod(nu)(SIGMA, t, 1.0), g, rtol=1e-10, atol=1e-12)
    # first step: ω₁ = (4ν+2)/(4ν+1)
    np.testing.assert_allclose(NuMethod(nu)(SIGMA, 1, 1.0), (4 * nu + 2) / (4 * nu + 1))


@pytest.mark.parametrize(
    "filt,lams",
    [
        (Tikhonov(), np.geomspace(1e-6, 1, 12)),
        (IteratedTikhonov(3), np.geomspace(1e-6, 1, 12)),
        (TruncatedSVD(), np.geomspace(1e-6, 1, 12)),
        (Landweber(), np.arange(1, 400, 37)),
        (NuMethod(), np.arange(1, 60, 7)),
    ],
)
def test_admissibility_bounds(filt, lams):
    """Definition 1 ([BRBV11]): |σ g| ≤ D, |g| ≤ B/λ, |1 − σ g| ≤ γ on 0 < σ ≤ 1.

    D = 1 except for the ν-method, whose residual polynomial only satisfies |1 − σg| ≤ 1, so
    σg ≤ 2 (at t = 1, σg = ω₁σ = 1.2σ): [LRODV08] §5.2 quotes D = 1, which is too tight there.
    """
    s = SIGMA[1:]
    D = 2.0 if filt.name == "nu_method" else 1.0
    B = {"iterated_tikhonov": 3.0, "nu_method": 2.0}.get(filt.name, 1.0)
    for p in lams:
        lam = {"landweber": 1.0 / p, "nu_method": 1.0 / p**2}.get(filt.name, p)
        g = np.asarray(filt(s, p, 1.0))
        assert np.all(np.abs(s * g) <= D + 1e-9)
        assert np.all(np.abs(g) <= B / lam * (1 + 1e-9) + 1e-12)
        assert np.all(np.abs(1 - s * g) <= 1.0 + 1e-9)  # γ = 1


def test_get_filter_names_and_errors():
    assert isinstance(get_filter("ridge"), Tikhonov)
    assert isinstance(get_filter("nu_method"), NuMethod)
    with pytest.raises(ParameterError, match="filter"):
        get_filter("lasso")
    with pytest.raises(ParameterError, match="order"):
        IteratedTikhonov(0)
    with pytest.raises(ParameterError, match="nu"):
        NuMethod(-1.0)
