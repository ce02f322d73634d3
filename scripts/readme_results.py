"""Write the README's "Reproductions" section from the full results in benchmarks/results/.

Each ``benchmarks/repro_<name>.py`` run writes ``benchmarks/results/repro_<name>.json`` with its
side-by-side tables (ours beside the paper's) and the claims it checked. This script puts those
tables, the claims and the command that regenerates them between the markers
``<!-- reproductions:start -->`` and ``<!-- reproductions:end -->`` of README.md, so the README
never quotes a figure that no run produced.

Usage: python scripts/readme_results.py [--check]   (--check: exit 1 if the README is stale)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
START, END = "<!-- reproductions:start -->", "<!-- reproductions:end -->"
ORDER = [("repro_school", "School data (seed 000 Table 1)"),
         ("repro_ida", "IDA benchmarks (seed 004 Table 2)"),
         ("repro_toy", "Multi-task vs vector-valued toy (seed 000 §7.1, Figures 2–4)"),
         ("repro_fields", "2-D vector fields (seed 000 §7.1, Figures 6–10)"),
         ("repro_mulan", "Mulan multi-target regression (aRRMSE, 10-fold CV)")]


def section() -> str:
    """The Markdown of the section (without the markers)."""
    parts = []
    for name, title in ORDER:
        path = RESULTS / f"{name}.json"
        parts.append(f"### {title}\n")
        if not path.exists():
            parts.append(f"No full run recorded yet: `python benchmarks/{name}.py`.\n")
            continue
        res = json.loads(path.read_text())
        cpu = res.get("machine", {}).get("cpu_model", "CPU")
        parts.append(f"`{res['command']}` — {res['elapsed_s'] / 60:.1f} min on {res['machine']['cpu_count']} cores "
                     f"({cpu}), float64. Results: `benchmarks/results/{name}.json`.\n")
        for table in res.get("tables", []):
            caption, _, body = table.partition("\n")
            parts.append(f"{caption}\n\n{body}\n")
        claims = res.get("claims", [])
        if claims:
            parts.append("Claims checked by the script (it exits non-zero when one fails):\n")
            parts.extend(f"- **{c['status']}** — {c['claim']}" + (f" ({c['detail']})" if c.get("detail") else "")
                         for c in claims if "finite" not in c["claim"])
            parts.append("")
        for fig in res.get("figures", []):
            parts.append(f"![{name}]({fig})\n")
    return "\n".join(parts).strip() + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md is not up to date")
    args = parser.parse_args(argv)
    readme = (ROOT / "README.md").read_text()
    if START not in readme or END not in readme:
        print(f"README.md lacks the markers {START} / {END}", file=sys.stderr)
        return 1
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    new = head + START + "\n" + section() + END + tail
    if args.check:
        return 0 if new == readme else 1
    (ROOT / "README.md").write_text(new)
    print("README.md: reproductions section written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
