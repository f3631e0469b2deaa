"""Student-t observations: negative site precisions never give an invalid state-space posterior.

Validity is checked independently of the Kalman filter: the posterior
precision ``K^{-1} + Pi`` is positive definite exactly when
``I + L^T Pi L`` is (``K = L L^T``), whose eigenvalues numpy computes.
"""

import numpy as np
import pytest

from inference import Model, StepBackoffWarning
from models import Observe, gp, lds, likelihoods

RTOL = 1e-8
KERNEL = gp.kernels.Matern32(lengthscale=1.0, variance=1.0)
LIKELIHOOD = likelihoods.StudentT(df=3.0, scale=0.1)


def _data(seed=3, T=120, n_outliers=10):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 20.0, T))
    y = np.sin(t) + 0.1 * rng.normal(size=T)
    outliers = rng.choice(T, n_outliers, replace=False)
    y[outliers] += rng.choice([-1.0, 1.0], n_outliers) * rng.uniform(3.0, 6.0, n_outliers)
    return t, y


def _min_posterior_eigenvalue(t, precision):
    chol = np.linalg.cholesky(KERNEL(t))
    return np.linalg.eigvalsh(np.eye(t.shape[0]) + chol.T @ (precision[:, None] * chol)).min()


def _fit(block, y, **options):
    return Model({"f": block}, [Observe(LIKELIHOOD, y, on="f")]).fit(**options)


def test_default_fit_is_valid_monotone_and_equals_the_dense_gp():
    t, y = _data()
    checked = []

    def check(info):
        q = info.posterior["f"]
        checked.append((np.min(q.var), _min_posterior_eigenvalue(t, q.precision)))

    # the two blocks may take different step sizes (the Kalman filter rejects some valid proposals, see
    # the xfail below), so their converged fixed points are compared, at a tolerance that pins them down
    markov = _fit(lds.MarkovGP(KERNEL, t), y, tol=1e-14, callback=check)
    assert markov.converged
    assert np.sum(markov.sites[0].precision < 0) >= 5      # the outliers' sites are negative
    assert all(var > 0 and eig > 0 for var, eig in checked)
    assert np.all(markov.posterior["f"].var > 0)
    slack = 1e-11 * np.maximum(1.0, np.abs(markov.elbo_trace[:-1]))
    assert np.all(np.diff(markov.elbo_trace) >= -slack)
    assert np.any(markov.rho_trace[1:] < 1.0)               # the adaptive rule had to shorten steps

    dense = _fit(gp.GP(KERNEL, t), y, tol=1e-14)
    assert dense.converged
    np.testing.assert_allclose(markov.posterior["f"].mean, dense.posterior["f"].mean, rtol=RTOL, atol=RTOL)
    np.testing.assert_allclose(markov.posterior["f"].var, dense.posterior["f"].var, rtol=RTOL, atol=RTOL)
    np.testing.assert_array_equal(markov.sites[0].precision < 0, dense.sites[0].precision < 0)
    assert markov.elbo == pytest.approx(dense.elbo, rel=RTOL)


def test_full_fixed_steps_back_off_instead_of_returning_an_invalid_posterior():
    """With rho = 1 the raw update leaves the valid set; every accepted posterior is still valid."""
    t, y = _data()
    eigenvalues = []
    with pytest.warns(StepBackoffWarning, match="step shortened"):
        fit = _fit(lds.MarkovGP(KERNEL, t), y, step=1.0, max_iter=15, warn=False,
                   callback=lambda info: eigenvalues.append(_min_posterior_eigenvalue(t, info.posterior["f"].precision)))
    assert fit.n_backoffs > 0
    assert np.min(eigenvalues) > 0
    assert np.all(fit.posterior["f"].var > 0)
    assert np.any(fit.sites[0].precision < 0)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "the Kalman filter accepts sites only if 1 + pi_t S_t > 0 at every step, which is sufficient but not "
    "necessary: a negative site can be outweighed by a later positive one. Valid proposals are then "
    "rejected (extra back-offs). Remove this marker when the validity test is exact."))
def test_validity_check_accepts_every_valid_posterior():
    t = np.array([0.0, 0.01])
    precision = np.array([-2.0, 10.0])                      # a valid posterior: K^{-1} + Pi is PD
    assert _min_posterior_eigenvalue(t, precision) > 0
    block = lds.MarkovGP(KERNEL, t)
    try:
        block.posterior((np.zeros(2), precision))
    except ValueError as error:
        raise AssertionError(f"a valid posterior was rejected: {error}") from None
