"""Low-memory state-space passes: segments with checkpoints give the one-pass results bit for bit.

A low-memory pass keeps the filter's state only at the start of each
segment and refilters a segment in the backward pass; a low-memory Markov GP
also computes each segment's transition and process covariance when a pass
reaches it.  The arithmetic is the same operations in the same order, so
every output must equal the one-pass output exactly (valid or failing sites,
tuple and array work variables); the Markov GP is also checked against a
dense GP computation of the same sites.  Hyperparameter gradients in
segments, which agree to rounding only, are tested in
``test_low_memory_hyperparameters.py``.
"""

import numpy as np
import pytest

from efvi.inference import Model
from efvi.models import Observe, gp, likelihoods, lds
from efvi.models.lds import prior as lds_prior
from efvi.models.lds.smoother import (
    STATUS_INVALID_SITE, STATUS_OK, STATUS_SINGULAR_PREDICTION, Workspace, _filter_and_smooth, _run_smoother,
    _segment_moments, _validate, check_process_cov,
)

from .dense_reference import random_problem

K = gp.kernels


def _passes(problem, segment_steps, store):
    p = problem
    gamma, pi, H, A, Q, m0, P0 = _validate(p["gamma"], p["pi"], p["H"], p["A"], p["Q"], p["m0"], p["P0"])
    workspace = None if segment_steps is None else Workspace(segment_steps)
    return _run_smoother(gamma, pi, H, (A, Q), m0, P0, store=store, return_status=True, workspace=workspace)


def _assert_same(result, reference):
    assert (result.status, result.failed_step) == (reference.status, reference.failed_step)
    if reference.status != STATUS_OK:
        assert np.isnan(result.log_normaliser) and np.isnan(reference.log_normaliser)
        return
    for name, value in zip(reference._fields, reference):
        np.testing.assert_array_equal(getattr(result, name), value, err_msg=name)


def _strongly_negative(rng, T, d):
    """A random problem with two sites so negative that ``1 + pi_t S_t < 0`` (the filtered covariances turn
    indefinite), each followed by a positive site that sometimes makes the posterior valid again."""
    problem = random_problem(rng, T=T, d=d, missing=0.1, negative=0.0)
    p = problem
    S = lds.kalman_filter(p["gamma"], p["pi"], p["H"], p["A"], p["Q"], p["m0"], p["P0"]).pred_marginal_var
    steps = rng.choice(T - 1, size=2, replace=False)
    problem["pi"][steps] = -rng.uniform(1.02, 2.0, 2) / S[steps]
    problem["pi"][steps + 1] = rng.uniform(0.0, 200.0, 2) / S[steps + 1]
    return problem


@pytest.mark.parametrize("d", [1, 2, 3, 5])               # tuple and array work variables
@pytest.mark.parametrize("segment_steps", [1, 2, 7, 23, 24, 25, 60])
def test_segmented_pass_equals_one_pass_bit_for_bit(d, segment_steps):
    rng = np.random.default_rng([d, segment_steps])
    problems = [random_problem(rng, T=24, d=d)] + [_strongly_negative(rng, 24, d) for _ in range(24)]
    outcomes = set()
    for problem in problems:
        for store in (False, True):
            reference = _passes(problem, None, store)
            _assert_same(_passes(problem, segment_steps, store), reference)
        p = problem
        factors = 1.0 + p["pi"] * lds.kalman_filter(p["gamma"], p["pi"], p["H"], p["A"], p["Q"], p["m0"], p["P0"],
                                                    return_status=True).pred_marginal_var
        outcomes.add((reference.status, bool(np.any(factors < 0))))
    # valid with positive factors, valid through indefinite filtered covariances, invalid
    assert {(STATUS_OK, False), (STATUS_OK, True), (STATUS_INVALID_SITE, True)} <= outcomes


@pytest.mark.parametrize("d", [1, 2, 5])
@pytest.mark.parametrize("segment_steps", [1, 2, 7, 23, 24, 60])
def test_segment_moments_are_the_one_pass_moments_bit_for_bit(d, segment_steps):
    """The per-segment filter and smoother moments that Fisher's identity reads, from the last segment back,
    each segment's rows running one step into the next segment."""
    rng = np.random.default_rng([d, segment_steps, 1])
    problems = [random_problem(rng, T=24, d=d)]
    for _ in range(200):
        if len(problems) == 4:
            break
        problem = _strongly_negative(rng, 24, d)            # kept if the posterior is valid
        problems += [problem] if _passes(problem, None, False).status == STATUS_OK else []
    assert len(problems) == 4
    for p in problems:
        arrays = _validate(p["gamma"], p["pi"], p["H"], p["A"], p["Q"], p["m0"], p["P0"])
        filtered, smoothed = _filter_and_smooth(*arrays)
        log_z, segments = _segment_moments(*arrays[:3], arrays[3:5], *arrays[5:], segment_steps)
        assert log_z == filtered.log_normaliser
        covered = []
        for start, A, moments, means, covs in segments:
            rows = slice(start, start + means.shape[0])
            covered.append(rows)
            np.testing.assert_array_equal(A, p["A"][rows])
            for name in ("pred_means", "pred_covs", "covs"):
                np.testing.assert_array_equal(getattr(moments, name), getattr(filtered, name)[rows], err_msg=name)
            np.testing.assert_array_equal(means, smoothed.means[rows])
            np.testing.assert_array_equal(covs, smoothed.covs[rows])
        starts = [rows.start for rows in covered]
        assert starts == sorted(starts, reverse=True) and starts[-1] == 0 and covered[0].stop == 24
        assert all(later.start == earlier.stop - 1 for later, earlier in zip(covered, covered[1:]))


@pytest.mark.parametrize("segment_steps", [1, 3, 4, 10])
def test_segmented_pass_reports_the_first_singular_prediction(segment_steps):
    """A = 0, Q = 0 from step 5 on: the state is then deterministic and the predictions singular."""
    rng = np.random.default_rng(1)
    problem = random_problem(rng, T=12, d=2)
    problem["A"][5:] = 0.0
    problem["Q"][5:] = 0.0
    reference = _passes(problem, None, False)
    assert (reference.status, reference.failed_step) == (STATUS_SINGULAR_PREDICTION, 5)
    _assert_same(_passes(problem, segment_steps, False), reference)


def test_segmented_pass_with_constant_matrices_and_a_reused_workspace():
    rng = np.random.default_rng(2)
    problem = random_problem(rng, T=50, d=2)
    constant = dict(problem, A=problem["A"][1], Q=problem["Q"][1], H=problem["H"][1], pi=np.abs(problem["pi"]))
    workspace = Workspace(8)
    p = constant
    arrays = _validate(p["gamma"], p["pi"], p["H"], p["A"], p["Q"], p["m0"], p["P0"])
    gamma, pi, H, A, Q, m0, P0 = arrays
    first = _run_smoother(gamma, pi, H, (A, Q), m0, P0, False, False, workspace)
    kept = first.marginal_mean.copy()
    _run_smoother(-gamma, pi, H, (A, Q), m0, P0, False, False, workspace)
    np.testing.assert_array_equal(first.marginal_mean, kept)
    again = _run_smoother(gamma, pi, H, (A, Q), m0, P0, False, False, workspace)
    _assert_same(again, _passes(constant, None, False))


def _times(rng, T):
    t = np.cumsum(rng.uniform(0.05, 0.4, T))
    t[[10, 41]] = t[[9, 40]]                                   # tied times: Q_t = 0
    return t


def _dense_marginals(kernel, t, gamma, pi):
    """Marginals and log Z of ``N(f; 0, K) prod_i exp(gamma_i f_i - pi_i f_i^2 / 2)`` by dense algebra
    (``pi >= 0``; ``B = I + S K S``, ``S = diag(sqrt(pi))``, so that tied times, a singular ``K``, are fine)."""
    Kmat = kernel(t)
    S = np.sqrt(pi)
    B = np.eye(t.shape[0]) + S[:, None] * Kmat * S[None, :]
    cov = Kmat - (Kmat * S[None, :]) @ np.linalg.solve(B, S[:, None] * Kmat)
    _, logdet = np.linalg.slogdet(B)
    return cov @ gamma, np.diag(cov), -0.5 * logdet + 0.5 * gamma @ cov @ gamma


@pytest.fixture
def small_segments(monkeypatch):
    monkeypatch.setattr(lds_prior, "SEGMENT_STEPS", 16)


KERNELS = {
    "matern32": K.Matern32(lengthscale=1.5, variance=0.8),
    "sum": K.Matern52(lengthscale=4.0, variance=1.0) + K.Matern12(lengthscale=0.3, variance=0.1),
}


@pytest.mark.parametrize("kernel_name", list(KERNELS))
def test_low_memory_markov_gp_equals_stored_matrices_and_the_dense_gp(kernel_name, small_segments):
    rng = np.random.default_rng(list(KERNELS).index(kernel_name))
    kernel = KERNELS[kernel_name]
    t = _times(rng, 101)
    lean, stored = lds.MarkovGP(kernel, t, low_memory=True), lds.MarkovGP(kernel, t, low_memory=False)
    assert lean.low_memory and lean.A is None and lean.Q is None and not stored.low_memory
    gamma, pi = rng.normal(size=101), rng.uniform(0.2, 3.0, 101)
    pi[rng.uniform(size=101) < 0.2] = 0.0
    q_lean, q_stored = lean.posterior((gamma, pi)), stored.posterior((gamma, pi))
    np.testing.assert_array_equal(q_lean.mean, q_stored.mean)
    np.testing.assert_array_equal(q_lean.var, q_stored.var)
    assert q_lean.log_normaliser == q_stored.log_normaliser
    np.testing.assert_array_equal(q_lean.state_covs, q_stored.state_covs)
    mean, var, log_z = _dense_marginals(kernel, t, gamma, pi)
    np.testing.assert_allclose(q_lean.mean, mean, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(q_lean.var, var, rtol=1e-7, atol=1e-7)
    assert q_lean.log_normaliser == pytest.approx(log_z, rel=1e-7)
    t_new = np.array([-1.0, t[30] + 0.01, t[-1] + 2.0])
    for full_cov in (False, True):
        for a, b in zip(q_lean.predict(t_new, full_cov=full_cov), q_stored.predict(t_new, full_cov=full_cov)):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(lean.dt, np.concatenate([[0.0], np.diff(t)]))


@pytest.mark.parametrize("likelihood", [likelihoods.Poisson(), likelihoods.StudentT(df=3.0, scale=0.3)],
                         ids=["poisson", "student_t"])
def test_low_memory_fit_equals_the_stored_fit_bit_for_bit(likelihood, small_segments):
    """Whole fits (adaptive steps, back-offs for Student-t's negative sites) take the same path.

    A low-memory block does without Anderson acceleration (its history would hold ``2 x depth`` copies of
    the sites), so the stored fit is run without it too."""
    rng = np.random.default_rng(4)
    t = _times(rng, 150)
    f = np.sin(t)
    y = (rng.poisson(np.exp(f)).astype(float) if isinstance(likelihood, likelihoods.Poisson)
         else f + 0.3 * rng.standard_t(2.0, size=150))
    y[60:70] = np.nan
    kernel = K.Matern32(lengthscale=1.0, variance=1.0)
    models = [Model({"f": lds.MarkovGP(kernel, t, low_memory=low)}, [Observe(likelihood, y, on="f")])
              for low in (True, False)]
    fits = [models[0].fit(), models[1].fit(acceleration=False)]
    assert fits[0].state.controller.accelerator is None
    assert models[1].fit().state.controller.accelerator is not None
    np.testing.assert_array_equal(fits[0].elbo_trace, fits[1].elbo_trace)
    np.testing.assert_array_equal(fits[0].rho_trace, fits[1].rho_trace)
    np.testing.assert_array_equal(fits[0].sites[0].natural_mean, fits[1].sites[0].natural_mean)
    np.testing.assert_array_equal(fits[0].sites[0].precision, fits[1].sites[0].precision)
    np.testing.assert_array_equal(fits[0].posterior["f"].var, fits[1].posterior["f"].var)


def test_low_memory_lds_equals_the_stored_one(small_segments):
    rng = np.random.default_rng(6)
    problem = random_problem(rng, T=70, d=3)
    blocks = [lds.LDS(problem["A"], problem["Q"], problem["H"], problem["m0"], problem["P0"], low_memory=low)
              for low in (True, False)]
    assert blocks[0].low_memory and not blocks[1].low_memory
    q = [b.posterior((problem["gamma"], problem["pi"])) for b in blocks]
    np.testing.assert_array_equal(q[0].mean, q[1].mean)
    np.testing.assert_array_equal(q[0].var, q[1].var)
    assert q[0].log_normaliser == q[1].log_normaliser


def test_an_exploding_low_memory_prior_is_named_like_a_stored_one(small_segments):
    """The largest transition eigenvalue of the message comes from every segment's matrices."""
    messages = []
    for low in (True, False):
        with pytest.raises(ValueError, match="overflows float64") as error:
            lds.LDS(np.array([[3.0]]), np.eye(1), np.ones(1), np.zeros(1), np.eye(1), n_steps=800, low_memory=low)
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_low_memory_default_follows_the_number_of_steps(monkeypatch):
    monkeypatch.setattr(lds_prior, "LOW_MEMORY_STEPS", 50)
    kernel = K.Matern12(lengthscale=1.0)
    assert not lds.MarkovGP(kernel, np.arange(50.0)).low_memory
    assert lds.MarkovGP(kernel, np.arange(51.0)).low_memory
    assert not lds.MarkovGP(kernel, np.arange(51.0), low_memory=False).low_memory


@pytest.mark.parametrize("value", ["yes", 1, 0.0])
def test_low_memory_must_be_a_bool_or_none(value):
    with pytest.raises(ValueError, match=rf"low_memory must be True, False or None; got {value!r}"):
        lds.MarkovGP(K.Matern12(lengthscale=1.0), np.arange(5.0), low_memory=value)
    with pytest.raises(ValueError, match="low_memory must be True, False or None"):
        lds.LDS(np.eye(1), np.eye(1), np.ones(1), np.zeros(1), np.eye(1), n_steps=5, low_memory=value)


def test_process_cov_check_names_the_step_of_a_segment():
    Q = np.stack([np.eye(2), np.eye(2), -np.eye(2)])
    with pytest.raises(ValueError, match=r"process_cov must be symmetric positive semi-definite.*index 1002"):
        check_process_cov(Q, np.eye(2), offset=1000)
    check_process_cov(Q[:2], np.eye(2))


def test_times_on_disk_stay_there(tmp_path, small_segments):
    """A float64 ``numpy.memmap`` of times is kept as it is (read segment by segment), not copied to memory."""
    rng = np.random.default_rng(7)
    t = _times(rng, 90)
    np.save(tmp_path / "t.npy", t)
    on_disk = np.load(tmp_path / "t.npy", mmap_mode="r")
    kernel = K.Matern32(lengthscale=1.0, variance=1.0)
    block = lds.MarkovGP(kernel, on_disk, low_memory=True)
    assert np.shares_memory(block.t, on_disk)
    sites = (rng.normal(size=90), rng.uniform(0.1, 2.0, 90))
    q, reference = block.posterior(sites), lds.MarkovGP(kernel, t, low_memory=False).posterior(sites)
    np.testing.assert_array_equal(q.mean, reference.mean)
    np.testing.assert_array_equal(q.var, reference.var)
