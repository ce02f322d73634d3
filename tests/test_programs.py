"""A fit compiles the library's own programs only: no eager JAX operation between them (each
compiles a program of its own per shape — a conversion of a NumPy argument, an indexing, a
product — where a NumPy step or a step inside a program costs none).

The programs are named by ``jax.monitoring``'s backend-compile events (``fun_name``); the
reference is the set of names the package defines (functions and methods of its modules), so
a primitive's program (``stage``, ``convert_element_type``, ``broadcast_in_dim``, …) fails."""

import inspect
import sys
import warnings

import jax
import numpy as np
import pytest

import jaxmtl

COMPILE = "/jax/core/compile/backend_compile_duration"


def _library_names() -> set[str]:
    names = set()
    for name, module in list(sys.modules.items()):
        if name.startswith("jaxmtl") and module is not None:
            for attr, value in vars(module).items():
                names.add(attr)
                if inspect.isclass(value):
                    names.update(vars(value))
    return names


def _fit(name, n):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    Y = np.c_[y, np.cos(X[:, 1])]
    est = getattr(jaxmtl, name)
    if name == "MixedEffectRegressor":
        return est().fit(X, y, np.arange(n) % 3)
    if name == "KernelMachineClassifier":
        return est().fit(X, (y > 0).astype(int))
    if name == "ApproximateKernelRegressor":
        return est(n_components=20).fit(X, Y)
    return est().fit(X, Y if name in ("RLS2Regressor", "OutputKernelRegressor", "VectorFieldRegressor") else y)


@pytest.mark.long
@pytest.mark.parametrize("name", ["KernelMachine", "KernelMachineClassifier", "RLS2Regressor", "MixedEffectRegressor",
                                  "OutputKernelRegressor", "VectorFieldRegressor", "ApproximateKernelRegressor"])
def test_a_fit_compiles_only_the_librarys_programs(name):
    compiled = []

    def listener(event, duration, fun_name="?", **kwargs):
        if event == COMPILE:
            compiled.append(fun_name[4:-1] if fun_name.startswith("jit(") else fun_name)

    jax.clear_caches()
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _fit(name, 40)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert compiled, "no program compiled: the counter is not listening"
    foreign = sorted(set(compiled) - _library_names())
    assert not foreign, f"{name} compiled eager operations: {foreign}"
