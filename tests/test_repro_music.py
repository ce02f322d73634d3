"""benchmarks/repro_music.py --quick ([Din11] §5.4) runs, checks its quick claims and writes its JSON."""

import pytest
from _quick import run_quick

pytestmark = pytest.mark.slow  # the quick run takes about 1.5 min on 2 cores


def test_repro_music_quick(tmp_path):
    payload = run_quick("repro_music.py", tmp_path)
    assert payload["mode"] == "quick" and payload["command"] == "python benchmarks/repro_music.py --quick"
    statuses = {c["claim"]: c["status"] for c in payload["claims"]}
    assert set(statuses.values()) <= {"pass", "skipped (quick)"}, payload["claims"]
    assert sum(s == "pass" for s in statuses.values()) >= 2          # α claim and online = centralized
    ours = payload["ours"]
    assert len(ours["rmse"]) == 3 and len(ours["rmse"][0]) == 3
    assert ours["online_max_diff"] <= 1e-8
    # tags concentrated on a few popular tags (exponent 2) make items more alike and top-20 lists easier
    low, high = ours["tag_sensitivity"]
    assert (low["zipf"], high["zipf"]) == (0.8, 2.0)
    assert high["mean_cosine"] > low["mean_cosine"] and high["top20hits"] > low["top20hits"]
    assert (tmp_path / "repro_music_grid_quick.png").exists() and (tmp_path / "repro_music_tags_quick.npz").exists()
