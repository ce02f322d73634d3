"""The tutorials of the documentation site (docs/tutorials/*.md) run as written: each page's
Python blocks in order, in one namespace, in a fresh folder; every figure a page shows is written
by its own code. ``python scripts/tutorial_figures.py`` runs them to refresh the committed figures."""

import pathlib
import re

import matplotlib
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs" / "tutorials").glob("*.md"))


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def run_page(page: pathlib.Path) -> dict:
    """Execute ``page``'s Python blocks in the current folder; returns the namespace."""
    matplotlib.use("Agg")
    namespace: dict = {"__name__": "__tutorial__"}
    for i, block in enumerate(python_blocks(page.read_text())):
        exec(compile(block, f"{page.name} python block {i + 1}", "exec"), namespace)
    import matplotlib.pyplot as plt

    plt.close("all")
    return namespace


def test_the_tutorials_are_the_site_s():
    names = {p.stem for p in PAGES}
    assert {"school", "vector_fields", "output_kernels", "mkl", "large_scale", "client_server",
            "from_sklearn"} <= names
    nav = (ROOT / "mkdocs.yml").read_text()
    assert all(f"tutorials/{p.name}" in nav for p in PAGES)


@pytest.mark.filterwarnings("ignore::jaxmtl.errors.GridEdgeWarning")
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_tutorial_runs_and_draws_its_figures(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_page(page)
    for figure in re.findall(r"!\[[^\]]*\]\(img/([^)]+)\)", page.read_text()):
        assert (tmp_path / figure).is_file(), f"{page.name} shows img/{figure}, which its code did not write"
        assert (page.parent / "img" / figure).is_file(), f"img/{figure} is not committed: run scripts/tutorial_figures.py"
