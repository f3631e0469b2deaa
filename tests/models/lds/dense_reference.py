"""Slow, obviously correct dense reference for the Kalman smoother tests.

The whole trajectory ``x = (x_0, ..., x_{T-1})`` is one Gaussian vector: the
recursion ``x_0 = m_0 + e_0``, ``x_t = A_t x_{t-1} + q_t`` reads ``B x = b + e``
with ``B`` block-bidiagonal (identity blocks, ``-A_t`` below), ``b = (m_0, 0,
..., 0)`` and ``e ~ N(0, blockdiag(P_0, Q_1, ..., Q_{T-1}))``.  The sites add
``H^T diag(pi) H`` to the precision and ``H^T gamma`` to the information
vector; ``log Z`` is the Gaussian integral, all by dense linear algebra.
"""

import numpy as np
from scipy.linalg import block_diag


def random_problem(rng, T, d, missing=0.2, negative=0.1):
    """Random time-varying prior and sites; fractions ``missing`` and ``negative`` of the steps
    have no site and a negative site precision.

    Negative precisions are small relative to the prior variance of ``a_t``
    (``pi_t = -0.3 / Var_prior(a_t)``); the posterior precision is checked to
    be positive definite so the problem is valid.
    """
    A = 0.9 * rng.normal(size=(T, d, d)) / np.sqrt(d)
    B = rng.normal(size=(T, d, d))
    Q = 0.3 * B @ np.swapaxes(B, -1, -2) + 0.2 * np.eye(d)
    C = rng.normal(size=(d, d))
    P0 = C @ C.T + 0.5 * np.eye(d)
    m0 = rng.normal(size=d)
    H = rng.normal(size=(T, d))
    pi = rng.gamma(2.0, 1.0, size=T)
    gamma = rng.normal(size=T) * pi + rng.normal(size=T)
    prior_var = np.einsum("ti,tij,tj->t", H, prior_state_covs(A, Q, P0), H)
    order = rng.permutation(T)
    neg, drop = order[:round(negative * T)], order[round(negative * T):round((negative + missing) * T)]
    pi[neg] = -0.3 / prior_var[neg]
    pi[drop] = 0.0
    gamma[drop] = 0.0
    problem = dict(gamma=gamma, pi=pi, H=H, A=A, Q=Q, m0=m0, P0=P0)
    assert np.linalg.eigvalsh(dense_posterior(**problem)["precision"]).min() > 0
    return problem


def prior_state_covs(A, Q, P0):
    """Prior marginal covariances ``Cov(x_t)``, shape (T, d, d)."""
    covs = [P0]
    for t in range(1, A.shape[0]):
        covs.append(A[t] @ covs[-1] @ A[t].T + Q[t])
    return np.array(covs)


def dense_prior(A, Q, m0, P0):
    """Mean (T d,) and covariance (T d, T d) of the whole trajectory."""
    T, d = A.shape[0], m0.shape[0]
    B = np.eye(T * d)
    for t in range(1, T):
        B[t * d:(t + 1) * d, (t - 1) * d:t * d] = -A[t]
    b = np.zeros(T * d)
    b[:d] = m0
    E = block_diag(P0, *Q[1:])
    B_inv = np.linalg.inv(B)
    return B_inv @ b, B_inv @ E @ B_inv.T


def dense_posterior(gamma, pi, H, A, Q, m0, P0):
    """Posterior moments, lag-one cross-covariances and ``log Z`` by dense linear algebra."""
    T, d = A.shape[0], m0.shape[0]
    mean0, cov0 = dense_prior(A, Q, m0, P0)
    H_big = np.zeros((T, T * d))
    for t in range(T):
        H_big[t, t * d:(t + 1) * d] = H[t]
    prior_precision = np.linalg.inv(cov0)
    precision = prior_precision + H_big.T @ (pi[:, None] * H_big)
    info = prior_precision @ mean0 + H_big.T @ gamma
    cov = np.linalg.inv(precision)
    mean = cov @ info
    log_z = (-0.5 * np.linalg.slogdet(cov0)[1] - 0.5 * np.linalg.slogdet(precision)[1]
             + 0.5 * info @ mean - 0.5 * mean0 @ prior_precision @ mean0)
    blocks = cov.reshape(T, d, T, d)
    cross = np.zeros((T, d, d))
    for t in range(1, T):
        cross[t] = blocks[t, :, t - 1, :]
    return dict(
        means=mean.reshape(T, d), covs=np.array([blocks[t, :, t, :] for t in range(T)]), cross_covs=cross,
        marginal_mean=H_big @ mean, marginal_var=np.einsum("ti,ij,tj->t", H_big, cov, H_big),
        log_normaliser=log_z, precision=precision, prior_mean=mean0, prior_cov=cov0,
    )
