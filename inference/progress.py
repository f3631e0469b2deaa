"""Progress bars of a fit (tqdm): sized by the budget while it runs, closed at what it ran.

How many iterations a fit needs is unknown when it starts, so its bar counts
towards the budget (``max_iter``).  When the fit ends, :func:`close_progress_bar`
sets the bar's total to the steps it counted, says after its label how the fit
ended ("converged", "stopped at max_iter=500, not converged", ...), and leaves
it on screen: ``efvi fit, converged: 100%|##########| 62/62``.
"""


def progress_bar(progress, total, desc):
    """A tqdm bar towards ``total`` steps labelled ``desc``, or None when ``progress`` is false.

    Parameters
    ----------
    progress : bool
        Whether to show a bar.
    total : int
        The budget: the most steps the run may take.
    desc : str
        The bar's label, e.g. ``"efvi fit"``.

    Returns
    -------
    tqdm.tqdm or None
    """
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=True)


def close_progress_bar(bar, outcome):
    """End ``bar`` at the steps it counted, with ``outcome`` after its label, and leave it on screen.

    Parameters
    ----------
    bar : tqdm.tqdm or None
        A bar of :func:`progress_bar` (None: nothing to do).
    outcome : str
        How the run ended, e.g. ``"converged"``.
    """
    if bar is None:
        return
    bar.total = bar.n
    bar.set_description_str(f"{bar.desc}, {outcome}", refresh=False)
    bar.close()
