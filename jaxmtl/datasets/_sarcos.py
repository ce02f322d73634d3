"""Loader for the bundled SARCOS inverse-dynamics rows: 21 inputs, 7 outputs (joint torques).

A multi-output regression set with many outputs and thousands of rows, the setting of
:class:`~jaxmtl.VectorValuedRegressor` against KernelRidge tuned per output. Provenance, licence
and what was kept: ``PROVENANCE_sarcos.txt`` beside this module.

Example:
    >>> from jaxmtl.datasets import load_sarcos
    >>> X, Y, features, targets = load_sarcos()
    >>> X.shape, Y.shape, targets[0]
    ((4449, 21), (4449, 7), 'torque_1')
"""

from __future__ import annotations

from ._real import MulanData, _load_npz

__all__ = ["SARCOS_FEATURE_NAMES", "SARCOS_TARGET_NAMES", "load_sarcos"]

#: The 21 inputs: joint positions, velocities and accelerations of the 7 joints, in this order.
SARCOS_FEATURE_NAMES: tuple[str, ...] = tuple(f"{kind}_{j}" for kind in ("position", "velocity", "acceleration")
                                              for j in range(1, 8))
#: The 7 outputs: the joint torques.
SARCOS_TARGET_NAMES: tuple[str, ...] = tuple(f"torque_{j}" for j in range(1, 8))

# the file stores every value in millionths as int32: the published values have six decimals,
# so value = stored / 1e6 reproduces them exactly in float64
_UNITS = 1e6


def load_sarcos() -> MulanData:
    """SARCOS inverse dynamics (Vijayakumar & Schaal 2000; Rasmussen & Williams 2006, §2.5):
    4449 samples of a 7-degree-of-freedom robot arm, the 7 joint torques as outputs.

    The rows are those of the data set's published test file ``sarcos_inv_test.mat``, unchanged
    and in their order; the 44 484-row training file is not bundled (see
    ``PROVENANCE_sarcos.txt``). The outputs are strongly correlated (torques 4 and 7: r = 0.96)
    and on different scales (standard deviations 1.0 to 20.4): standardise them, or let the
    estimator do it (``normalize_y``).

    Returns:
        :class:`MulanData` ``(X (4449, 21) float64, Y (4449, 7) float64, feature_names (21,),
        target_names (7,))``: inputs 7 joint positions, 7 velocities, 7 accelerations
        (:data:`SARCOS_FEATURE_NAMES`), outputs 7 torques (:data:`SARCOS_TARGET_NAMES`).

    Example:
        >>> from jaxmtl.datasets import load_sarcos
        >>> d = load_sarcos()
        >>> d.X.shape, d.Y.shape
        ((4449, 21), (4449, 7))
    """
    raw = _load_npz("sarcos.npz")
    return MulanData(X=raw["X"] / _UNITS, Y=raw["Y"] / _UNITS, feature_names=list(SARCOS_FEATURE_NAMES),
                     target_names=list(SARCOS_TARGET_NAMES))
