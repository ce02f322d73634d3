"""The reliability report script (``scripts/reliability_report.py``) imported as a module for the tests."""

import importlib.util
import os
import sys

_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts",
                     "reliability_report.py")


def load_report():
    """The ``reliability_report`` module, loaded once per process."""
    if "reliability_report" not in sys.modules:
        spec = importlib.util.spec_from_file_location("reliability_report", _PATH)
        module = importlib.util.module_from_spec(spec)
        sys.modules["reliability_report"] = module
        spec.loader.exec_module(module)
    return sys.modules["reliability_report"]
