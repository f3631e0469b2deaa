"""efvi.plot: each plot draws the numbers it claims, labels its axes and saves; efvi imports without matplotlib."""

import subprocess
import sys

import numpy as np
import pytest

import efvi
from efvi.inference import GaussianSiteView, Model
from efvi.models import Observe, glm, gp, lds, likelihoods

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

from efvi import plot  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def logistic_fit():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(60), rng.normal(size=60)])
    y = (rng.random(60) < 1 / (1 + np.exp(-2 * X[:, 1]))).astype(float)
    fit = Model({"w": efvi.Gaussian.from_mean_cov(np.zeros(2), np.eye(2))},
                [glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")]).fit()
    return X, y, fit


@pytest.fixture(scope="module")
def markov_gp_fit():
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0, 10, size=40))
    y = np.sin(t) + 0.3 * rng.normal(size=40)
    prior = lds.MarkovGP(gp.kernels.Matern32(lengthscale=1.5, variance=1.0), t)
    fit = Model({"f": prior}, [Observe(likelihoods.Gaussian(variance=0.09), y, on="f")]).fit()
    return t, y, fit


def _saved(ax, tmp_path, name):
    path = tmp_path / name
    ax.figure.savefig(path)
    return path.stat().st_size > 0


def test_the_names_efvi_plot_reach_the_same_module():
    import efvi.plot as imported

    assert efvi.plot is plot is imported
    assert "plot" in efvi.__all__


def test_efvi_imports_without_matplotlib_and_plots_name_the_extra():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'matplotlib':\n"
        "            raise ImportError('matplotlib is blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import efvi\n"
        "from efvi import plot\n"
        "assert not any(m.startswith('matplotlib') for m in sys.modules)\n"
        "try:\n"
        "    plot.elbo([0.0, 1.0])\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "pip install efvi[plot]" in done.stdout


def test_elbo_draws_the_gap_to_the_best_value_on_a_log_scale(logistic_fit, tmp_path):
    _, _, fit = logistic_fit
    ax = plot.elbo(fit, label="CVI")
    trace = fit.elbo_trace
    gap = trace.max() - trace
    x, y = ax.lines[0].get_data()
    np.testing.assert_array_equal(x, np.arange(trace.shape[0]))
    assert np.all(np.isnan(y[gap <= 0]))
    np.testing.assert_allclose(y[gap > 0], gap[gap > 0], rtol=0, atol=0)
    assert ax.get_yscale() == "log" and "gap" in ax.get_ylabel() and ax.get_xlabel()
    assert ax.lines[0].get_label() == "CVI"
    assert _saved(ax, tmp_path, "elbo.png")


def test_elbo_against_another_best_on_given_axes(logistic_fit):
    _, _, fit = logistic_fit
    _, ax = plt.subplots()
    best = fit.elbo + 1.0
    assert plot.elbo(fit.elbo_trace, ax=ax, best=best) is ax
    np.testing.assert_allclose(ax.lines[0].get_ydata(), best - fit.elbo_trace)


def test_elbo_reads_an_estimators_lower_bounds():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    model = glm.BayesianLogisticRegression().fit(X, y)
    ax = plot.elbo(model)
    bounds = model.lower_bounds_
    np.testing.assert_allclose(np.nanmax(ax.lines[0].get_ydata()), bounds.max() - bounds.min())


def test_elbo_rejects_what_is_not_a_trace():
    with pytest.raises(ValueError, match="1-D ELBO trace"):
        plot.elbo(np.zeros((2, 2)))


def test_sites_draw_pseudo_observations_and_precisions_against_the_data(logistic_fit, tmp_path):
    X, y, fit = logistic_fit
    ax_obs, ax_precision = plot.sites(fit, x=X[:, 1], y=y)
    view = fit.sites[0]
    data, pseudo = ax_obs.lines
    np.testing.assert_array_equal(data.get_xdata(), X[:, 1])
    np.testing.assert_array_equal(data.get_ydata(), y)
    np.testing.assert_array_equal(pseudo.get_ydata(), view.pseudo_obs)
    np.testing.assert_array_equal(ax_precision.lines[0].get_ydata(), view.precision)
    assert ax_obs.get_ylabel() == "pseudo-observation gamma/pi" and ax_precision.get_ylabel() == "site precision pi"
    assert ax_obs.get_xlabel() == "x"
    assert _saved(ax_obs, tmp_path, "sites.png")


def test_sites_leave_out_empty_sites_and_default_to_the_point_index():
    view = GaussianSiteView({"f": (np.array([1.0, 0.0, 3.0]), np.array([2.0, 0.0, 1.5]))}, "f")
    ax_obs, ax_precision = plot.sites(view)
    np.testing.assert_array_equal(ax_obs.lines[0].get_xdata(), [0, 2])
    np.testing.assert_allclose(ax_obs.lines[0].get_ydata(), [0.5, 2.0])
    np.testing.assert_allclose(ax_precision.lines[0].get_ydata(), [2.0, 1.5])
    assert ax_obs.get_xlabel() == "data point"
    with pytest.raises(ValueError, match="x must have shape"):
        plot.sites(view, x=np.zeros(2))


def test_sites_name_a_factor_without_gaussian_sites():
    rate = efvi.Gamma(1.0, 1.0)
    fit = Model({"rate": rate}, [efvi.inference.PoissonGamma(np.array([1.0, 2.0]), on="rate")]).fit()
    with pytest.raises(ValueError, match="Gaussian sites"):
        plot.sites(fit)


def _band(ax):
    """The vertices (x, y) of the first filled band's polygon: each x appears with its lower and upper edge."""
    return ax.collections[0].get_paths()[0].vertices


def test_bands_are_mean_plus_minus_k_sd_at_the_data(markov_gp_fit, tmp_path):
    t, y, fit = markov_gp_fit
    q = fit.posterior["f"]
    ax = plot.bands(fit, x=t, k=1.5, y=y)
    data, centre = ax.lines
    np.testing.assert_array_equal(data.get_ydata(), y)
    np.testing.assert_array_equal(centre.get_xdata(), t)
    np.testing.assert_allclose(centre.get_ydata(), q.mean)
    edges = _band(ax)
    sd = np.sqrt(q.var)
    for x_value, lower, upper in zip(t[:3], q.mean[:3] - 1.5 * sd[:3], q.mean[:3] + 1.5 * sd[:3]):
        at = edges[np.isclose(edges[:, 0], x_value), 1]
        np.testing.assert_allclose(np.sort(at)[[0, -1]], [lower, upper], rtol=1e-12)
    assert ax.get_xlabel() == "x" and ax.get_ylabel() == "f"
    assert _saved(ax, tmp_path, "bands.png")


def test_bands_at_new_inputs_use_predict_and_a_transform(markov_gp_fit):
    t, _, fit = markov_gp_fit
    q = fit.posterior["f"]
    t_new = np.linspace(-1.0, 12.0, 30)[::-1]
    ax = plot.bands(q, x_new=t_new, transform=np.exp)
    mean, _ = q.predict(t_new)
    order = np.argsort(t_new)
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), t_new[order])
    np.testing.assert_allclose(ax.lines[0].get_ydata(), np.exp(mean[order]))
    assert ax.get_ylabel() == "exp(f)"


def test_bands_of_a_dense_gp_at_two_dimensional_inputs():
    rng = np.random.default_rng(3)
    X = np.sort(rng.uniform(0, 5, size=25))[:, None]
    fit = Model({"f": gp.GP(gp.kernels.Matern32(lengthscale=1.0, variance=1.0), X)},
                [Observe(likelihoods.Gaussian(variance=0.1), np.cos(X[:, 0]), on="f")]).fit()
    X_new = np.linspace(0, 5, 11)[:, None]
    ax = plot.bands(fit, x_new=X_new, block="f")
    np.testing.assert_allclose(ax.lines[0].get_ydata(), fit.posterior["f"].predict(X_new)[0])
    with pytest.raises(ValueError, match="block must name"):
        plot.bands(fit, block="g")


def test_calibration_bins_against_a_hand_computation():
    prob = np.array([0.05, 0.12, 0.18, 0.55, 0.61, 0.95, 1.0, 0.35])
    labels = np.array([0, 0, 1, 1, 0, 1, 1, 0])
    mean_prob, frequency, count = plot.calibration_bins(labels, prob, n_bins=5)
    # bins [0, .2): 0.05, 0.12, 0.18; [.2, .4): 0.35; [.4, .6): 0.55; [.6, .8): 0.61; [.8, 1]: 0.95, 1.0
    np.testing.assert_allclose(mean_prob, [(0.05 + 0.12 + 0.18) / 3, 0.35, 0.55, 0.61, 0.975])
    np.testing.assert_allclose(frequency, [1 / 3, 0.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(count, [3, 1, 1, 1, 2])


def test_calibration_diagram_draws_the_bins_and_the_diagonal(tmp_path):
    rng = np.random.default_rng(4)
    prob = rng.random(500)
    labels = rng.random(500) < prob
    ax = plot.calibration(labels, np.column_stack([1 - prob, prob]), n_bins=8, label="model")
    diagonal, curve = ax.lines
    np.testing.assert_array_equal(diagonal.get_xydata(), [[0, 0], [1, 1]])
    mean_prob, frequency, _ = plot.calibration_bins(labels, prob, n_bins=8)
    np.testing.assert_array_equal(curve.get_xdata(), mean_prob)
    np.testing.assert_array_equal(curve.get_ydata(), frequency)
    assert ax.get_xlabel() == "predicted probability" and ax.get_ylabel() == "observed frequency"
    plot.calibration(labels, prob, ax=ax, label="again")
    assert len(ax.lines) == 3                                   # one diagonal for two classifiers
    assert _saved(ax, tmp_path, "calibration.png")


@pytest.mark.parametrize("labels, prob, match", [
    ([0, 1], [0.2, 1.2], "probabilities in"),
    ([0, 2], [0.2, 0.4], "0/1"),
    ([0, 1, 1], [0.2, 0.4], "y_true must have shape"),
    ([0, 1], np.zeros((2, 3)), "prob must have shape"),
])
def test_calibration_names_invalid_input(labels, prob, match):
    with pytest.raises(ValueError, match=match):
        plot.calibration_bins(labels, prob)
