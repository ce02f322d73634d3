"""Every docstring example of the package runs as written, in JAX's default configuration.

Users copy the ``Example:`` blocks of the docstrings; this runs each module's examples with
:mod:`doctest` in the float32 run (x64 off, what a fresh session has) and fails on a wrong
output, an exception, or a warning the library leaks from JAX or NumPy (a float64 request
truncated to float32, an overflow) — the library's own warnings (e.g. ``GridEdgeWarning``) are
part of what an example shows and are allowed.
"""

import doctest
import importlib
import pkgutil
import warnings

import pytest

import jaxmtl

MODULES = sorted(m.name for m in pkgutil.walk_packages(jaxmtl.__path__, "jaxmtl."))
LEAKS = (".*is not available, and will be truncated", ".*overflow", ".*invalid value", ".*divide by zero")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_written(name):
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with warnings.catch_warnings():
        for pattern in LEAKS:
            warnings.filterwarnings("error", message=pattern)
        report: list[str] = []
        for t in tests:
            runner.run(t, out=report.append)
    assert runner.failures == 0, "".join(report)
