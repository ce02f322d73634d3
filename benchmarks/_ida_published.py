"""[LRODV08]'s published IDA figures (Tables 1–3), importable without side effects.

``PAPER[set][filter]`` = (mean, std) test error in % over ``PAPER_SPLITS[set]`` partitions; filters
'landweber', 'nu_method', 'tikhonov', 'tsvd', 'iterated_tikhonov' and the SVM column 'svm'.
``PAPER_T_SIGMA[set][filter]`` = the (t, σ) printed under each error in Table 2: t = 1/λ for Tikhonov,
TSVD and iterated Tikhonov, the step count for Landweber and the ν-method, all in the paper's
normalisation (filters of K/n, step τ = 1 since κ = sup K(x, x) = 1), σ the Gaussian width.
``PAPER_SPLITS[set]`` = the number of partitions behind each figure (Table 1: 100, 20 for image).
Kept apart from ``repro_ida.py`` (which turns float64 on at import) so that ``defaults_vs_tuned.py``
measures the estimators in JAX's default precision.
"""

PAPER = {  # test error %, mean ± std over PAPER_SPLITS partitions ([LRODV08] Tables 2, 3)
    "banana": {"landweber": (11.70, 0.68), "nu_method": (10.67, 0.53), "tikhonov": (11.22, 0.61),
               "tsvd": (11.74, 0.63), "iterated_tikhonov": (10.96, 0.56), "svm": (11.53, 0.66)},
    "breast_cancer": {"landweber": (25.38, 4.21), "nu_method": (25.35, 4.24), "tikhonov": (25.12, 4.32),
                      "tsvd": (26.81, 4.32), "iterated_tikhonov": (25.26, 4.14), "svm": (26.04, 4.74)},
    "german": {"landweber": (23.20, 2.28), "nu_method": (23.14, 2.34), "tikhonov": (23.37, 2.11),
               "tsvd": (24.67, 2.60), "iterated_tikhonov": (23.31, 2.24), "svm": (23.61, 2.07)},
    "heart": {"landweber": (15.94, 3.37), "nu_method": (15.48, 3.25), "tikhonov": (15.71, 3.20),
              "tsvd": (15.58, 3.41), "iterated_tikhonov": (15.60, 3.41), "svm": (15.95, 3.26)},
    "image": {"landweber": (6.42, 0.82), "nu_method": (2.78, 0.56), "tikhonov": (2.68, 0.54),
              "tsvd": (2.99, 0.48), "iterated_tikhonov": (2.72, 0.53), "svm": (2.96, 0.60)},
    "titanic": {"landweber": (23.53, 1.82), "nu_method": (22.96, 1.21), "tikhonov": (22.82, 1.81),
                "tsvd": (21.28, 0.67), "iterated_tikhonov": (20.20, 7.17), "svm": (22.42, 1.02)},
}

PAPER_T_SIGMA = {  # Table 2, "(t/σ)" under each error
    "banana": {"landweber": (116, 1), "nu_method": (70, 1), "tikhonov": (350, 1), "tsvd": (301, 1),
               "iterated_tikhonov": (141, 1)},
    "breast_cancer": {"landweber": (5, 2), "nu_method": (5, 2), "tikhonov": (41, 2), "tsvd": (120, 2),
                      "iterated_tikhonov": (4, 2)},
    "german": {"landweber": (119, 3), "nu_method": (16, 3), "tikhonov": (600, 3), "tsvd": (1150, 3),
               "iterated_tikhonov": (51, 3)},
    "heart": {"landweber": (63, 12), "nu_method": (16, 12), "tikhonov": (500, 12), "tsvd": (170, 12),
              "iterated_tikhonov": (21, 12)},
    "image": {"landweber": (7109, 1), "nu_method": (447, 2.6), "tikhonov": (179000, 2.6), "tsvd": (280000, 2.6),
              "iterated_tikhonov": (20001, 2.6)},
    "titanic": {"landweber": (5, 1), "nu_method": (1, 1), "tikhonov": (1.19, 1), "tsvd": (12, 1),
                "iterated_tikhonov": (1, 1)},
}

PAPER_SPLITS = {"banana": 100, "breast_cancer": 100, "german": 100, "heart": 100, "image": 20, "titanic": 100}
