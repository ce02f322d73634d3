"""What a new process pays before its first answer: ``import jaxmtl`` loads scikit-learn, optax and
the estimators only when first used, and :func:`jaxmtl.enable_compilation_cache` (its folder
checks, its effect after earlier compilations, and unreadable entries)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxmtl
from jaxmtl.compilation import default_cache_dir, disable_compilation_cache, enable_compilation_cache
from jaxmtl.errors import ParameterError

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_"))}  # JAX's defaults
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


_IMPORTS = """
import json, sys
import jaxmtl
after_import = sorted(m for m in ("jax", "equinox", "optax", "sklearn", "scipy") if m in sys.modules)
from jaxmtl import Gaussian, NuMethod, regularization_path
after_core = sorted(m for m in ("optax", "sklearn") if m in sys.modules)
from jaxmtl import VectorValuedRegressor
after_estimators = sorted(m for m in ("sklearn", "optax") if m in sys.modules)
print(json.dumps({"after_import": after_import, "after_core": after_core, "after_estimators": after_estimators}))
"""


def test_import_loads_the_heavy_dependencies_only_when_first_needed():
    loaded = _run(_IMPORTS)
    assert loaded["after_import"] == []           # import jaxmtl: nothing beyond the package itself
    assert loaded["after_core"] == []             # the functional core: jax and equinox only
    assert loaded["after_estimators"] == []       # the estimators implement scikit-learn's protocol themselves


def test_every_public_name_resolves_and_is_listed():
    for name in jaxmtl.__all__:
        assert getattr(jaxmtl, name) is not None, name
    assert set(jaxmtl.__all__) <= set(dir(jaxmtl))
    assert jaxmtl.VectorValuedRegressor is jaxmtl.models.VectorValuedRegressor
    assert jaxmtl.enable_compilation_cache is enable_compilation_cache
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        jaxmtl.not_a_name  # noqa: B018


def test_not_fitted_error_is_scikit_learns_and_one_class():
    from sklearn.exceptions import NotFittedError as SklearnNotFitted

    from jaxmtl import errors

    assert issubclass(errors.NotFittedError, SklearnNotFitted)
    assert issubclass(errors.NotFittedError, errors.JaxmtlError)
    assert errors.NotFittedError is jaxmtl.errors.NotFittedError
    with pytest.raises(SklearnNotFitted):
        jaxmtl.VectorValuedRegressor().predict(np.zeros((2, 2)))


def test_an_unwritable_folder_is_refused_by_name(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    with pytest.raises(ParameterError, match="a_file/cache"):
        enable_compilation_cache(blocker / "cache")


def test_a_path_that_is_not_a_path_is_refused_by_name():
    with pytest.raises(ParameterError, match="path must be None or a folder's path.*received int 5"):
        enable_compilation_cache(5)


def test_default_folder_is_in_the_users_cache_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if sys.platform.startswith("linux"):
        assert default_cache_dir() == tmp_path / "jaxmtl" / "xla"
    assert default_cache_dir().parts[-2:] == ("jaxmtl", "xla")


_CACHED = """
import json, sys, warnings
import jax, jax.numpy as jnp, numpy as np
import jaxmtl
counts = {"programs": 0, "cache_hits": 0}
jax.monitoring.register_event_listener(
    lambda event, **kw: counts.__setitem__("cache_hits", counts["cache_hits"] + (event == "/jax/compilation_cache/cache_hits")))
jax.monitoring.register_event_duration_secs_listener(
    lambda event, d, **kw: counts.__setitem__("programs", counts["programs"] + (event == "/jax/core/compile/backend_compile_duration")))
jnp.arange(3.0).sum().block_until_ready()   # a compilation before the cache is enabled
jaxmtl.enable_compilation_cache(sys.argv[1])
before = dict(counts)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    value = jax.jit(lambda x: jnp.cumsum(jnp.sin(x) ** 2))(np.arange(7.0, dtype=np.float32))
counts = {k: counts[k] - before[k] for k in counts}
counts["value"] = value.tolist()
counts["warnings"] = [str(w.message)[:200] for w in caught]
print(json.dumps(counts))
"""


def test_enabled_after_earlier_compilations_and_unreadable_entries_are_recompiled(tmp_path):
    cache = tmp_path / "cache"
    first = _run(_CACHED, str(cache))
    entries = [p for p in cache.rglob("*") if p.is_file() and not p.name.startswith(".")]
    assert first["programs"] == 1 and first["cache_hits"] == 0 and entries  # written, though enabled late
    second = _run(_CACHED, str(cache))
    assert second["cache_hits"] == 1 and second["value"] == first["value"]  # read back
    for entry in entries:  # truncated files: what a crash while writing, or another tool, leaves
        entry.write_bytes(entry.read_bytes()[:7])
    third = _run(_CACHED, str(cache))
    assert third["cache_hits"] == 0 and third["programs"] == 1  # compiled again, no error
    np.testing.assert_allclose(third["value"], first["value"])


def test_disable_restores_jax_defaults(tmp_path):
    import jax

    enable_compilation_cache(tmp_path)
    assert jax.config.jax_compilation_cache_dir == str(tmp_path)
    disable_compilation_cache()
    assert jax.config.jax_compilation_cache_dir is None
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 1.0

