"""The bundled SARCOS rows: shapes, names, and the published file's values (recorded in the provenance)."""

import hashlib

import numpy as np

from jaxmtl.datasets import SARCOS_FEATURE_NAMES, SARCOS_TARGET_NAMES, load_sarcos

# the first row of sarcos_inv_test.mat as published (columns 1..28), read with scipy.io.loadmat
FIRST_ROW = [0.019478, -0.134218, 0.027439, 1.516401, 0.300936, 0.058259, 0.150134, -0.266791, -0.237134,
             -0.091272, 1.549958, -0.006883, 0.012774, -1.930253, 13.439378, -8.935911, 14.242047, 13.52024,
             11.695956, 1.210212, -22.119289, 50.292652, -36.971897, 20.93717, 47.821712, -0.424812, -0.907553,
             8.090739]


def test_sarcos_is_the_published_test_file():
    X, Y, features, targets = load_sarcos()
    assert X.shape == (4449, 21) and Y.shape == (4449, 7) and X.dtype == Y.dtype == np.float64
    assert features == list(SARCOS_FEATURE_NAMES) and targets == list(SARCOS_TARGET_NAMES)
    assert features[0] == "position_1" and features[20] == "acceleration_7" and targets[6] == "torque_7"
    matrix = np.ascontiguousarray(np.c_[X, Y])
    # the md5 of the file's float64 matrix, recorded in PROVENANCE_sarcos.txt: the values are exact
    assert hashlib.md5(matrix.tobytes()).hexdigest() == "29f46d32242526e311485f9d01d98586"
    np.testing.assert_array_equal(matrix[0], FIRST_ROW)
    assert len(np.unique(X, axis=0)) == 4449
    # summary statistics of the published torques (sample means and standard deviations)
    np.testing.assert_allclose(Y.mean(0), [13.692101, -24.354494, 11.358970, 27.474942, -0.793742, -0.780805,
                                           4.163428], atol=1e-6)
    np.testing.assert_allclose(Y.std(0), [20.351353, 14.899698, 9.947235, 13.759208, 0.972696, 1.713824,
                                          2.593805], atol=1e-6)
    assert np.corrcoef(Y[:, 3], Y[:, 6])[0, 1] > 0.95  # torques 4 and 7 nearly collinear: outputs share
