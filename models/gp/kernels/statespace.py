"""State-space forms of kernels of time, in closed form.

A stationary kernel of a scalar input is sometimes the covariance of
:math:`f(t) = H x(t)` for a linear SDE :math:`dx = F x\\,dt + L\\,d\\beta`,
:math:`E[d\\beta\\,d\\beta^T] = Q_c\\,dt`, with stationary covariance
:math:`P_\\infty` (:math:`F P_\\infty + P_\\infty F^T + L Q_c L^T = 0`).  Over a
gap :math:`\\Delta`, :math:`A = e^{F\\Delta}` and
:math:`Q = P_\\infty - A P_\\infty A^T`.  Everything here is written in
autograd.numpy on the positive hyperparameters, so that autograd
differentiates ``A``, ``Q`` and ``P_inf``; no matrix exponential is computed
numerically.

**Matern** :math:`\\nu = p + 1/2`, :math:`\\lambda = \\sqrt{2\\nu}/\\ell`,
state :math:`(f, f', \\dots, f^{(p)})`, ``d = p + 1``.  ``F`` is the companion
matrix of :math:`(s + \\lambda)^d`, so :math:`N = F + \\lambda I` is nilpotent
(:math:`N^d = 0`) and the exponential is a finite sum,

.. math::

    e^{F\\Delta} = e^{-\\lambda\\Delta} \\sum_{k=0}^{d-1} \\frac{(N\\Delta)^k}{k!}.

For Matern-3/2 this is
:math:`e^{-\\lambda\\Delta}[[1+\\lambda\\Delta, \\Delta], [-\\lambda^2\\Delta, 1-\\lambda\\Delta]]`.
:math:`(P_\\infty)_{ij} = \\mathrm{Cov}(f^{(i)}, f^{(j)}) = (-1)^j k^{(i+j)}(0)`
from the Taylor series of the kernel, :math:`\\sigma^2 c_{ij} \\lambda^{i+j}`
with ``c`` = [[1]], diag(1, 1), [[1, 0, -1/3], [0, 1/3, 0], [-1/3, 0, 1]]; the
white-noise spectral density is
:math:`Q_c = \\sigma^2 \\, 2\\sqrt{\\pi}\\,\\lambda^{2\\nu}\\Gamma(\\nu+1/2)/\\Gamma(\\nu)`
= :math:`2\\sigma^2\\lambda`, :math:`4\\sigma^2\\lambda^3`,
:math:`\\tfrac{16}{3}\\sigma^2\\lambda^5`.

**Constant** :math:`k = c`: ``d = 1``, ``F = 0``, ``Q_c = 0``, ``P_inf = c``
(a random offset).

**Periodic** :math:`k(\\tau) = \\sigma^2 \\exp(-2\\sin^2(\\omega_0\\tau/2)/\\ell^2)`,
:math:`\\omega_0 = 2\\pi/p`.  With :math:`z = \\ell^{-2}` and
:math:`e^{z\\cos\\theta} = I_0(z) + 2\\sum_{j\\ge1} I_j(z)\\cos j\\theta`,

.. math::

    k(\\tau) = \\sigma^2 \\sum_{j \\ge 0} q_j \\cos(j\\omega_0\\tau), \\quad
    q_0 = e^{-z} I_0(z), \\quad q_j = 2 e^{-z} I_j(z),

a sum of undamped resonators (Solin and Sarkka, 2014).  Keeping harmonics
``j <= J`` gives a state of dimension ``2J + 1`` with rotation transitions
(``Q = 0``); the truncation error
:math:`|k_J(\\tau) - k(\\tau)| \\le \\sigma^2 \\sum_{j > J} q_j`, attained at
:math:`\\tau = 0`, is what :func:`periodic_truncation_error` returns.

**Sums** stack states block-diagonally.  **Products** take Kronecker products:
:math:`F = F_1 \\otimes I + I \\otimes F_2`, :math:`A = A_1 \\otimes A_2`,
:math:`P_\\infty = P_1 \\otimes P_2`, :math:`H = H_1 \\otimes H_2`, ``L = I``
and :math:`Q_c = L_1 Q_{c1} L_1^T \\otimes P_2 + P_1 \\otimes L_2 Q_{c2} L_2^T`.
Both are exact.
"""

from math import comb, factorial
from typing import NamedTuple

import autograd.numpy as anp
import numpy as np
import scipy.special
from autograd.extend import defvjp, primitive

from . import _kernels


class StateSpace(NamedTuple):
    """Continuous-time state-space form ``dx = F x dt + L dbeta``, ``f = H x``.

    Attributes
    ----------
    F : ndarray, shape (d, d)
        Feedback matrix.
    L : ndarray, shape (d, s)
        Noise effect matrix.
    Qc : ndarray, shape (s, s)
        Spectral density of the white noise ``beta``.
    H : ndarray, shape (d,)
        Observation row, ``f(t) = H x(t)``.
    Pinf : ndarray, shape (d, d)
        Stationary covariance, ``F Pinf + Pinf F^T + L Qc L^T = 0``.
    """

    F: np.ndarray
    L: np.ndarray
    Qc: np.ndarray
    H: np.ndarray
    Pinf: np.ndarray

    @property
    def state_dim(self):
        """int: ``d``."""
        return self.F.shape[0]


# --------------------------------------------------------------- combinators
def block_diag(blocks):
    """Block-diagonal stacking of arrays of shape ``(..., r_i, c_i)`` (autograd-safe)."""
    batch = anp.shape(blocks[0])[:-2]
    cols = [anp.shape(b)[-1] for b in blocks]
    rows = []
    for i, b in enumerate(blocks):
        r = anp.shape(b)[-2]
        rows.append(anp.concatenate([b if j == i else np.zeros(batch + (r, c)) for j, c in enumerate(cols)], axis=-1))
    return anp.concatenate(rows, axis=-2)


def kron(a, b):
    """Kronecker product over the last two axes of ``(..., r, c)`` arrays (autograd-safe)."""
    sa, sb = anp.shape(a), anp.shape(b)
    out = a[..., :, None, :, None] * b[..., None, :, None, :]
    return anp.reshape(out, sa[:-2] + (sa[-2] * sb[-2], sa[-1] * sb[-1]))


def _contiguous(x):
    return np.ascontiguousarray(x, dtype=float)


@primitive
def congruence(A, P):
    """``A[t] P A[t]^T`` for a symmetric ``P`` (d, d) and ``A`` (T, d, d); each result exactly symmetric.

    Compiled (``_kernels.congruence_into``), with compiled vector-Jacobian
    products, so that a million time steps cost milliseconds.
    """
    A = _contiguous(A)
    out = np.empty(A.shape)
    _kernels.congruence_into(A, _contiguous(P), out, False, (0,) * A.shape[1])
    return out


defvjp(
    congruence,
    lambda ans, A, P: lambda g: _kernels._congruence_vjp_a(_contiguous(g), _contiguous(A), _contiguous(P)),
    lambda ans, A, P: lambda g: _kernels._congruence_vjp_p(_contiguous(g), _contiguous(A)),
)


def process_noise(A, Pinf):
    """``Q = Pinf - A Pinf A^T``, exactly symmetric; ``A`` of shape (T, d, d), ``Pinf`` (d, d) symmetric."""
    return Pinf - congruence(A, Pinf)


def sum_model(models):
    """State-space model ``(F, L, Qc, Pinf)`` of a sum: block-diagonal stacking."""
    return tuple(block_diag([m[i] for m in models]) for i in range(4))


def product_model(m1, m2):
    """State-space model ``(F, L, Qc, Pinf)`` of a product of two kernels (Kronecker form)."""
    (F1, L1, Qc1, P1), (F2, L2, Qc2, P2) = m1, m2
    d1, d2 = anp.shape(F1)[0], anp.shape(F2)[0]
    F = kron(F1, np.eye(d2)) + kron(np.eye(d1), F2)
    noise1 = anp.dot(anp.dot(L1, Qc1), anp.transpose(L1))
    noise2 = anp.dot(anp.dot(L2, Qc2), anp.transpose(L2))
    return F, np.eye(d1 * d2), kron(noise1, P2) + kron(P1, noise2), kron(P1, P2)


# -------------------------------------------------------------------- Matern
_MATERN_PINF = {
    0: np.array([[1.0]]),
    1: np.array([[1.0, 0.0], [0.0, 1.0]]),
    2: np.array([[1.0, 0.0, -1.0 / 3.0], [0.0, 1.0 / 3.0, 0.0], [-1.0 / 3.0, 0.0, 1.0]]),
}
_MATERN_QC = {0: 2.0, 1: 4.0, 2: 16.0 / 3.0}


def matern_feedback(order, lam):
    """Companion matrix ``F`` (d, d) of ``(s + lam)^d``, ``d = order + 1``."""
    d = order + 1
    last_row = anp.stack([-comb(d, k) * lam ** (d - k) for k in range(d)])
    return np.eye(d, k=1) + anp.outer(np.eye(d)[-1], last_row)


def matern_model(order, lam, variance):
    """``(F, L, Qc, Pinf)`` of the Matern-(order + 1/2) kernel with rate ``lam`` = sqrt(2 nu) / lengthscale."""
    d = order + 1
    powers = np.add.outer(np.arange(d), np.arange(d))
    Pinf = variance * _MATERN_PINF[order] * lam**powers
    Qc = anp.reshape(_MATERN_QC[order] * variance * lam ** (2 * order + 1), (1, 1))
    return matern_feedback(order, lam), np.eye(d)[:, -1:], Qc, Pinf


def matern_series(order, lam):
    """The terms of ``expm(F dt) exp(lam dt) = sum_k dt^k N^k / k!``: ``N^k`` flattened, shape (d, d * d),
    and ``k!``, shape (d,), for ``k = 0..d-1``, ``d = order + 1``."""
    d = order + 1
    nilpotent = matern_feedback(order, lam) + lam * np.eye(d)
    powers = [np.eye(d)]
    for _ in range(1, d):
        powers.append(anp.dot(powers[-1], nilpotent))
    return anp.reshape(anp.stack(powers), (d, d * d)), np.array([float(factorial(k)) for k in range(d)])


def matern_transition(order, lam, dt):
    """``A[t] = expm(F dt[t])``, shape (T, d, d), as ``exp(-lam dt) sum_k (N dt)^k / k!``."""
    d = order + 1
    powers, factorials = matern_series(order, lam)
    weights = np.vander(dt, d, increasing=True) / factorials
    series = anp.einsum("tk,km->tm", weights, powers)
    return anp.reshape(anp.exp(-lam * dt)[:, None] * series, (dt.shape[0], d, d))


def matern_obs_row(order):
    """``H = (1, 0, ..., 0)``, shape (order + 1,)."""
    return np.eye(order + 1)[0]


# ------------------------------------------------------------------ constant
def constant_model(variance):
    """``(F, L, Qc, Pinf)`` of a constant kernel: a random offset of variance ``variance``."""
    return np.zeros((1, 1)), np.ones((1, 1)), np.zeros((1, 1)), anp.reshape(variance, (1, 1))


def constant_transition(dt):
    """``A[t] = 1``, shape (T, 1, 1)."""
    return np.ones((dt.shape[0], 1, 1))


# ------------------------------------------------------------------ periodic
def _periodic_blocks(n_harmonics):
    """Per-harmonic identity and rotation-generator masks, each (J + 1, d, d)."""
    d = 2 * n_harmonics + 1
    eye, gen = np.zeros((n_harmonics + 1, d, d)), np.zeros((n_harmonics + 1, d, d))
    eye[0, 0, 0] = 1.0
    for j in range(1, n_harmonics + 1):
        i = 2 * j - 1
        eye[j, i, i] = eye[j, i + 1, i + 1] = 1.0
        gen[j, i, i + 1], gen[j, i + 1, i] = -1.0, 1.0
    return eye, gen


def periodic_weights(n_harmonics, lengthscale, variance):
    """``sigma^2 q_j`` for ``j = 0..J``, shape (J + 1,)."""
    from autograd.scipy.special import ive  # here, not at the top: autograd.scipy imports scipy.stats (~0.45 s)

    j = np.arange(n_harmonics + 1)
    z = lengthscale**-2.0 * np.ones(n_harmonics + 1)
    return variance * ive(j, z) * np.where(j > 0, 2.0, 1.0)


def periodic_model(n_harmonics, period, lengthscale, variance):
    """``(F, L, Qc, Pinf)`` of the periodic kernel truncated at ``n_harmonics`` harmonics."""
    eye, gen = _periodic_blocks(n_harmonics)
    harmonic = np.arange(n_harmonics + 1)[:, None, None]
    F = (2.0 * np.pi / period) * (harmonic * gen).sum(axis=0)
    Pinf = anp.einsum("j,jab->ab", periodic_weights(n_harmonics, lengthscale, variance), eye)
    d = 2 * n_harmonics + 1
    return F, np.eye(d), np.zeros((d, d)), Pinf


def periodic_transition(n_harmonics, period, dt):
    """``A[t] = expm(F dt[t])``: a rotation by ``j omega_0 dt`` in harmonic ``j``, shape (T, d, d)."""
    eye, gen = _periodic_blocks(n_harmonics)
    d = 2 * n_harmonics + 1
    angle = (2.0 * np.pi / period) * np.outer(dt, np.arange(n_harmonics + 1))
    A = anp.einsum("tj,jm->tm", anp.cos(angle), eye.reshape(n_harmonics + 1, d * d)) + anp.einsum(
        "tj,jm->tm", anp.sin(angle), gen.reshape(n_harmonics + 1, d * d)
    )
    return anp.reshape(A, (dt.shape[0], d, d))


def periodic_obs_row(n_harmonics):
    """``H = (1, 1, 0, 1, 0, ...)``, shape (2J + 1,)."""
    return np.concatenate([[1.0], np.tile([1.0, 0.0], n_harmonics)])


def _periodic_tail_terms(lengthscale, n_min):
    z = float(lengthscale) ** -2.0
    n_max = n_min + int(np.ceil(np.sqrt(120.0 * z))) + 40
    return 2.0 * scipy.special.ive(np.arange(n_max + 1), z)


def periodic_truncation_error(n_harmonics, lengthscale, variance):
    """``sup_tau |k_J(tau) - k(tau)| = sigma^2 sum_{j > J} q_j`` (attained at ``tau = 0``)."""
    terms = _periodic_tail_terms(lengthscale, n_harmonics)
    return float(variance) * float(terms[n_harmonics + 1 :].sum())


def periodic_harmonics(lengthscale, rtol):
    """Smallest ``J`` whose truncation error is at most ``rtol`` times the variance."""
    terms = _periodic_tail_terms(lengthscale, 0)
    tails = np.cumsum(terms[::-1])[::-1]
    return int(np.argmax(np.append(tails[1:], 0.0) <= rtol))
