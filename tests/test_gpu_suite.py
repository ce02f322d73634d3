"""benchmarks/gpu_suite.py --cpu --quick: every target runs, peers are named or said missing, numbers agree."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GPU_PEERS = ("cuml.KernelRidge", "himalaya.KernelRidge[torch_cuda]", "falkon.Falkon (M = n)",
             "pykeops LazyTensor.solve", "torch.linalg.cholesky per λ (CUDA)", "gpytorch solve (CG)",
             "gpytorch solve (Cholesky)", "cuml.SVC")


@pytest.mark.skipif(os.environ.get("JAXMTL_SKIP_REPRO") == "1", reason="JAXMTL_SKIP_REPRO=1")
def test_cpu_quick_suite_writes_every_target(tmp_path):
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_suite.py"), "--cpu", "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    payload = json.loads((tmp_path / "gpu_suite_cpu_quick.json").read_text())
    assert payload["device"]["platform"] == "cpu" and not payload["device"]["accelerator"]
    assert payload["command"] == "python benchmarks/gpu_suite.py --cpu --quick"
    assert payload["versions"]["jax"] and payload["machine"]["cpu_count"] and payload["dtype"].startswith("float32")
    t = payload["targets"]
    a = t["a_bandwidth"]  # no HBM table on the CPU: the peak is the bandwidth measured in the same run
    assert a["peak_source"].startswith("STREAM-like") and a["peak_GBs"] == payload["stream_triad"]["GBs"] > 0
    assert a["percent_of_peak"] == pytest.approx(100 * a["GBs"] / a["peak_GBs"])
    b = t["b_batched_flops"]["rows"][0]
    assert b["columns"] == 64 and b["gflops"] > 0 and b["percent_of_gemm"] == pytest.approx(
        100 * b["gflops"] / t["b_batched_flops"]["gemm"]["gflops"])
    c = t["c_peers"]
    assert {r["peer"] for r in c["rows"]} >= {"sklearn.KernelRidge (CPU)", "sklearn.SVC (libsvm, CPU)"}
    for peer in GPU_PEERS:  # named in a row, or said why not
        assert any(r["peer"] == peer for r in c["rows"]) or peer in c["not_available"] or \
            peer in t["d_svm"]["not_available"], peer
    krr = next(r for r in c["rows"] if r["peer"].startswith("sklearn.KernelRidge"))
    assert krr["max_test_mse_diff_over_grid"] < 1e-3 * krr["peer_best_test_mse"]  # the same ridge, in float32
    svc = next(r for r in c["rows"] if r["peer"].startswith("sklearn.SVC"))
    assert abs(svc["ours_best_test_error"] - svc["peer_best_test_error"]) <= 0.02
    d = t["d_svm"]["rows"][0]
    assert d["peer"].startswith("sklearn.SVC") and abs(d["ours_test_error"] - d["peer_test_error"]) <= 0.02
    e = t["e_precision"]  # the CPU ignores the matmul precision: TF32 and float32 are one computation
    assert e["tf32_equals_float32"] and e["float32"]["max_rel_loss_error_vs_float64"] < 1e-3
    f = t["f_routes"]  # issue 54's cells: every route timed, the auto route named; the torch peer on a GPU only
    assert [r["cell"] for r in f["rows"]] == ["hold-out x 7 lam", "5-fold x 20 lam x 6 omega"]
    assert all(r["auto_route"] in ("eigen", "direct") and r["auto_s"] > 0 and r["direct_s"] > 0 for r in f["rows"])
    assert "torch.linalg.cholesky per point" in f["not_available"] or all("torch_over_auto" in r for r in f["rows"])
