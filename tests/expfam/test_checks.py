"""The shared argument checks: each names the argument, what was expected and what it received."""

import numpy as np
import pytest

from efvi.expfam import checks


@pytest.mark.parametrize("value, match", [
    (np.array([1.0 + 2.0j]), r"^scale must be real; got a complex array of shape \(1,\)$"),
    ([1j, 2.0], "must be real"),
    ("abc", "^scale must be a numeric array; got 'abc'$"),
    (["a"] * 500, r"must be a numeric array; got list \["),
    ([1.0, np.nan], r"must be finite .* index \(1,\)"),
    ([[1.0, 2.0], [np.inf, 0.0]], r"index \(1, 0\)"),
])
def test_as_float_rejects_with_the_name_and_the_value(value, match):
    with pytest.raises(ValueError, match=match):
        checks.as_float(value, "scale")


def test_as_float_accepts_reals_and_keeps_the_values():
    out = checks.as_float(np.float32([1.5, 2.5]), "x")
    assert out.dtype == np.float64 and out.tolist() == [1.5, 2.5]
    assert checks.as_float([np.nan], "x", finite=False).shape == (1,)
    with pytest.raises(ValueError, match="at least 2 dimension"):
        checks.as_float([1.0], "x", ndim_min=2)


@pytest.mark.parametrize("value", [True, 1.5, -1, "3", None, np.nan])
def test_check_integer_rejects_what_is_not_a_whole_number_in_range(value):
    with pytest.raises(ValueError, match=r"^n must be an integer >= 0; got "):
        checks.check_integer(value, "n")


def test_check_integer_takes_numpy_and_whole_floats():
    assert checks.check_integer(np.int32(3), "n") == 3 and checks.check_integer(4.0, "n") == 4


def test_positive_probability_and_pd_checks():
    with pytest.raises(ValueError, match=r"rate must be > 0; got 0.0 at index \(1,\)"):
        checks.check_positive([1.0, 0.0], "rate")
    with pytest.raises(ValueError, match=r"p must lie in \(0, 1\)"):
        checks.check_probability([0.5, 1.0], "p", open_interval=True)
    with pytest.raises(ValueError, match="cov must be symmetric"):
        checks.check_pd([[1.0, 0.5], [0.0, 1.0]], "cov")
    with pytest.raises(ValueError, match="cov must be positive definite"):
        checks.check_pd([[1.0, 2.0], [2.0, 1.0]], "cov")
    with pytest.raises(ValueError, match="cov must be square"):
        checks.check_square(np.ones((2, 3)), "cov")
    np.testing.assert_array_equal(checks.check_pd(np.eye(2), "cov"), np.eye(2))
