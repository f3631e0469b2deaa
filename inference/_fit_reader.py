"""Reading a fit file back (see :mod:`efvi.inference._fitfile`), every entry checked against what it means.

Beyond the container's checks (:class:`~efvi.inference._archive.CheckedReader`:
the format, the list of arrays, their dtypes and shapes, finite values), each
entry is checked against its meaning: step sizes in ``(0, 1]``, permutations,
valid natural parameters, messages of the posterior's shapes (symmetric where
they are precisions) that sum to a structured posterior's saved sites, a step
state that suits its rule, an accelerator history of its depth, and so on.
Posteriors and likelihoods are rebuilt through the models' hooks
(:mod:`efvi.inference._loaded`); nothing in a file is executed.
"""

import numpy as np

from .. import expfam
from ..expfam import ExponentialFamily
from ._acceleration import AndersonAccelerator
from ._archive import CheckedReader, FitFileError, exactly, is_int
from ._controller import GAIN_WINDOW
from ._loaded import _LIKELIHOOD_LOADERS, _REBUILDERS, Marginals
from ._state import ControllerState, FitState, HyperState
from .factor import GaussianSiteView, SiteView
from .steps import RULES

FORMAT = "efvi-fit-4"

_META_KEYS = {"format", "arrays", "converged", "message", "timings", "iteration", "n_backoffs", "n_accelerated",
              "coarse", "posterior", "sites", "messages", "site_views", "factor_names", "orders", "positions",
              "rng", "controller", "hyper", "likelihoods"}
_CONTROLLER_KEYS = {"rule_kind", "rule_params", "rule_state", "plain_next", "accelerator", "accelerator_depth",
                    "accelerator_rest", "accelerator_failures"}
SUMMED_RTOL = 1e-9
"""How far a structured block's messages may sum from its posterior's summed sites, relative (rounding only)."""
_ACCELERATOR_PARTS = ("delta_f", "delta_g", "last_f", "last_g", "counters")


class FitReader(CheckedReader):
    """Reads one fit entry by entry, checking each; every failure is a FitFileError naming the entry."""

    def result(self, result_class):
        """The fit, checked entry by entry, as a ``result_class`` (:class:`~efvi.inference.FitResult`)."""
        meta = self.meta(FORMAT, _META_KEYS, "fit", "files of older formats cannot be resumed: refit")
        get = _MetaGetter(self, meta)
        elbo = self.array("elbo_trace")
        rho = self.array("rho_trace")
        self.check(elbo.ndim == 1 and elbo.shape[0] >= 1, "elbo_trace", "must be a 1-D array with at least one entry")
        self.check(rho.shape == elbo.shape, "rho_trace", f"must have the shape of elbo_trace {elbo.shape}")
        self.check(np.all((rho >= 0) & (rho <= 1)), "rho_trace", "must hold step sizes in [0, 1]")
        posterior, shapes, symmetric = self._posterior(get.dict("posterior"))
        sites, n_data = self._sites(get.list("sites"))
        messages = self._messages(get.list("messages"), len(sites), shapes, symmetric)
        self._check_summed_messages(posterior, messages)
        iteration = get.int("iteration")
        hyper, log_scale = self._hyper(get.dict("hyper"), iteration)
        state = FitState(sites, messages, self._rng(meta["rng"]), self._controller(get.dict("controller")), hyper)
        state.orders, state.positions = self._orders(get, n_data)
        state.iteration = iteration
        # an accelerated step replaces one block's update (or one whole sweep's): at most one per block per sweep
        state.n_backoffs = get.int("n_backoffs")
        state.n_accelerated = get.int("n_accelerated", maximum=iteration * len(posterior))
        state.coarse = get.bool("coarse")
        state.elbo_trace, state.rho_trace = elbo.tolist(), rho.tolist()
        views = self._views(get.list("site_views"), sites)
        factor_names = get.list("factor_names")
        self.check(len(factor_names) == len(sites) and all(isinstance(n, str) for n in factor_names),
                   "__meta__.factor_names", f"must be {len(sites)} strings")
        likelihoods, unsaved = self._likelihoods(get.list("likelihoods"), len(sites))
        for key in sorted(set(self.manifest) - self.read):
            self.fail(key, "is not part of a fit of this layout")
        return result_class(posterior, views, state, get.bool("converged"), self._timings(get.dict("timings")),
                            message=get.str("message"), factor_names=factor_names,
                            hyperparameter_names={b: tuple(n) for b, n in meta["hyper"]["names"].items()},
                            hyperparameter_log_scale=log_scale,
                            likelihoods=likelihoods, unsaved_likelihoods=unsaved)

    def _likelihoods(self, entries, n_factors):
        """Each factor's likelihood rebuilt from its spec (None where there is none or it was not saved) and,
        by factor, the class of each likelihood that was not saved."""
        self.check(len(entries) == n_factors, "__meta__.likelihoods", f"must have one entry per factor ({n_factors})")
        likelihoods, unsaved = [None] * n_factors, {}
        for k, entry in enumerate(entries):
            where = f"__meta__.likelihoods[{k}]"
            kind = entry.get("kind") if isinstance(entry, dict) else None
            fields = {"none": {"kind"}, "unsaved": {"kind", "class"}, "spec": {"kind", "spec"}}.get(kind)
            self.check(fields is not None and set(entry) == fields, where,
                       "must be {'kind': 'none'}, {'kind': 'unsaved', 'class': name} or {'kind': 'spec', 'spec': ...}; "
                       f"got {entry!r}"[:300])
            if kind == "unsaved":
                self.check(isinstance(entry["class"], str), where, "must name the class of the unsaved likelihood")
                unsaved[k] = entry["class"]
            elif kind == "spec" and not _LIKELIHOOD_LOADERS:
                unsaved[k] = f"{str(entry['spec'].get('class')) if isinstance(entry['spec'], dict) else '?'} " \
                             "(efvi.models, which rebuilds it, is not imported)"
            elif kind == "spec":
                try:
                    likelihoods[k] = _LIKELIHOOD_LOADERS[0](entry["spec"])
                    if likelihoods[k].spec() != entry["spec"]:
                        raise ValueError(f"it rebuilds {likelihoods[k]!r}, whose spec is {likelihoods[k].spec()!r}")
                except ValueError as err:
                    self.fail(where, f"does not describe a likelihood exactly ({err})"[:600])
        return likelihoods, unsaved

    def _posterior(self, spec):
        """Block name -> posterior, -> the shapes of its messages, and -> which of their parts are symmetric
        matrices (a precision)."""
        posterior, shapes, symmetric = {}, {}, {}
        for i, (name, kind) in enumerate(spec.items()):
            entry = f"__meta__.posterior[{name!r}]"
            keys = {"expfam": {"kind", "family"}, "marginals": {"kind", "family", "points"},
                    "predictive": {"kind", "family", "points", "predictor", "spec"}}.get(
                kind.get("kind") if isinstance(kind, dict) else None, {"kind", "family"})
            self.check(isinstance(kind, dict) and set(kind) == keys and isinstance(kind["family"], str), entry,
                       f"must be an object with {sorted(keys)} (the family a name); got {kind!r}")
            if kind["kind"] == "expfam":
                try:
                    family = expfam.get(kind["family"])
                except (KeyError, ValueError, TypeError) as err:
                    self.fail(entry, f"names no registered family ({err})")
                parts = tuple(self.array(f"posterior/{i}/{j}") for j in range(len(family.param_names)))
                try:
                    posterior[name] = family.from_natural(parts)
                except ValueError as err:
                    self.fail(f"posterior/{i}", f"is not a valid {family.__name__} natural parameter ({err})")
                shapes[name] = [p.shape for p in parts]
                symmetric[name] = [event_ndim == 2 for event_ndim in family.event_ndims]
            elif kind["kind"] in ("marginals", "predictive"):
                mean, var = self.array(f"posterior/{i}/0"), self.array(f"posterior/{i}/1")
                self.check(mean.ndim == 1 and var.shape == mean.shape, f"posterior/{i}",
                           f"must be a mean and a variance of one shape (N,); got {mean.shape} and {var.shape}")
                self.check(np.all(var > 0), f"posterior/{i}/1", "must hold positive variances")
                points = kind["points"]
                self.check(is_int(points) and points >= 1, f"{entry}.points", f"must be a positive integer; got "
                                                                              f"{points!r}")
                posterior[name] = Marginals(mean, var)
                if kind["kind"] == "predictive":
                    posterior[name] = self._predictive(i, name, kind, mean, var)
                # the per-point sites of its factors, or the rebuilt posterior's own message (a sparse GP's)
                message = getattr(posterior[name], "message", None)
                shapes[name] = [np.shape(p) for p in message] if message is not None else [(points,), (points,)]
                symmetric[name] = [np.ndim(p) == 2 for p in message] if message is not None else [False, False]
            else:
                self.fail(entry, f"has kind {kind['kind']!r}; expected 'expfam', 'marginals' or 'predictive'")
        return posterior, shapes, symmetric

    def _predictive(self, i, name, kind, mean, var):
        """A structured posterior rebuilt by its model's hook from the saved prior and sites, checked
        against the saved marginals."""
        entry = f"__meta__.posterior[{name!r}]"
        predictor = kind["predictor"]
        rebuild = _REBUILDERS.get(predictor) if isinstance(predictor, str) else None
        self.check(rebuild is not None, f"{entry}.predictor",
                   f"must name a known predictor ({', '.join(map(repr, sorted(_REBUILDERS)))}); got {predictor!r}")
        prefix = f"posterior/{i}/predict/"
        keys = ", ".join(repr(k) for k in sorted(self.manifest) if k.startswith(prefix))
        try:
            rebuilt = rebuild(kind["spec"], lambda key: self.array(prefix + key), name)
        except (ValueError, TypeError, KeyError, ArithmeticError, np.linalg.LinAlgError) as err:
            if isinstance(err, FitFileError):
                raise
            self.fail(f"{entry}.spec", f"and the arrays {keys} do not describe a {kind['family']} prior and its "
                                       f"sites ({type(err).__name__}: {err})"[:600])
        same = np.shape(rebuilt.mean) == mean.shape and np.allclose(rebuilt.mean, mean, rtol=1e-9, atol=1e-12) \
            and np.allclose(rebuilt.var, var, rtol=1e-9, atol=1e-12)
        self.check(same, f"posterior/{i}", f"(the saved marginals) differs from the posterior rebuilt from "
                                           f"{entry}.spec and the arrays {keys}")
        return rebuilt

    def _layout(self, layout, name):
        entry = f"__meta__.{name}"
        self.check(all(isinstance(f, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                                   and is_int(p[1]) and 1 <= p[1] <= 8 for p in f)
                       for f in layout), entry, "must list, per factor, [block name, number of parts] pairs")
        return layout

    def _sites(self, layout):
        sites, n_data = [], []
        for k, blocks in enumerate(self._layout(layout, "sites")):
            by_block, leading = {}, set()
            for i, (b, n_parts) in enumerate(blocks):
                parts = tuple(self.array(f"sites/{k}/{i}/{j}") for j in range(n_parts))
                leading |= {p.shape[0] if p.ndim else None for p in parts}
                by_block[b] = parts
            self.check(len(leading) == 1 and None not in leading, f"sites/{k}",
                       f"must all have the data index first, of one length; got leading sizes {sorted(leading, key=str)}")
            sites.append(by_block)
            n_data.append(leading.pop())
        return sites, n_data

    def _messages(self, layout, n_factors, shapes, symmetric):
        layout = self._layout(layout, "messages")
        self.check(len(layout) == n_factors, "__meta__.messages", f"must have one entry per factor ({n_factors})")
        messages = []
        for k, blocks in enumerate(layout):
            by_block = {}
            for i, (b, n_parts) in enumerate(blocks):
                self.check(b in shapes, f"__meta__.messages[{k}]", f"names block {b!r}, which has no posterior")
                parts = tuple(self.array(f"messages/{k}/{i}/{j}") for j in range(n_parts))
                got = [p.shape for p in parts]
                self.check(got == shapes[b], f"messages/{k}/{i}",
                           f"must have the shapes of block {b!r}'s messages {shapes[b]}; got {got}")
                for j, part in enumerate(parts):
                    if symmetric[b][j]:
                        self.check_symmetric(part, f"messages/{k}/{i}/{j}")
                by_block[b] = parts
            messages.append(by_block)
        return messages

    def _check_summed_messages(self, posterior, messages):
        """Fail unless a rebuilt structured posterior's summed sites are the sum of its block's messages.

        The engine builds every block's posterior from the sum of the factors'
        messages, and a structured posterior keeps that sum (a GP's or a
        state-space block's ``(natural_mean, precision)``, a sparse GP's
        ``message``), so a file whose messages disagree with it would resume
        from another posterior than the one it holds.
        """
        for i, (name, q) in enumerate(posterior.items()):
            if isinstance(q, (ExponentialFamily, Marginals)):
                continue
            own = getattr(q, "message", None)
            if own is None and hasattr(q, "natural_mean"):
                own = (q.natural_mean, q.precision)
            keys = [f"messages/{k}/{list(m).index(name)}" for k, m in enumerate(messages) if name in m]
            if own is None or not keys:
                continue
            for j, part in enumerate(own):
                total = sum(m[name][j] for m in messages if name in m)
                scale = max(float(np.max(np.abs(part), initial=0.0)), 1e-300)
                self.check(np.shape(total) == np.shape(part) and np.max(np.abs(total - part), initial=0.0)
                           <= SUMMED_RTOL * scale, f"{keys[0]}/{j}",
                           f"and the other messages of block {name!r} ({', '.join(keys)}) must sum to the summed "
                           f"sites of its saved posterior (posterior/{i}/predict), to {SUMMED_RTOL:g} of their "
                           "largest entry")

    def _orders(self, get, n_data):
        flags, positions = get.list("orders"), get.list("positions")
        self.check(len(flags) == len(n_data) and all(isinstance(f, bool) for f in flags), "__meta__.orders",
                   f"must be {len(n_data)} booleans")
        self.check(len(positions) == len(n_data) and all(is_int(p) and 0 <= p <= n for p, n in zip(positions, n_data)),
                   "__meta__.positions", f"must be {len(n_data)} integers, each within its factor's data size")
        orders = []
        for k, (flag, n) in enumerate(zip(flags, n_data)):
            if not flag:
                orders.append(None)
                continue
            order = self.array(f"orders/{k}")
            self.check(order.shape == (n,) and np.array_equal(np.sort(order), np.arange(n)), f"orders/{k}",
                       f"must be a permutation of range({n})")
            orders.append(order)
        return orders, positions

    def _rng(self, value):
        rng = np.random.default_rng()
        self.check(isinstance(value, dict) and value.get("bit_generator") == type(rng.bit_generator).__name__,
                   "__meta__.rng", f"must be a {type(rng.bit_generator).__name__} state; got {value!r}"[:300])
        try:
            rng.bit_generator.state = value
        except Exception as err:
            self.fail("__meta__.rng", f"is not a valid random state ({type(err).__name__}: {err})")
        return rng

    def _controller(self, spec):
        entry = "__meta__.controller"
        exactly(self, spec, _CONTROLLER_KEYS, entry)
        get = _MetaGetter(self, spec, entry)
        kind, params, rule_state = get.str("rule_kind"), get.dict("rule_params"), get.dict("rule_state")
        if kind in RULES:
            try:
                rule = RULES[kind](**params)
                if set(rule.params()) != set(params):
                    raise ValueError(f"its parameters must be {sorted(rule.params())}")
                rule_state = rule.check_state(rule_state)
            except (TypeError, ValueError) as err:
                self.fail(entry, f"holds a step state that does not suit its rule {kind}({params}): {err}")
        gains = self.array("controller/gains", finite=False)
        self.check(gains.ndim == 1 and gains.shape[0] <= GAIN_WINDOW and not np.any(np.isinf(gains)),
                   "controller/gains", f"must hold at most {GAIN_WINDOW} finite gains (NaN for extrapolated steps)")
        mode = get.str("accelerator")
        depth = get.int("accelerator_depth", maximum=64)
        failures = get.int("accelerator_failures", maximum=62)
        rest = get.int("accelerator_rest", maximum=2 ** failures - 1 if failures else 0)
        accelerator = None
        if mode in ("empty", "history"):
            self.check(depth >= 1, f"{entry}.accelerator_depth", "must be at least 1 when acceleration is on")
            accelerator = AndersonAccelerator(depth)
            if mode == "history":
                accelerator.set_state(self._accelerator_history(depth))
        else:
            self.check(mode == "off", f"{entry}.accelerator", f"must be 'off', 'empty' or 'history'; got {mode!r}")
        steps = self.array("controller/steps", finite=False)
        self.check(steps.shape == gains.shape and not np.any((steps < 0) | (steps > 1)), "controller/steps",
                   f"must hold one step size in [0, 1] (NaN: extrapolated) per gain, shape {gains.shape}")
        divergence = self.array("controller/divergence", finite=False)
        self.check(divergence.shape == (1,) and not np.isinf(divergence[0]) and not divergence[0] < 0.0,
                   "controller/divergence", "must hold one divergence >= 0 (NaN: none pending)")
        divergence = None if np.isnan(divergence[0]) else float(divergence[0])
        return ControllerState(rule_state, kind, params, gains.tolist(), get.bool("plain_next"), accelerator,
                               rest, failures, divergence, steps.tolist())

    def _accelerator_history(self, depth):
        history = {key: self.array(f"accelerator/{key}") for key in _ACCELERATOR_PARTS}
        size = history["last_f"].shape[0] if history["last_f"].ndim == 1 else -1
        for key in ("last_f", "last_g"):
            self.check(history[key].shape == (size,), f"accelerator/{key}", f"must have shape ({size},)")
        for key in ("delta_f", "delta_g"):
            self.check(history[key].shape == (depth, size), f"accelerator/{key}", f"must have shape ({depth}, {size})")
        counters = history["counters"]
        self.check(counters.shape == (2,) and 0 <= counters[0] <= depth and 0 <= counters[1] < depth,
                   "accelerator/counters", f"must be two counters in [0, {depth}] and [0, {depth})")
        return history

    def _hyper(self, spec, iteration):
        """The search state, and by block which hyperparameters are logs (``iteration``: the fit's count)."""
        exactly(self, spec, {"names", "log_scale"}, "__meta__.hyper")
        names = spec["names"]
        self.check(isinstance(names, dict) and all(isinstance(n, list) and n and all(isinstance(x, str) for x in n)
                                                   for n in names.values()),
                   "__meta__.hyper.names", "must map each learning block to its parameter names")
        log_scale = spec["log_scale"]
        self.check(isinstance(log_scale, dict) and set(log_scale) == set(names)
                   and all(isinstance(flags, list) and len(flags) == len(names[b])
                           and all(isinstance(x, bool) for x in flags) for b, flags in log_scale.items()),
                   "__meta__.hyper.log_scale", "must map each learning block to one true/false per parameter name")
        log_scale = {b: tuple(flags) for b, flags in log_scale.items()}
        theta = {}
        for i, (b, n) in enumerate(names.items()):
            theta[b] = self.array(f"hyper/theta/{i}")
            self.check(theta[b].shape == (len(n),), f"hyper/theta/{i}", f"must have shape ({len(n)},)")
        evaluations = []
        if "hyper/evaluations/theta" in self.manifest or "hyper/evaluations/value" in self.manifest:
            size = sum(len(n) for n in names.values())
            points, gradients = self.array("hyper/evaluations/theta"), self.array("hyper/evaluations/gradient")
            values = self.array("hyper/evaluations/value", finite=False)
            count = values.shape[0] if values.ndim == 1 else -1
            self.check(count >= 1 and not np.any(np.isnan(values) | (values == -np.inf)), "hyper/evaluations/value",
                       "must be a 1-D array of objective values (finite, or +inf at invalid points)")
            for key, a in (("theta", points), ("gradient", gradients)):
                self.check(a.shape == (count, size), f"hyper/evaluations/{key}", f"must have shape ({count}, {size})")
            evaluations = [(points[j], float(values[j]), gradients[j]) for j in range(count)]
        moments = {}
        for i, (b, n) in enumerate(names.items()):
            key = f"hyper/moments/{i}"
            if key in self.manifest:
                moments[b] = self.array(key)
                self.check(moments[b].shape == (2, len(n)) and np.all(moments[b][1] >= 0.0), key,
                           f"must hold Adam's two moment estimates, shape (2, {len(n)}), the second >= 0")
                moments[b] = (moments[b][0], moments[b][1])
        steps = 0
        if moments or "hyper/adam_steps" in self.manifest:
            steps = self.array("hyper/adam_steps")
            # one Adam step per minibatch sweep at most, so never more steps than iterations
            self.check(steps.shape == (1,) and 1 <= steps[0] <= iteration and bool(moments), "hyper/adam_steps",
                       f"must be one count in [1, {iteration}] (at most one Adam step per iteration, and the fit "
                       "has run __meta__.iteration iterations), saved with Adam's moments")
            steps = int(steps[0])
        return HyperState(theta, evaluations, moments, steps), log_scale

    def _views(self, spec, sites):
        self.check(len(spec) == len(sites), "__meta__.site_views", f"must have one entry per factor ({len(sites)})")
        views = []
        for k, (view, by_block) in enumerate(zip(spec, sites)):
            entry = f"__meta__.site_views[{k}]"
            self.check(isinstance(view, list) and len(view) == 2, entry, "must be [kind, block]")
            kind, block = view
            if kind == "gaussian":
                self.check(block in by_block and len(by_block[block]) >= 2, entry,
                           f"names block {block!r}, which has no Gaussian sites in factor {k}")
                views.append(GaussianSiteView(by_block, block))
            else:
                self.check(kind == "raw" and block is None, entry, f"must be ['gaussian', block] or ['raw', null]; "
                                                                   f"got {view!r}")
                views.append(SiteView(by_block))
        return views

    def _timings(self, spec):
        exactly(self, spec, {"total", "per_iteration"}, "__meta__.timings")
        total, per = spec["total"], spec["per_iteration"]
        self.check(_is_number(total) and total >= 0 and isinstance(per, list)
                   and all(_is_number(t) and t >= 0 for t in per), "__meta__.timings",
                   "must hold non-negative seconds")
        return {"total": float(total), "per_iteration": [float(t) for t in per]}


class _MetaGetter:
    """Typed access to a metadata object; a missing key or a wrong type is a FitFileError."""

    def __init__(self, reader, spec, where="__meta__"):
        self.reader, self.spec, self.where = reader, spec, where

    def _get(self, key, ok, expected):
        if key not in self.spec:
            self.reader.fail(f"{self.where}.{key}", "is missing")
        value = self.spec[key]
        if not ok(value):
            self.reader.fail(f"{self.where}.{key}", f"must be {expected}; got {value!r}"[:300])
        return value

    def int(self, key, maximum=2 ** 62):
        return self._get(key, lambda v: is_int(v) and 0 <= v <= maximum, f"an integer in [0, {maximum}]")

    def bool(self, key):
        return self._get(key, lambda v: isinstance(v, bool), "true or false")

    def str(self, key):
        return self._get(key, lambda v: isinstance(v, str), "a string")

    def list(self, key):
        return self._get(key, lambda v: isinstance(v, list), "a list")

    def dict(self, key):
        return self._get(key, lambda v: isinstance(v, dict), "an object")


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)

