"""The fit result: posteriors, sites, ELBO trace; saved to and loaded from ``.npz`` without pickle."""

import json

import numpy as np

from .. import expfam
from ..expfam import ExponentialFamily

_FORMAT = "efvi-fit-1"


class FitResult:
    """What :meth:`efvi.inference.Model.fit` returns.

    Attributes
    ----------
    posterior : dict
        Block name -> posterior (an expfam object, or a structured posterior
        with ``mean`` and ``var`` marginals for GP and state-space blocks).
    sites : list
        One site view per factor, in the model's factor order; each holds the
        factor's sites with the data index first (``fit.sites[0].precision``
        for Gaussian sites).
    elbo_trace : ndarray, shape (n,)
        ELBO at the start and after every iteration (stochastic fits: the
        minibatch / Monte Carlo estimate).
    rho_trace : ndarray, shape (n,)
        Smallest step size used in each iteration (0 for the initial entry).
    n_iter : int
        Iterations run, including those of a resumed fit.
    converged : bool
        Whether the relative ELBO change fell below ``tol``.
    n_backoffs : int
        Proposals rejected because they left the valid parameter set.
    timings : dict
        ``total`` seconds and ``per_iteration`` seconds of this call to ``fit``.
    """

    def __init__(self, posterior, sites, elbo_trace, rho_trace, n_iter, converged, n_backoffs,
                 timings, state):
        self.posterior = posterior
        self.sites = sites
        self.elbo_trace = np.asarray(elbo_trace, dtype=float)
        self.rho_trace = np.asarray(rho_trace, dtype=float)
        self.n_iter = int(n_iter)
        self.converged = bool(converged)
        self.n_backoffs = int(n_backoffs)
        self.timings = timings
        self._state = state

    @property
    def elbo(self):
        """The last ELBO of the trace."""
        return float(self.elbo_trace[-1])

    def summary(self):
        """A few lines describing the fit: ELBO, iterations, convergence and each posterior."""
        lines = [
            f"ELBO {self.elbo:.6f} after {self.n_iter} iterations "
            f"({'converged' if self.converged else 'NOT converged'}, "
            f"{self.timings.get('total', float('nan')):.3g} s, {self.n_backoffs} back-offs)"
        ]
        for name, q in self.posterior.items():
            mean = np.asarray(getattr(q, "mean", np.nan))
            shown = np.array2string(mean.ravel()[:6], precision=4)
            more = " ..." if mean.size > 6 else ""
            lines.append(f"  {name}: {type(q).__name__}{tuple(getattr(q, 'batch_shape', ()))} "
                         f"mean {shown}{more}")
        return "\n".join(lines)

    def __repr__(self):
        return f"FitResult(elbo={self.elbo:.6g}, n_iter={self.n_iter}, converged={self.converged})"

    # ------------------------------------------------------------------ persistence
    def save(self, path):
        """Write the result to ``path`` (``.npz``; arrays plus JSON metadata, no pickle)."""
        arrays = {"elbo_trace": self.elbo_trace, "rho_trace": self.rho_trace}
        state = self._state
        for k, sites in enumerate(state["sites"]):
            for b, parts in sites.items():
                for j, a in enumerate(parts):
                    arrays[f"sites/{k}/{b}/{j}"] = a
        for k, messages in enumerate(state["messages"]):
            for b, parts in messages.items():
                for j, a in enumerate(parts):
                    arrays[f"messages/{k}/{b}/{j}"] = a
        for k, order in enumerate(state["orders"]):
            if order is not None:
                arrays[f"orders/{k}"] = order
        for b, block_state in state["block_states"].items():
            for key, a in block_state.items():
                arrays[f"block_state/{b}/{key}"] = np.asarray(a)
        for key, a in state.get("accelerator", {}).items():
            arrays[f"accelerator/{key}"] = a
        kinds = {}
        for name, q in self.posterior.items():
            if isinstance(q, ExponentialFamily):
                kinds[name] = ["expfam", type(q).name, len(q.natural)]
                for j, a in enumerate(q.natural):
                    arrays[f"posterior/{name}/{j}"] = a
            else:
                kinds[name] = ["marginals", type(q).__name__, 2]
                arrays[f"posterior/{name}/0"] = np.asarray(q.mean)
                arrays[f"posterior/{name}/1"] = np.asarray(q.var)
        meta = {
            "format": _FORMAT,
            "n_iter": self.n_iter,
            "converged": self.converged,
            "n_backoffs": self.n_backoffs,
            "timings": {"total": self.timings.get("total"),
                        "per_iteration": list(self.timings.get("per_iteration", []))},
            "posterior_kinds": kinds,
            "site_layout": {str(k): {b: len(p) for b, p in s.items()} for k, s in enumerate(state["sites"])},
            "rule_state": state["rule_state"],
            "rng_state": state["rng_state"],
            "positions": state["positions"],
            "iteration": state["iteration"],
            "factor_names": state["factor_names"],
            "coarse": state.get("coarse", False),
            "flags": state.get("flags", {}),
            "site_views": [[getattr(v, "kind", "raw"), getattr(v, "block", None)] for v in self.sites],
        }
        arrays["__meta__"] = np.array(json.dumps(meta))
        with open(path, "wb") as fh:
            np.savez_compressed(fh, **arrays)

    @classmethod
    def load(cls, path):
        """Read a result written by :meth:`save`.

        Posteriors of exponential-family blocks come back as family objects;
        structured posteriors come back as :class:`Marginals` (mean and var).
        To continue a fit, pass the loaded result to ``model.fit(init=...)``.
        """
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        meta = json.loads(str(arrays.pop("__meta__")))
        if meta.get("format") != _FORMAT:
            raise ValueError(f"path {path!r} is not an efvi fit file (format {meta.get('format')!r})")
        posterior = {}
        for name, (kind, cls_name, n_parts) in meta["posterior_kinds"].items():
            parts = tuple(arrays[f"posterior/{name}/{j}"] for j in range(n_parts))
            if kind == "expfam":
                posterior[name] = expfam.get(cls_name).from_natural(parts)
            else:
                posterior[name] = Marginals(parts[0], parts[1])
        sites, messages = [], []
        for k, layout in sorted(meta["site_layout"].items(), key=lambda kv: int(kv[0])):
            sites.append({b: tuple(arrays[f"sites/{k}/{b}/{j}"] for j in range(n)) for b, n in layout.items()})
            messages.append({
                b: tuple(arrays[f"messages/{k}/{b}/{j}"] for j in range(_count(arrays, f"messages/{k}/{b}/")))
                for b in layout
            })
        orders = [arrays.get(f"orders/{k}") for k in range(len(sites))]
        block_states = {}
        for key, a in arrays.items():
            if key.startswith("block_state/"):
                _, b, name = key.split("/", 2)
                block_states.setdefault(b, {})[name] = a
        accelerator = {key.split("/", 1)[1]: a for key, a in arrays.items() if key.startswith("accelerator/")}
        state = {
            "sites": sites, "messages": messages, "orders": orders, "block_states": block_states,
            "accelerator": accelerator,
            "positions": meta["positions"], "rule_state": meta["rule_state"],
            "rng_state": meta["rng_state"], "iteration": meta["iteration"], "coarse": meta.get("coarse", False),
            "flags": meta.get("flags", {}),
            "factor_names": meta["factor_names"],
        }
        from .factor import GaussianSiteView, SiteView

        views = [GaussianSiteView(s, block) if kind == "gaussian" else SiteView(s)
                 for s, (kind, block) in zip(sites, meta["site_views"])]
        return cls(
            posterior, views, arrays["elbo_trace"], arrays["rho_trace"],
            meta["n_iter"], meta["converged"], meta["n_backoffs"], meta["timings"], state,
        )


class Marginals:
    """Marginal means and variances of a structured Gaussian posterior, as loaded from a file.

    Attributes
    ----------
    mean, var : ndarray, shape (N,)
    """

    def __init__(self, mean, var):
        self.mean = np.asarray(mean)
        self.var = np.asarray(var)

    @property
    def batch_shape(self):
        return self.mean.shape

    def __repr__(self):
        return f"Marginals(n={self.mean.shape[0]})"


def _count(arrays, prefix):
    return sum(1 for key in arrays if key.startswith(prefix))
