"""The bivariate toy of Tang and Ranganath (2019), section 3 and Fig. 1: gradient, q-natural gradient and VPNG.

n points from a bivariate Gaussian with unknown mean and covariance
[[1, 1 - eps], [1 - eps, 1]], a N(0, I) prior on the mean and a mean-field q
with fixed width sigma.  The ELBO's curvature -(I + n Sigma^-1) is terribly
conditioned for small eps; the q-Fisher I / sigma^2 cannot fix it (the
q-natural gradient is the gradient rescaled), the variational predictive
Fisher F_r = (Sigma + sigma^2 I)^-1 (Theorem 1) can.

The published Fig. 1 shows, on ELBO contours, one arrow for the gradient
(identical to the q-natural gradient, as its caption says) running almost
across the valley, and one for VPNG ("Fisher") pointing at the optimum.
Ours shows the same three directions at a starting point (left), their
fixed-step trajectories and those of VPNG and plain RMSprop with equal step
sizes (middle), and the distance to the optimum against iterations (right).
The ELBO gradient is the corrected one (see efvi.inference.vpng.toy).
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from _common import parse_args, save_figure
from efvi.inference import vpng

NAMES = {"gradient": "gradient", "q_natural": "q-natural gradient", "vpng": "VPNG (F_r)"}
COLOURS = {"gradient": "C0", "q_natural": "C1", "vpng": "C3"}


def fixed_step_path(toy, start, preconditioner, n_steps):
    """Iterates of mean + step * P grad, with step 1 / (largest eigenvalue of P times the negative Hessian)."""
    curvature = np.linalg.eigvals(preconditioner @ -toy.elbo_hessian()).real.max()
    path = [start]
    for _ in range(n_steps):
        path.append(path[-1] + preconditioner @ toy.elbo_gradient(path[-1]) / curvature)
    return np.array(path)


def rmsprop_path(toy, start, fisher, n_steps, learning_rate):
    optimizer = vpng.VPNG(learning_rate, decay=0.9, damping=0.0)
    path = [start]
    for _ in range(n_steps):
        path.append(optimizer.step(path[-1], toy.elbo_gradient(path[-1]), fisher))
    return np.array(path)


def main(argv=None):
    args = parse_args(__doc__, argv)
    n_steps = 30 if args.quick else 100
    toy = vpng.BivariateToy.simulate(n=20, epsilon=0.01, sigma=0.05, true_mean=(1.0, 0.5), seed=0)
    optimum = toy.optimum()
    start = optimum - np.array([2.0, 1.9])
    exact = np.linalg.inv(toy.likelihood_cov + toy.sigma ** 2 * np.eye(2))
    print(f"Theorem 1 (eps {toy.epsilon}, sigma {toy.sigma}): max |F_r - (Sigma + sigma^2 I)^-1| = "
          f"{np.abs(toy.predictive_fisher() - exact).max():.1e} (F_r entries up to {np.abs(exact).max():.1f})")

    directions = toy.directions(start)
    print(f"cosine with the direction to the optimum at {np.round(start, 3)}:")
    for name in NAMES:
        print(f"  {NAMES[name]:20s} {vpng.cosine(directions[name], directions['to_optimum']):+.6f}")
    print("cosines against eps (sigma 0.05, n 20, same offset from the optimum): gradient / q-natural / VPNG")
    for epsilon in (0.5, 0.1, 0.01, 0.001):
        other = vpng.BivariateToy.simulate(n=20, epsilon=epsilon, sigma=0.05, true_mean=(1.0, 0.5), seed=0)
        d = other.directions(other.optimum() - np.array([2.0, 1.9]))
        print(f"  eps {epsilon:<6} " + " / ".join(f"{vpng.cosine(d[k], d['to_optimum']):+.6f}" for k in NAMES))

    preconditioners = {"gradient": np.eye(2), "q_natural": np.linalg.inv(toy.q_fisher()),
                       "vpng": np.linalg.inv(toy.predictive_fisher())}
    paths = {name: fixed_step_path(toy, start, p, n_steps) for name, p in preconditioners.items()}
    rms = {"RMSprop": rmsprop_path(toy, start, None, n_steps, 0.05),
           "VPNG + RMSprop": rmsprop_path(toy, start, toy.predictive_fisher(), n_steps, 0.05)}
    print(f"distance to the optimum after {n_steps} steps (start {np.linalg.norm(start - optimum):.3f}):")
    for name, path in list(paths.items()) + list(rms.items()):
        label = NAMES.get(name, name) + (" (fixed step)" if name in NAMES else " (lr 0.05)")
        print(f"  {label:34s} {np.linalg.norm(path[-1] - optimum):.2e}")

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    centre, grid = (optimum + start) / 2, np.linspace(-2.2, 2.2, 161)
    X1, X2 = np.meshgrid(centre[0] + grid, centre[1] + grid)
    elbo = np.array([[toy.elbo(np.array([a, b])) for a, b in zip(r1, r2)] for r1, r2 in zip(X1, X2)])
    levels = toy.elbo(optimum) - np.geomspace(0.5, elbo.max() - elbo.min(), 15)[::-1]
    for ax in axes[:2]:
        ax.contour(X1, X2, elbo, levels=levels, colors="0.75", linewidths=0.7, linestyles="solid")
        ax.plot(*optimum, "k*", markersize=12, label="optimum")
        ax.plot(*start, "ko", markersize=5)
        ax.set(xlabel="lambda_1", ylabel="lambda_2", aspect="equal")
    scale = 0.6 * np.linalg.norm(directions["to_optimum"])
    for name in NAMES:
        d = directions[name] / np.linalg.norm(directions[name]) * scale
        axes[0].annotate("", start + d, start, arrowprops=dict(arrowstyle="->", color=COLOURS[name], lw=2,
                                                                   linestyle="--" if name == "q_natural" else "-"))
        axes[0].plot([], [], color=COLOURS[name], label=f"{NAMES[name]} "
                     f"(cos {vpng.cosine(directions[name], directions['to_optimum']):+.2f})")
    axes[0].set_title(f"directions at the start (eps {toy.epsilon}, sigma {toy.sigma})")
    axes[0].legend(fontsize=8, loc="upper left")
    for name, path in paths.items():
        axes[1].plot(*path.T, marker="o", color=COLOURS[name], markersize=2, label=f"{NAMES[name]}, fixed step",
                     linestyle="--" if name == "q_natural" else "-")
        axes[2].semilogy(np.maximum(np.linalg.norm(path - optimum, axis=1), 1e-15), color=COLOURS[name],
                         linestyle="--" if name == "q_natural" else "-", label=f"{NAMES[name]}, fixed step")
    for (name, path), colour in zip(rms.items(), ("C2", "C4")):
        axes[1].plot(*path.T, "-", color=colour, lw=1, label=f"{name} (lr 0.05)")
        axes[2].semilogy(np.maximum(np.linalg.norm(path - optimum, axis=1), 1e-15), color=colour, lw=1, label=f"{name} (lr 0.05)")
    axes[1].set_title("trajectories")
    axes[1].legend(fontsize=7, loc="upper left")
    axes[2].set(xlabel="iteration", ylabel="|lambda - lambda*|", title="distance to the optimum")
    axes[2].legend(fontsize=8)
    save_figure(fig, args.output, "vpng_bivariate_toy.png")
    return directions, paths


if __name__ == "__main__":
    main()
