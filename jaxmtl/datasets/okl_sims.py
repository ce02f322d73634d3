r"""The simulated multi-class problems sim0–sim3 of output kernel learning ([DOGP11] §5.1).

[DOGP11] F. Dinuzzo, C. S. Ong, P. Gehler, G. Pillonetto, *Learning output kernels with block
coordinate descent*, ICML 2011.

"A 100-dimensional mixture of Gaussians with unit variance. The means of the Gaussians are placed
on the simplex centred around the origin, with edges of length √2." Every data set has 5 labels
(0 … 4); each Gaussian (a *class* a, b, …) holds 500 examples, and a class that is *split* over
several labels hands them out uniformly at random:

======  ==========================================  =========
name    labels of each Gaussian                     Gaussians
======  ==========================================  =========
sim0    {0}a {1}b {2}c {3}d {4}e                    5
sim1    {0, 1}a {2}b {3}c {4}d                      4
sim2    {0}a {1}b {2, 3, 4}c                        3
sim3    {0}a {1, 2}b {3, 4}c                        3
======  ==========================================  =========

Choices the paper leaves open, fixed here:

* the simplex of q Gaussians is the regular one spanned by the first q coordinate vectors,
  centred: μ_k = e_k − (1/q) Σ_j e_j (pairwise distance √2, mean 0);
* "uniformly allocated labels at random" is read as a balanced allocation: the examples of a split
  Gaussian are shuffled and dealt to its labels in turn (500 over two labels: exactly 250 each,
  the "50/50 mix" of the text; over three: 167/167/166).

Example:
    >>> data = make_okl_sim("sim1", rng=0)
    >>> data.X.shape, sorted(set(data.y.tolist())), data.bayes_ceiling
    ((2000, 100), [0, 1, 2, 3, 4], 0.875)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import ParameterError

__all__ = ["OKL_SIM_GROUPS", "OKLSimData", "make_okl_sim"]

# labels of each Gaussian, per data set ([DOGP11] §5.1)
OKL_SIM_GROUPS: dict[str, tuple[tuple[int, ...], ...]] = {
    "sim0": ((0,), (1,), (2,), (3,), (4,)),
    "sim1": ((0, 1), (2,), (3,), (4,)),
    "sim2": ((0,), (1,), (2, 3, 4)),
    "sim3": ((0,), (1, 2), (3, 4)),
}


class OKLSimData(NamedTuple):
    """One of sim0–sim3.

    Attributes:
      X: (n, dim) inputs.
      y: (n,) labels in 0 … 4.
      component: (n,) index of the Gaussian each example was drawn from.
      means: (q, dim) means of the q Gaussians.
      groups: the labels of each Gaussian (``OKL_SIM_GROUPS[name]``).
      name: 'sim0' … 'sim3'.
      bayes_ceiling: the accuracy a classifier that knew the Gaussian of every example would reach
        (a split Gaussian over k labels contributes 1/k of its examples), e.g. 0.875 for sim1.
    """

    X: np.ndarray
    y: np.ndarray
    component: np.ndarray
    means: np.ndarray
    groups: tuple
    name: str
    bayes_ceiling: float


def make_okl_sim(name: str, rng: np.random.Generator | int | None = None, n_per_class: int = 500, dim: int = 100) -> OKLSimData:
    """Draw sim0, sim1, sim2 or sim3 of [DOGP11] §5.1 (see the module docstring).

    Args:
      name: 'sim0', 'sim1', 'sim2' or 'sim3'.
      rng: seed or ``numpy.random.Generator``.
      n_per_class: examples per Gaussian (500 in the paper).
      dim: input dimension (100 in the paper; at least the number of Gaussians).

    Returns:
      :class:`OKLSimData`, rows in random order.
    """
    if name not in OKL_SIM_GROUPS:
        raise ParameterError(f"name must be one of {sorted(OKL_SIM_GROUPS)}; received {name!r}.")
    groups = OKL_SIM_GROUPS[name]
    q = len(groups)
    if isinstance(n_per_class, bool) or not isinstance(n_per_class, (int, np.integer)) or n_per_class < 1:
        raise ParameterError(f"n_per_class must be a positive integer; received {n_per_class!r}.")
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < q:
        raise ParameterError(f"dim must be an integer of at least {q} for {name}; received {dim!r}.")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    means = np.zeros((q, dim))
    means[np.arange(q), np.arange(q)] = 1.0
    means -= means.mean(axis=0)  # regular simplex, edges √2, centred at the origin
    component = np.repeat(np.arange(q), n_per_class)
    X = means[component] + gen.normal(size=(q * n_per_class, dim))
    y = np.empty(q * n_per_class, dtype=np.int64)
    for k, labels in enumerate(groups):
        rows = np.flatnonzero(component == k)
        y[gen.permutation(rows)] = np.resize(np.asarray(labels), len(rows))
    order = gen.permutation(len(y))
    ceiling = float(np.mean([1.0 / len(g) for g in groups]))
    return OKLSimData(X[order], y[order], component[order], means, groups, name, ceiling)
