"""Input validation for code of your own: the checks jaxmtl's kernels, filters and estimators run.

Each check runs in plain Python on the host, before anything is traced, and raises one of
:mod:`jaxmtl.errors`' exceptions naming the argument, what was received and what was expected.
A kernel of your own calls them in ``__init__`` so that a bad hyperparameter fails at
construction, not as a NaN inside a compiled fit (see docs/extending.md).

=========================  ================================================================
check                      accepts
=========================  ================================================================
``check_positive``         a number > 0 (``allow_zero=True``: ≥ 0); returns a float
``check_positive_array``   a non-empty array of numbers > 0; returns float64
``check_unit_interval``    numbers in [0, 1]; returns a 1-D float64 array
``check_fraction``         a number in (0, 1)
``check_int``              an integer in [minimum, maximum]
``check_bool``             True or False
``check_output_matrix``    a symmetric PSD (d, d) matrix; returns it symmetrised
``as_float_array``         array-like of finite floats (optionally of given ndim)
``check_inputs``           (n, p) inputs X (a 1-D array as one feature)
=========================  ================================================================

Example:
    >>> from jaxmtl.checks import check_positive
    >>> check_positive(2, "sigma")
    2.0
    >>> try:
    ...     check_positive(-1.0, "sigma")
    ... except ValueError as err:
    ...     print(type(err).__name__)
    ParameterError
"""

from ._checks import (
    as_float_array,
    check_bool,
    check_fraction,
    check_inputs,
    check_int,
    check_output_matrix,
    check_positive,
    check_positive_array,
    check_unit_interval,
)

__all__ = ["as_float_array", "check_bool", "check_fraction", "check_inputs", "check_int",
           "check_output_matrix", "check_positive", "check_positive_array", "check_unit_interval"]
