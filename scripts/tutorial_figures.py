"""Run the tutorials (docs/tutorials/*.md) in docs/tutorials/img/, refreshing the figures they show.

Usage: python scripts/tutorial_figures.py [page-stem ...]   (default: every tutorial)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_tutorials import PAGES, run_page  # noqa: E402  (the tests' runner: one way to execute a page)


def main(argv: list[str]) -> int:
    pages = [p for p in PAGES if not argv or p.stem in argv]
    os.chdir(ROOT / "docs" / "tutorials" / "img")
    for page in pages:
        start, cpu = time.perf_counter(), time.process_time()
        run_page(page)
        print(f"{page.name}: {time.perf_counter() - start:.1f} s wall, {time.process_time() - cpu:.1f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
