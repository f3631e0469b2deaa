"""Variational adaptive-Newton (VAN) against Newton's method on a 2-D logistic regression (Khan et al., 2017).

The variational adaptive-Newton method (Khan et al., 2017) writes the natural-gradient step of a full-covariance Gaussian as
a Newton step taken at weight samples:

    V^-1 <- (1 - rho) V^-1 + rho [tau I - sum_i E_q H_i(w)],
    m    <- m + rho V_{t+1} (sum_i E_q g_i(w) - tau m).

With ``rho = 1`` and the expectations taken at the mean this *is* Newton's
method on the MAP objective; with the expectations under q it converges to
the full-covariance variational optimum and returns its covariance ``V`` as
well.  The seed gives equations only (no figure or table to set numbers
beside); this example shows the claim on a synthetic problem with two
features and a bias (an ``nn.MLP([2, 1])``, i.e. logistic regression):

* Newton's method (full batch, unit steps, from 0) and the MAP + Laplace
  posterior of ``efvi.glm.laplace``;
* ``ngvi.VAN`` with the exact Hessian (full batch, antithetic Monte Carlo
  samples, ``rho = lr = 1`` for the first steps and a Robbins-Monro decay
  ``rho_t = t0 / t`` after them, which averages the Monte Carlo noise away);
* efvi's full-covariance CVI optimum (``Model(...).fit()``, exact Gauss-Hermite
  expectations), the target VAN should reach.

The plot shows the distance to the optimum against iterations (Newton to the
MAP, VAN to the CVI optimum) and the VAN, CVI and Laplace posteriors of the two
weights as 2-sigma ellipses over the log posterior's contours.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from scipy.special import expit

import efvi
from _common import parse_args, save_figure
from efvi.inference import ngvi
from efvi.models import nn

N_DATA, PRIOR_PRECISION, WARM_STEPS = 60, 1.0, 5


def make_data(seed=0):
    """60 points with two correlated features; the design matrix for efvi's GLM has a bias column last."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(N_DATA, 2)) @ np.array([[1.0, 0.6], [0.0, 0.8]])
    y = (rng.uniform(size=N_DATA) < expit(features @ np.array([2.0, -1.5]) + 0.5)).astype(float)
    return features, y, np.column_stack([features, np.ones(N_DATA)])


def newton_iterates(design, y, n_iter):
    """Newton's method on the MAP objective from w = 0, unit steps: every iterate, shape (n_iter + 1, D)."""
    weights = np.zeros(design.shape[1])
    iterates = [weights]
    for _ in range(n_iter):
        prob = expit(design @ weights)
        gradient = design.T @ (y - prob) - PRIOR_PRECISION * weights
        hessian = design.T @ (design * (prob * (1 - prob))[:, None]) + PRIOR_PRECISION * np.eye(len(weights))
        weights = weights + np.linalg.solve(hessian, gradient)
        iterates.append(weights)
    return np.array(iterates)


def van_iterates(net, features, y, n_iter, mc_samples, seed=0):
    """Full-batch VAN with the exact Hessian from the prior mean; returns the optimiser and its means."""
    opt = ngvi.VAN(net, N_DATA, prior_precision=PRIOR_PRECISION, lr=1.0, betas=(0.0, 0.0), curvature="hessian",
                   mc_samples=mc_samples, antithetic=True, seed=seed)
    opt.mean = np.zeros(net.n_params)
    means = [opt.mean]
    for step in range(1, n_iter + 1):
        rho = min(1.0, WARM_STEPS / step)
        opt.lr, opt.betas = rho, (0.0, 1.0 - rho)
        opt.step(features, y)
        means.append(opt.mean)
    return opt, np.array(means)


def ellipse(mean, cov, n_std=2.0):
    """Points of the ``n_std`` contour of a 2-D Gaussian."""
    angle = np.linspace(0, 2 * np.pi, 200)
    return mean + n_std * np.column_stack([np.cos(angle), np.sin(angle)]) @ np.linalg.cholesky(cov).T


def main(argv=None):
    args = parse_args(__doc__, argv)
    n_van, mc_samples = (40, 8) if args.quick else (300, 16)
    features, y, design = make_data()
    likelihood = efvi.likelihoods.Bernoulli()
    dim = design.shape[1]
    model = efvi.Model({"w": efvi.Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim) / PRIOR_PRECISION)},
                       [efvi.glm.GLM(likelihood, design, y, on="w")])
    cvi = model.fit(tol=1e-12).posterior["w"]
    laplace, laplace_iter = efvi.glm.laplace(likelihood, design, y, np.zeros(dim), np.eye(dim) / PRIOR_PRECISION)

    newton = newton_iterates(design, y, 8)
    net = nn.MLP([2, 1], likelihood=likelihood)            # flat parameters: w1, w2, then the bias
    van, van_means = van_iterates(net, features, y, n_van, mc_samples)
    newton_gap = np.linalg.norm(newton - laplace.mean, axis=1)
    van_gap = np.linalg.norm(van_means - cvi.mean, axis=1)
    van_cov = van.posterior.cov

    print(f"{N_DATA} points, 2 features + bias, prior precision {PRIOR_PRECISION}; "
          f"the seed gives equations only, no published numbers")
    print(f"MAP (Newton, {len(newton) - 1} unit steps; efvi.glm.laplace took {laplace_iter}): "
          f"{np.round(laplace.mean, 4)}")
    print(f"CVI full-covariance optimum mean:                      {np.round(cvi.mean, 4)}")
    print(f"{f'VAN mean after {n_van} steps ({mc_samples} antithetic samples):':55s}{np.round(van.mean, 4)}")
    print("distance to the optimum by iteration     " + "  ".join(f"{k:>8d}" for k in (1, 2, 3, 5, 8)))
    print("  Newton -> MAP                          " + "  ".join(f"{newton_gap[k]:8.1e}" for k in (1, 2, 3, 5, 8)))
    print("  VAN    -> CVI optimum                  " + "  ".join(f"{van_gap[k]:8.1e}" for k in (1, 2, 3, 5, 8)))
    print(f"  VAN    -> CVI optimum after {n_van} steps: {van_gap[-1]:.1e}  "
          f"(Newton's MAP is {np.linalg.norm(laplace.mean - cvi.mean):.3f} from it)")
    rel = np.abs(np.sqrt(np.diag(van_cov)) / np.sqrt(np.diag(cvi.cov)) - 1).max()
    rel_laplace = np.abs(np.sqrt(np.diag(laplace.cov)) / np.sqrt(np.diag(cvi.cov)) - 1).max()
    print(f"posterior std vs the CVI optimum's: VAN within {100 * rel:.2f}%, Laplace within {100 * rel_laplace:.2f}%")

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    steps = np.arange(len(van_gap))
    axes[0].semilogy(np.arange(len(newton_gap)), np.maximum(newton_gap, 1e-16), "k-o", label="Newton -> MAP")
    axes[0].semilogy(steps, van_gap, "C0-", label=f"VAN (exact Hessian, S={mc_samples}) -> CVI optimum")
    axes[0].axhline(np.linalg.norm(laplace.mean - cvi.mean), color="C3", ls="--", label="|MAP - CVI mean|")
    axes[0].axvline(WARM_STEPS, color="0.7", ls=":", label=f"VAN: rho = 1 up to step {WARM_STEPS}, then {WARM_STEPS}/t")
    axes[0].set_xscale("symlog", linthresh=1.0)
    axes[0].set(xlim=(0, n_van), xlabel="iteration", ylabel="|mean - optimum|", title="distance to the optimum")
    axes[0].legend(fontsize=8)

    ax = axes[1]
    grid = np.linspace(-0.5, 3.2, 120), np.linspace(-2.7, 0.2, 120)
    W1, W2 = np.meshgrid(*grid)
    points = np.column_stack([W1.ravel(), W2.ravel(), np.full(W1.size, laplace.mean[2])])
    logits = points @ design.T
    log_post = (y * logits - np.logaddexp(0, logits)).sum(1) - 0.5 * PRIOR_PRECISION * (points ** 2).sum(1)
    ax.contour(W1, W2, (log_post - log_post.max()).reshape(W1.shape), levels=[-8, -4.5, -2, -0.5], colors="0.75",
               linestyles="solid")
    for label, q, style in (("VAN", van.posterior, "C0-"), ("CVI optimum", cvi, "k--"), ("Laplace", laplace, "C3-.")):
        curve = ellipse(q.mean[:2], q.cov[:2, :2])
        ax.plot(curve[:, 0], curve[:, 1], style, label=f"{label} (2 sd)")
        ax.plot(*q.mean[:2], style[:2] + "x")
    ax.set(xlabel="w1", ylabel="w2", title="posterior of (w1, w2); contours: log posterior at the MAP bias")
    ax.legend(fontsize=8)
    save_figure(fig, args.output, "nn_van_vs_newton.png")
    return {"newton_gap": newton_gap, "van_gap": van_gap, "van": van.posterior, "cvi": cvi, "laplace": laplace}


if __name__ == "__main__":
    main()
