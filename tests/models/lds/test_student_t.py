"""Student-t observations: negative site precisions never give an invalid state-space posterior.

Validity is checked independently of the Kalman filter: the posterior
precision ``K^{-1} + Pi`` is positive definite exactly when
``I + L^T Pi L`` is (``K = L L^T``), whose eigenvalues numpy computes.
"""

import numpy as np
import pytest

from efvi.inference import InvalidPosterior, Model, StepBackoffWarning
from efvi.models import Observe, gp, lds, likelihoods

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
    # both blocks accept exactly the valid proposals, so the adaptive rule takes the same steps; at
    # tol=1e-14 the fits end at the rounding of their ELBOs (~1e-12 nats), which differs between
    # the two solvers, so they may stop a few full steps apart
    common = min(len(markov.rho_trace), len(dense.rho_trace))
    np.testing.assert_array_equal(markov.rho_trace[:common], dense.rho_trace[:common])
    assert np.all(np.concatenate([markov.rho_trace[common:], dense.rho_trace[common:]]) == 1.0)
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


def _dense(t, natural_mean, precision):
    """The dense GP's posterior marginals and log Z, or None where it rejects the sites."""
    try:
        q = gp.GP(KERNEL, t).posterior((natural_mean, precision))
    except InvalidPosterior:
        return None
    return q.mean, q.var, q.log_normaliser


def test_a_negative_site_outweighed_by_a_later_positive_one_is_accepted():
    """``1 + pi_0 S_0 = -1 < 0`` at the first step, but the strong site 0.01 later makes ``K^{-1} + Pi``
    positive definite; the Markov GP agrees with the dense GP, and with itself on mirrored times."""
    t = np.array([0.0, 0.01])
    natural_mean, precision = np.array([0.0, 5.0]), np.array([-2.0, 10.0])
    assert 1.0 + precision[0] * KERNEL(t)[0, 0] < 0
    assert _min_posterior_eigenvalue(t, precision) > 0
    q = lds.MarkovGP(KERNEL, t).posterior((natural_mean, precision))
    mean, var, log_z = _dense(t, natural_mean, precision)
    np.testing.assert_allclose(q.mean, mean, rtol=RTOL)
    np.testing.assert_allclose(q.var, var, rtol=RTOL)
    assert q.log_normaliser == pytest.approx(log_z, rel=RTOL)
    mirrored = lds.MarkovGP(KERNEL, 0.01 - t[::-1]).posterior((natural_mean[::-1], precision[::-1]))
    np.testing.assert_allclose(mirrored.mean[::-1], q.mean, rtol=RTOL)


def test_markov_gp_accepts_exactly_the_valid_posteriors():
    """Random times and sites, many of them strongly negative: the Markov GP accepts exactly when
    ``I + L^T Pi L`` is positive definite, and then matches the dense GP's marginals and log Z."""
    rng = np.random.default_rng(5)
    counts = {"invalid": 0, "valid, a negative site": 0, "valid, no negative site": 0}
    for _ in range(200):
        T = rng.integers(1, 7)
        t = np.cumsum(rng.uniform(0.02, 1.0, T))
        negative = rng.uniform(size=T) < 0.4
        precision = np.where(negative, -rng.uniform(0.5, 3.0, T), rng.exponential(5.0, T))
        natural_mean = rng.normal(size=T)
        eigenvalue = _min_posterior_eigenvalue(t, precision)
        assert abs(eigenvalue) > 1e-6      # within rounding of the boundary neither route can decide
        dense = _dense(t, natural_mean, precision)
        assert (dense is not None) == (eigenvalue > 0)
        if dense is None:
            counts["invalid"] += 1
            with pytest.raises(InvalidPosterior):
                lds.MarkovGP(KERNEL, t).posterior((natural_mean, precision))
            continue
        counts["valid, a negative site" if np.any(negative) else "valid, no negative site"] += 1
        q = lds.MarkovGP(KERNEL, t).posterior((natural_mean, precision))
        np.testing.assert_allclose(q.mean, dense[0], rtol=RTOL, atol=RTOL * np.max(np.abs(dense[0])))
        np.testing.assert_allclose(q.var, dense[1], rtol=RTOL)
        assert q.log_normaliser == pytest.approx(dense[2], rel=RTOL, abs=RTOL)
    assert min(counts.values()) >= 10, counts


def test_fit_with_an_outlier_before_a_dense_cluster_reaches_the_dense_elbo():
    """An outlying first observation followed by a tight cluster: its site is negative with
    ``1 + pi S < 0`` in the filter, which must not stop the Markov GP short of the dense GP's optimum."""
    rng = np.random.default_rng(0)
    t = np.r_[0.0, 0.02 + 0.01 * np.arange(29)]
    y = np.r_[1.2, 0.02 * rng.normal(size=29)]
    kernel, likelihood = gp.kernels.Matern32(lengthscale=1.0, variance=4.0), likelihoods.StudentT(df=3.0, scale=0.3)
    fits = {name: Model({"f": block}, [Observe(likelihood, y, on="f")]).fit(tol=1e-14)
            for name, block in (("markov", lds.MarkovGP(kernel, t)), ("dense", gp.GP(kernel, t)))}
    markov, dense = fits["markov"], fits["dense"]
    assert markov.converged and dense.converged
    assert markov.sites[0].precision[0] * kernel(t[:1])[0, 0] < -1.0       # the first factor is negative
    assert markov.n_backoffs == dense.n_backoffs
    assert markov.elbo == pytest.approx(dense.elbo, rel=RTOL)
    np.testing.assert_allclose(markov.posterior["f"].mean, dense.posterior["f"].mean, rtol=RTOL, atol=RTOL)
