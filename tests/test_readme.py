"""The README is a short front page: its Python examples run as written, in order, in one namespace;
it stays under 300 lines; its relative links name files that exist; its summary table is the one
``scripts/readme_results.py`` generates (checked in ``tests/test_repro_scripts.py``)."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TEXT = README.read_text()
BLOCKS = re.findall(r"^```python\n(.*?)^```", TEXT, flags=re.S | re.M)
# pages the README links to that are written on their own schedule (precision and privacy notes)
def test_readme_is_short_and_has_three_examples():
    assert len(TEXT.splitlines()) <= 300
    assert len(BLOCKS) >= 3


def test_readme_links_resolve():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", TEXT)
    local = [link for link in links if "://" not in link]
    assert local, "the README links its documentation pages"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_readme_summary_names_its_commands_and_machines():
    table = TEXT.split("<!-- summary:start -->")[1].split("<!-- summary:end -->")[0]
    rows = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith("| what")]
    assert len(rows) >= 10
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[2].startswith("`python "), row        # the command that regenerates it
        assert "cores" in cells[3] or "cuda" in cells[3], row  # the machine it came from
        assert (ROOT / re.search(r"\]\(([^)]+)\)", cells[4]).group(1)).exists(), row


def test_every_readme_python_block_runs():
    namespace: dict = {"__name__": "__readme__"}
    for i, block in enumerate(BLOCKS):
        try:
            exec(compile(block, f"README.md python block {i + 1}", "exec"), namespace)
        except Exception as exc:  # report which block failed, with its source
            pytest.fail(f"README python block {i + 1} failed with {type(exc).__name__}: {exc}\n{block}")
