"""Every Python code block of the README runs as written, in order, in one namespace."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 3


def test_every_readme_python_block_runs():
    namespace: dict = {"__name__": "__readme__"}
    for i, block in enumerate(BLOCKS):
        try:
            exec(compile(block, f"README.md python block {i + 1}", "exec"), namespace)
        except Exception as exc:  # report which block failed, with its source
            pytest.fail(f"README python block {i + 1} failed with {type(exc).__name__}: {exc}\n{block}")
