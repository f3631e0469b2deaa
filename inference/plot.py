r"""Plots of fit results: ELBO traces, sites, posterior bands and calibration (``efvi.plot``).

matplotlib is an optional dependency (``pip install efvi[plot]``): it is
imported inside each function, so ``import efvi`` never needs it.  Every
function draws on the ``ax`` it is given (a new figure otherwise), labels the
axes and returns what it drew on, so that the caller can add to it and save it.

The functions read fit results by what they hold, not by their class: a
:class:`efvi.inference.FitResult`, an estimator with ``fit_result_`` or
``posterior_``, or a posterior with ``mean`` and ``var`` (and ``predict`` for
values at new inputs) all work.

The calibration diagram bins the predicted probabilities :math:`p_i` of the
positive class into ``n_bins`` equal-width bins :math:`B_b` of ``[0, 1]`` and
plots, for every non-empty bin, the mean prediction against the observed
frequency,

.. math:: \bar p_b = \frac{1}{|B_b|} \sum_{i \in B_b} p_i, \qquad
          \bar y_b = \frac{1}{|B_b|} \sum_{i \in B_b} y_i,

which lie on the diagonal for a calibrated classifier.
"""

import numpy as np

__all__ = ["elbo", "sites", "bands", "calibration", "calibration_bins"]

_MISSING = "efvi.plot needs matplotlib, an optional dependency: pip install efvi[plot]"


def _pyplot():
    """matplotlib.pyplot, or an ImportError that names the extra to install."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(_MISSING) from error
    return plt


def _axes(ax, **figure):
    """``ax`` itself, or the axes of a new figure."""
    if ax is not None:
        return ax
    return _pyplot().subplots(**figure)[1]


def _trace(source):
    """The ELBO trace of a fit result, an estimator or an array, as a 1-D float array."""
    for name in ("elbo_trace", "lower_bounds_"):
        if hasattr(source, name):
            source = getattr(source, name)
            break
    trace = np.asarray(source, dtype=float)
    if trace.ndim != 1 or trace.shape[0] == 0:
        raise ValueError(f"fit must be a FitResult, a fitted estimator or a 1-D ELBO trace; got shape {trace.shape}")
    return trace


def elbo(fit, ax=None, best=None, label=None, **line):
    """The ELBO trace as its gap to the best value, on a log scale.

    A converging fit approaches its optimum geometrically, so the gap
    ``best - elbo_trace`` falls along a line on a log scale; entries at (or
    above) ``best`` cannot be drawn there and are left out (NaN).

    Parameters
    ----------
    fit : FitResult, fitted estimator or array_like, shape (n,)
        Anything with ``elbo_trace`` (a fit) or ``lower_bounds_`` (an
        estimator), or the trace itself.
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: a new figure).
    best : float, optional
        The value to measure the gap from (default: the trace's largest
        value); pass the best ELBO of another fit to compare several traces
        against one optimum.
    label : str, optional
        Legend label of the line.
    **line
        Passed to ``Axes.plot`` (e.g. ``color``, ``marker``).

    Returns
    -------
    matplotlib.axes.Axes
    """
    trace = _trace(fit)
    best = float(np.max(trace)) if best is None else float(best)
    gap = best - trace
    ax = _axes(ax)
    line.setdefault("marker", "o")
    line.setdefault("markersize", 3)
    ax.plot(np.arange(trace.shape[0]), np.where(gap > 0, gap, np.nan), label=label, **line)
    ax.set_yscale("log")
    ax.set_xlabel("iteration (ELBO trace entry)")
    ax.set_ylabel("ELBO gap to the best value (nats)")
    return ax


def _site_view(fit, factor):
    """A Gaussian site view from a site view itself, a fit result or an estimator."""
    if hasattr(fit, "fit_result_"):
        fit = fit.fit_result_
    view = fit.sites[factor] if hasattr(fit, "sites") else fit
    if not (hasattr(view, "pseudo_obs") and hasattr(view, "precision")):
        raise ValueError("fit must be a FitResult (or an estimator) whose factor has Gaussian sites, or a "
                         f"GaussianSiteView; factor {factor} has {type(view).__name__}")
    return view


def sites(fit, x=None, y=None, factor=0, ax=None):
    """Pseudo-observations and site precisions of a Gaussian-site factor against the data.

    Every point of a GLM or of an ``Observe`` factor on a GP or state-space
    block keeps a 1-D Gaussian site: the posterior is the one of a Gaussian
    regression on the pseudo-observations ``gamma_i / pi_i`` with noise
    variances ``1 / pi_i``.  The left panel shows the pseudo-observations
    (with the data, when given), the right one the precisions.  Points with an
    empty site (precision 0, e.g. missing data) are left out.

    Parameters
    ----------
    fit : FitResult, fitted estimator or GaussianSiteView
    x : array_like, shape (N,), optional
        Where to place point ``i`` on the horizontal axis (default: its index).
    y : array_like, shape (N,), optional
        The observed data, drawn beside the pseudo-observations.
    factor : int
        Which factor's sites (the model's factor order).
    ax : sequence of two matplotlib.axes.Axes, optional
        Where to draw (default: a new figure with two panels).

    Returns
    -------
    tuple of two matplotlib.axes.Axes
        The pseudo-observation panel and the precision panel.
    """
    view = _site_view(fit, factor)
    pseudo_obs, precision = np.asarray(view.pseudo_obs), np.asarray(view.precision)
    n_points = precision.shape[0]
    x_label = "data point" if x is None else "x"
    x = np.arange(n_points) if x is None else np.asarray(x, dtype=float)
    if x.shape != (n_points,):
        raise ValueError(f"x must have shape ({n_points},), one value per site; got {x.shape}")
    if ax is None:
        ax = _pyplot().subplots(1, 2, figsize=(10, 3.5))[1]
    ax_obs, ax_precision = ax
    if y is not None:
        y = np.asarray(y, dtype=float)
        if y.shape != (n_points,):
            raise ValueError(f"y must have shape ({n_points},), one value per site; got {y.shape}")
        ax_obs.plot(x, y, "x", color="0.55", markersize=4, label="data")
    kept = precision != 0
    ax_obs.plot(x[kept], pseudo_obs[kept], ".", color="C0", label="pseudo-observation")
    ax_obs.set_xlabel(x_label)
    ax_obs.set_ylabel("pseudo-observation gamma/pi")
    ax_obs.legend(fontsize=8)
    ax_precision.plot(x[kept], precision[kept], ".", color="C1")
    ax_precision.set_xlabel(x_label)
    ax_precision.set_ylabel("site precision pi")
    return ax_obs, ax_precision


def _posterior(fit, block):
    """The structured posterior of ``block`` in a fit result or an estimator, or ``fit`` itself."""
    if hasattr(fit, "fit_result_"):
        fit = fit.fit_result_
    if hasattr(fit, "posterior") and isinstance(fit.posterior, dict):
        if block is None:
            names = [name for name, q in fit.posterior.items() if hasattr(q, "var")]
            if len(names) != 1:
                raise ValueError(f"block must name the posterior to draw; the fit has {list(fit.posterior)}")
            block = names[0]
        if block not in fit.posterior:
            raise ValueError(f"block must name a block of the fit ({list(fit.posterior)}); got {block!r}")
        return fit.posterior[block]
    return fit


def bands(fit, x=None, x_new=None, block=None, k=2.0, y=None, transform=None, ax=None, label="f", color="C0"):
    """Posterior mean and a band of ``k`` standard deviations of a latent function (GP, Markov GP).

    Parameters
    ----------
    fit : FitResult, fitted estimator or posterior
        A fit (its block ``block``), an estimator with ``fit_result_``, or a
        posterior with ``mean`` and ``var`` (and ``predict`` for ``x_new``).
    x : array_like, shape (N,), optional
        The block's inputs or times (default: the point index).
    x_new : array_like, shape (M,) or (M, 1), optional
        Draw the posterior at these inputs instead, by ``posterior.predict``
        (interpolation and forecasts for a Markov GP).
    block : str, optional
        The block to draw (default: the fit's only block with marginals).
    k : float
        Half-width of the band in posterior standard deviations (1.645 for a
        90% band of a Gaussian).
    y : array_like, shape (N,), optional
        Data drawn at ``x``.
    transform : callable, optional
        A monotone map (e.g. ``np.exp`` for a log rate) applied to the mean
        and the band's edges: the band stays a ``k``-sd band of ``f`` mapped
        through it, and the centre line is the map of the mean (the median
        of ``transform(f)``).
    ax : matplotlib.axes.Axes, optional
    label : str
        Name of the latent in the legend and on the vertical axis.
    color : str
        Colour of the band and the mean (several fits on one ``ax``).

    Returns
    -------
    matplotlib.axes.Axes
    """
    posterior = _posterior(fit, block)
    if x_new is not None:
        if not hasattr(posterior, "predict"):
            raise ValueError(f"x_new needs a posterior with predict(); {type(posterior).__name__} has none")
        where = np.asarray(x_new, dtype=float)
        mean, var = posterior.predict(x_new)
    else:
        mean, var = np.asarray(posterior.mean, dtype=float), np.asarray(posterior.var, dtype=float)
        where = np.arange(mean.shape[0]) if x is None else np.asarray(x, dtype=float)
    where = where[:, 0] if where.ndim == 2 and where.shape[1] == 1 else where
    if where.shape != np.shape(mean):
        raise ValueError(f"the inputs must be one value per posterior point, shape {np.shape(mean)}; "
                         f"got {where.shape}")
    k = float(k)
    if not k >= 0:
        raise ValueError(f"k must be a non-negative number of standard deviations; got {k!r}")
    order = np.argsort(where, kind="stable")
    sd = np.sqrt(np.maximum(var, 0.0))
    lower, centre, upper = mean - k * sd, mean, mean + k * sd
    name = label
    if transform is not None:
        lower, centre, upper = transform(lower), transform(centre), transform(upper)
        name = f"{getattr(transform, '__name__', 'g')}({label})"
    ax = _axes(ax)
    if y is not None:
        data_x = np.arange(np.shape(y)[0]) if x is None else np.asarray(x, dtype=float)
        ax.plot(data_x, np.asarray(y, dtype=float), ".", color="0.55", label="data")
    ax.fill_between(where[order], lower[order], upper[order], color=color, alpha=0.3,
                    label=f"{name}: mean \u00b1 {k:.3g} sd")
    ax.plot(where[order], centre[order], color=color, label=f"posterior mean of {label}" if transform is None
            else f"{name} at the mean")
    ax.set_xlabel("x")
    ax.set_ylabel(name)
    return ax


def _probabilities(y_true, prob):
    """Validated labels (0/1) and probabilities of the positive class, each shape (N,)."""
    prob = np.asarray(prob, dtype=float)
    if prob.ndim == 2 and prob.shape[1] == 2:
        prob = prob[:, 1]
    if prob.ndim != 1:
        raise ValueError(f"prob must have shape (N,) or (N, 2) (predict_proba); got {prob.shape}")
    if not np.all((prob >= 0) & (prob <= 1)):
        raise ValueError("prob must hold probabilities in [0, 1]")
    labels = np.asarray(y_true)
    if labels.shape != prob.shape:
        raise ValueError(f"y_true must have shape {prob.shape}, one label per probability; got {labels.shape}")
    if not np.all(np.isin(labels, (0, 1))):
        raise ValueError(f"y_true must hold 0/1 (or False/True) labels; got values {np.unique(labels)[:5]}")
    return labels.astype(float), prob


def calibration_bins(y_true, prob, n_bins=10):
    """Mean prediction, observed frequency and count of each non-empty equal-width bin of ``[0, 1]``.

    Parameters
    ----------
    y_true : array_like, shape (N,)
        Labels 0/1 (or False/True).
    prob : array_like, shape (N,) or (N, 2)
        Predicted probabilities of label 1 (or ``predict_proba``'s output).
    n_bins : int

    Returns
    -------
    mean_prob, frequency : ndarray, shape (B,)
        Per non-empty bin (in increasing order): the mean predicted
        probability and the fraction of labels 1.
    count : ndarray of int, shape (B,)
    """
    labels, prob = _probabilities(y_true, prob)
    if int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer; got {n_bins!r}")
    n_bins = int(n_bins)
    index = np.minimum((prob * n_bins).astype(int), n_bins - 1)      # bin [b/n, (b+1)/n); 1 joins the last
    count = np.bincount(index, minlength=n_bins)
    kept = count > 0
    mean_prob = np.bincount(index, weights=prob, minlength=n_bins)[kept] / count[kept]
    frequency = np.bincount(index, weights=labels, minlength=n_bins)[kept] / count[kept]
    return mean_prob, frequency, count[kept]


def calibration(y_true, prob, n_bins=10, ax=None, label=None, **line):
    """Reliability diagram of a binary classifier: observed frequency against predicted probability.

    Parameters
    ----------
    y_true : array_like, shape (N,)
        Labels 0/1 (or False/True).
    prob : array_like, shape (N,) or (N, 2)
        Predicted probabilities of label 1, or ``predict_proba(X)``.
    n_bins : int
        Number of equal-width bins of ``[0, 1]``; empty bins are left out.
    ax : matplotlib.axes.Axes, optional
    label : str, optional
        Legend label (e.g. the classifier's name).
    **line
        Passed to ``Axes.plot``.

    Returns
    -------
    matplotlib.axes.Axes
        The diagonal is drawn first and the binned curve second
        (``ax.lines[-1]`` holds :func:`calibration_bins`' mean predictions and
        frequencies).
    """
    mean_prob, frequency, _ = calibration_bins(y_true, prob, n_bins)
    ax = _axes(ax)
    if not any(existing.get_label() == "perfect calibration" for existing in ax.lines):
        ax.plot([0, 1], [0, 1], linestyle=":", color="0.5", label="perfect calibration")
    line.setdefault("marker", "o")
    ax.plot(mean_prob, frequency, label=label, **line)
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.set_xlabel("predicted probability")
    ax.set_ylabel("observed frequency")
    return ax
