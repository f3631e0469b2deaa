"""A ``Custom`` likelihood against its compiled twin: time per iteration (target: at most 10x).

Run by hand:  OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_custom  [--quick]

``likelihoods.Custom(log_prob)`` is the prototyping route: the log density in
autograd.numpy, differentiated by autograd and integrated by vectorised
Gauss-Hermite quadrature.  Each row fits one model twice, with a compiled
likelihood and with a ``Custom`` one written as a user would write it (the
Poisson with ``gammaln(y + 1)``, the default quadrature strip), and reports

* the median time per iteration of each (``FitResult.timings["per_iteration"]``)
  and their ratio;
* the time of the likelihood's expectations alone (``_variational_expectations``
  at the fitted marginals, as an iteration calls it) and their ratio.

Models: a GLM with N = 1e4 and 1e5 points and D = 20 features; a dense GP
(Matern-3/2) with N = 2000; a Markov GP (Matern-3/2) with N = 1e5.  Each with
a Poisson log link (a closed form when compiled, quadrature as ``Custom``) and
a Bernoulli logit link (quadrature both ways).  The two fits take the same
path (the same ELBO to about 1e-12), so the number of iterations is the same.
The fits are timed in turn, round after round (``_common.interleaved_times``),
and the ratio taken round by round.
"""

import argparse

import autograd.numpy as anp
import numpy as np
from autograd.scipy.special import gammaln

from efvi.expfam import Gaussian
from efvi.inference import Model
from efvi.models import Observe, glm, gp, lds, likelihoods

from ._common import interleaved_times, ratio_summary

D = 20
TARGET = 10.0


def poisson_log_prob(y, f):
    """Poisson counts with a log link, in autograd.numpy."""
    return y * f - anp.exp(f) - gammaln(y + 1.0)


def bernoulli_log_prob(y, f):
    """Labels 0 or 1 with a logit link, in autograd.numpy."""
    return -anp.logaddexp(0.0, (1.0 - 2.0 * y) * f)


def pairs():
    """name -> (compiled likelihood, its Custom twin, sampler of y given the latent)."""
    return {
        "Poisson log": (
            likelihoods.Poisson(),
            likelihoods.Custom(poisson_log_prob, "counts", initial_latent=lambda y: np.log(y + 0.5),
                               log_concave=True, exponential_link=True),
            lambda rng, f: rng.poisson(np.exp(f)).astype(float),
        ),
        "Bernoulli logit": (
            likelihoods.Bernoulli(),
            likelihoods.Custom(bernoulli_log_prob, "labels", initial_latent=lambda y: np.log(3.0) * (2.0 * y - 1.0),
                               log_concave=True, strip_half_width=np.pi),
            lambda rng, f: (rng.uniform(size=f.shape) < 1.0 / (1.0 + np.exp(-f))).astype(float),
        ),
    }


def glm_model(n, rng, likelihood, sample):
    """A GLM with ``n`` points and D features (an intercept and standard normals), weights N(0, I).

    Returns the model of a likelihood, the data and the latent marginals ``(X m, diag(X S X^T))`` of a fit.
    """
    X = np.column_stack([np.ones(n), rng.normal(size=(n, D - 1))])
    y = sample(rng, X @ (rng.normal(size=D) / np.sqrt(D)))
    prior = Gaussian.from_mean_cov(np.zeros(D), np.eye(D))

    def marginals(fit):
        q = fit.posterior["w"]
        return X @ q.mean, np.einsum("ij,jk,ik->i", X, q.cov, X)

    return lambda lik: Model({"w": prior}, [glm.GLM(lik, X, y, on="w")]), y, marginals


def gp_model(n, rng, likelihood, sample, markov):
    """A (Markov) GP with a Matern-3/2 kernel on ``n`` sorted times."""
    t = np.sort(rng.uniform(0.0, n / 10.0, n))
    y = sample(rng, 0.5 + np.sin(t / 3.0))
    kernel = gp.kernels.Matern32(lengthscale=3.0, variance=1.0)
    prior = lds.MarkovGP(kernel, t) if markov else gp.GP(kernel, t[:, None])
    return (lambda lik: Model({"f": prior}, [Observe(lik, y, on="f")]), y,
            lambda fit: (fit.posterior["f"].mean, fit.posterior["f"].var))


def compare(name, make, rounds):
    """One row: the two fits in turn, and the likelihood's expectations at the fitted marginals."""
    rng = np.random.default_rng(0)
    compiled, custom, sample = pairs()[name.split(": ")[1]]
    build, y, marginals = make(rng, compiled, sample)
    models = {"compiled": build(compiled), "custom": build(custom)}
    fits = {key: [] for key in models}

    def fitter(key):
        return lambda: fits[key].append(models[key].fit())

    times = interleaved_times({key: fitter(key) for key in models}, rounds)
    per_iteration = {key: np.array([np.median(f.timings["per_iteration"]) for f in fits[key][-rounds:]])
                     for key in models}
    last = {key: fits[key][-1] for key in models}
    gap = abs(last["custom"].elbo - last["compiled"].elbo) / abs(last["compiled"].elbo)
    mean, var = (np.ascontiguousarray(x) for x in marginals(last["compiled"]))
    expectations = interleaved_times(
        {key: (lambda lik=lik: lik._variational_expectations(mean, var, y)) for key, lik in
         (("compiled", compiled), ("custom", custom))}, rounds)
    return (name, f"{last['compiled'].n_iter} / {last['custom'].n_iter}", f"{gap:.0e}",
            f"{np.median(per_iteration['compiled']) * 1e3:.2f}", f"{np.median(per_iteration['custom']) * 1e3:.2f}",
            ratio_summary(per_iteration, "custom", "compiled"),
            f"{np.median(expectations['compiled']) * 1e3:.2f}", f"{np.median(expectations['custom']) * 1e3:.2f}",
            ratio_summary(expectations, "custom", "compiled"), times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller problems, fewer rounds")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 7
    sizes = {"glm": (10_000,) if args.quick else (10_000, 100_000), "gp": 500 if args.quick else 2000,
             "markov": 20_000 if args.quick else 100_000}
    problems = {}
    for likelihood in pairs():
        for n in sizes["glm"]:
            problems[f"GLM N={n:.0e} D={D}: {likelihood}"] = (
                lambda rng, lik, sample, n=n: glm_model(n, rng, lik, sample))
        problems[f"GP N={sizes['gp']}: {likelihood}"] = (
            lambda rng, lik, sample: gp_model(sizes["gp"], rng, lik, sample, markov=False))
        problems[f"Markov GP N={sizes['markov']:.0e}: {likelihood}"] = (
            lambda rng, lik, sample: gp_model(sizes["markov"], rng, lik, sample, markov=True))
    header = ("model: likelihood", "iterations", "ELBO gap", "compiled ms/it", "custom ms/it",
              "ratio per iteration", "compiled E ms", "custom E ms", "ratio of expectations")
    rows = []
    for name, make in problems.items():
        rows.append(compare(name, make, rounds)[:-1])
        print("  ".join(rows[-1]), flush=True)
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    print()
    for r in [header] + rows:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(r, widths)).rstrip())
    print(f"(medians over {rounds} rounds; a ratio is the median of the round-by-round ratios (range); "
          f"target per iteration: at most {TARGET:g}x)")


if __name__ == "__main__":
    main()
