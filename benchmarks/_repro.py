"""Shared helpers of the reproduction scripts (benchmarks/repro_*.py).

Machine and version facts, the argument parser (``--quick``), result files
(``benchmarks/results/<name>.json``), side-by-side tables and claim checks that make a script
exit non-zero when a published claim is not reproduced.

Each claim gets one of three verdicts (``verdict``): *reproduced*, *better than published* (our
figure differs from the paper's figure for the same quantity by more than the tolerance, in the
direction that favours us: a lower error, a higher explained variance or accuracy) or *not
reproduced*. Only a claim that records its ``figures`` (ours, the paper's, the tolerance) and a
``direction`` can be better than published; a one-sided claim, or one that compares methods with
each other (an ordering, "A beats B", "no gain"), is reproduced or not.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# results/ beside the scripts; JAXMTL_RESULTS_DIR redirects them (the tests write to a temporary folder)
RESULTS = Path(os.environ.get("JAXMTL_RESULTS_DIR", ROOT / "benchmarks" / "results"))
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))
REQUIRED_KEYS = ("name", "mode", "paper", "protocol", "seeds", "ours", "claims", "versions", "machine",
                 "command", "elapsed_s")
REPRODUCED, BETTER, NOT_REPRODUCED, SKIPPED = "reproduced", "better than published", "not reproduced", "skipped (quick)"
DIRECTIONS = ("lower", "higher")  # which way our figure is better: lower errors, higher explained variance / accuracy


def setup() -> None:
    """float64 for every reproduction (the published numbers came from MATLAB doubles)."""
    import jax

    jax.config.update("jax_enable_x64", True)


def parse(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true",
                        help="reduced run (about a minute) that still checks the claims marked quick")
    return parser.parse_args()


def versions() -> dict:
    out = {"python": sys.version.split()[0]}
    for mod in ("jaxmtl", "jax", "jaxlib", "numpy", "sklearn", "matplotlib", "equinox"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - absent optional package
            out[mod] = None
    return out


def machine() -> dict:
    import jax

    info = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "jax_backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
    }
    try:
        with open("/proc/cpuinfo") as fh:
            names = [ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")]
        if names:
            info["cpu_model"] = names[0]
        with open("/proc/meminfo") as fh:
            info["memory_total_kb"] = int(fh.readline().split()[1])
    except OSError:
        pass
    return info


def _clean(obj):
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if np.isfinite(v) else None
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def se(values) -> float:
    """Standard error of a mean, std(ddof=1)/√k (0 for a single value)."""
    v = np.asarray(values, float)
    return float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0


def mean_vs_published(values, paper_mean: float, paper_std: float, paper_k: int, z: float = 2.0) -> dict:
    """Our mean over ``len(values)`` splits against a published mean ± std over ``paper_k`` splits.

    Two-sided: pass when |ours − paper| ≤ z·√(SE_ours² + SE_paper²), SE = std/√splits (z = 2 ≈ a 95 %
    interval for the difference of two independent means). Returns the figures and the verdict.
    """
    v = np.asarray(values, float)
    s_o, s_p = se(v), paper_std / np.sqrt(paper_k)
    tol = z * float(np.hypot(s_o, s_p))
    diff = float(v.mean() - paper_mean)
    return {"ours": float(v.mean()), "ours_se": s_o, "ours_k": len(v), "paper": paper_mean, "paper_se": float(s_p),
            "paper_k": paper_k, "difference": diff, "tolerance": tol, "ok": abs(diff) <= tol}


def paired(a, b, z: float = 2.0) -> dict:
    """Paired comparison of a and b over the same runs: mean of a − b, its SE, and whether a is
    significantly below b (mean(a − b) < −z·SE) or indistinguishable (|mean| ≤ z·SE)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    m, s = float(d.mean()), se(d)
    return {"mean_difference": m, "se": s, "runs": len(d), "below": m < -z * s if len(d) > 1 else m < 0,
            "indistinguishable": abs(m) <= z * s}


def _side(figure: dict, direction: str | None) -> str:
    """"inside" the tolerance, else "better" or "worse" than the paper's figure (outside with no
    direction counts as worse: nothing says which side favours us)."""
    difference = figure["ours"] - figure["paper"]
    if abs(difference) <= figure["tolerance"]:
        return "inside"
    if direction is None:
        return "worse"
    return "better" if (difference < 0) == (direction == "lower") else "worse"


def verdict(claim: dict) -> str:
    """The verdict of one recorded claim: ``SKIPPED``, ``REPRODUCED``, ``BETTER`` or ``NOT_REPRODUCED``.

    A claim with ``figures`` (each ``{"ours", "paper", "tolerance"}``, two-sided) is judged from
    them: any figure outside the tolerance on the wrong side (or with no ``direction``) makes it
    not reproduced, else any outside on our side makes it better than published, else it is
    reproduced. A claim without figures (one-sided, or a comparison between methods) is
    reproduced when its check passed.

    Example:
        >>> error = {"ours": 10.5, "paper": 11.7, "tolerance": 0.4}  # a test error, 1.2 points below the paper's
        >>> verdict({"status": "FAIL", "direction": "lower", "figures": [error]})
        'better than published'
        >>> verdict({"status": "FAIL", "direction": None})
        'not reproduced'
    """
    if claim["status"] == SKIPPED:
        return SKIPPED
    sides = {_side(f, claim.get("direction")) for f in claim.get("figures") or []}
    if not sides:
        return REPRODUCED if claim["status"] == "pass" else NOT_REPRODUCED
    return NOT_REPRODUCED if "worse" in sides else BETTER if "better" in sides else REPRODUCED


class Claims:
    """The claims a script checks, each recorded with the paper's statement, the tolerance and the figures.

    ``check(claim, ok, paper=…, ours=…, tolerance=…)`` records one claim: ``claim`` is the paper's
    statement (with its section), ``paper`` the published figure(s), ``ours`` ours, ``tolerance`` how
    they are compared (two-sided unless the paper's statement is one-sided), ``explanation`` what is
    known about a failure (kept with the claim: a claim not reproduced stays in the table with it).
    ``direction`` says which way our figure is better ("lower" errors, "higher" explained variance
    or accuracy; None for a comparison between methods), ``figures`` the numbers of a two-sided
    comparison with the paper (one dict ``{"ours", "paper", "tolerance"}`` as ``mean_vs_published``
    returns, or a list of them with a ``label`` each): ``ok`` must then say that every figure is
    within its tolerance, and ``verdict`` reads better than published from them. ``status`` records
    the check as stated (pass / FAIL), ``verdict`` its reading.
    ``quick=True`` marks claims also checked by ``--quick`` runs (on the reduced problem the quick
    run describes); the others are reported as "skipped (quick)". ``sanity`` records a check that is
    not a paper claim (finite outputs, an identity); the README lists those apart.
    """

    def __init__(self, quick: bool):
        self.quick = quick
        self.items: list[dict] = []

    def check(self, claim: str, ok, detail: str = "", *, paper="", ours="", tolerance: str = "",
              quick: bool | None = None, explanation: str = "", kind: str = "paper",
              full_only: bool = True, direction: str | None = None, figures: dict | list[dict] | None = None) -> None:
        if quick is None:  # the older form: full_only=False marks a claim checked by quick runs too
            quick = not full_only
        if direction not in (None, *DIRECTIONS):
            raise ValueError(f"direction must be one of {DIRECTIONS} or None, got {direction!r}")
        if self.quick and not quick:
            status = SKIPPED
        else:
            status = "pass" if bool(ok) else "FAIL"
        item = {"claim": claim, "kind": kind, "status": status, "paper": _clean(paper), "ours": _clean(ours),
                "tolerance": tolerance, "detail": detail, "direction": direction}
        if figures is not None:
            rows = [figures] if isinstance(figures, dict) else figures
            item["figures"] = [_clean({k: f[k] for k in ("label", "ours", "paper", "tolerance") if k in f})
                               for f in rows]
            inside = all(_side(f, direction) == "inside" for f in item["figures"])
            if status != SKIPPED and inside != (status == "pass"):
                raise ValueError(f"claim {claim!r}: ok={bool(ok)} but its figures are "
                                 f"{'all' if inside else 'not all'} within their tolerance")
        item["verdict"] = verdict(item)
        if explanation:
            item["explanation"] = explanation
        self.items.append(item)

    def sanity(self, name: str, ok, detail: str = "") -> None:
        """A check that is not a paper claim (always run, quick or full)."""
        self.check(name, ok, detail=detail, quick=True, kind="sanity")

    @property
    def failed(self) -> list[dict]:
        """The claims not reproduced (better than published is not a failure)."""
        return [c for c in self.items if c["verdict"] == NOT_REPRODUCED]

    def report(self) -> str:
        lines = []
        for c in self.items:
            line = f"  [{c['verdict']}] {c['claim']}"
            if c["kind"] != "sanity":
                line += f"\n      paper: {c['paper']} | ours: {c['ours']} | tolerance: {c['tolerance']}"
            if c.get("detail"):
                line += f"\n      {c['detail']}"
            if c["verdict"] in (NOT_REPRODUCED, BETTER) and c.get("explanation"):
                line += f"\n      why: {c['explanation']}"
            lines.append(line)
        return "\n".join(lines)


def finish(name: str, args, start: float, paper: dict, protocol: dict, seeds, ours: dict,
           claims: Claims, tables: list[str], extra: dict | None = None) -> None:
    """Write the JSON, print the tables and the claims, exit 1 when a checked claim failed."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if args.quick else ""
    payload = {
        "name": name,
        "mode": "quick" if args.quick else "full",
        "command": f"python benchmarks/{name}.py" + (" --quick" if args.quick else ""),
        "paper": paper,
        "protocol": protocol,
        "seeds": seeds,
        "ours": ours,
        "claims": claims.items,
        "versions": versions(),
        "machine": machine(),
        "elapsed_s": time.perf_counter() - start,
        "tables": tables,
        **(extra or {}),
    }
    path = RESULTS / f"{name}{suffix}.json"
    path.write_text(json.dumps(_clean(payload), indent=1))
    for t in tables:
        print(t)
        print()
    print("claims:")
    print(claims.report())
    print(f"\nwrote {_shown(path)} ({payload['elapsed_s']:.1f} s)")
    if claims.failed:
        print(f"{len(claims.failed)} claim(s) not reproduced", file=sys.stderr)
        sys.exit(1)


def table(header: list[str], rows: list[list]) -> str:
    """A Markdown table (readable as plain text too)."""
    fmt = lambda v: f"{v:.4g}" if isinstance(v, (float, np.floating)) else str(v)
    cells = [[fmt(v) for v in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in cells])


def pm(mean, std, scale: float = 1.0, digits: int = 2) -> str:
    return f"{scale * mean:.{digits}f} ± {scale * std:.{digits}f}"


def savefig(fig, name: str) -> str:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    fig.savefig(path, dpi=90, bbox_inches="tight")
    return _shown(path)


def _shown(path: Path) -> str:
    """``path`` relative to the repository when inside it, else its file name (results written
    elsewhere through JAXMTL_RESULTS_DIR name no machine's folders)."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
