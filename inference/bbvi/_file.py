"""Saved black-box VI fits: the fit file's form (``.npz`` of arrays plus JSON, atomic, no pickle), checked on load.

:meth:`BBVIResult.save` writes, through the writer of
:meth:`efvi.inference.FitResult.save` (:func:`efvi.inference.result.save_archive`),

* arrays: each block's natural parameters (``posterior/<i>/<j>``), the ELBO
  traces (``elbo_trace``, ``elbo_standard_error_trace``, ``exact_elbo_trace``),
  the gradient variances (``grad_variance/<i>``) and, for Adam, its moments
  (``adam/<i>/first``, ``adam/<i>/second``);
* JSON content: the blocks (names and registered families), the options, the
  counters, the random generator's state (any of numpy's bit generators), the divergence rule's history,
  ``converged`` and ``message``.

:meth:`BBVIResult.load` reads it through the same checked reader
(:func:`efvi.inference.result.open_archive`) and checks every entry: options
as :func:`efvi.inference.bbvi.fit` checks its arguments, natural parameters
valid for their family, traces of the lengths the iteration count gives,
variances and standard errors >= 0, counters within what the steps allow,
Adam's moments of the parameters' shape, the random state, the divergence
history (steps no later than the fit's), and ``converged`` equal to what the
stopping rule says of the saved traces.  Each problem is a
:class:`efvi.inference.FitFileError` naming the file and the entry.
"""

import math

import numpy as np

from ... import expfam
from ...expfam import flatten
from ...expfam.checks import check_integer
from ..divergence import DivergenceRule
from ..result import open_archive, save_archive
from . import _stopping
from ._run import HALVINGS_DOMINATE, RunState
from ._steps import MAX_BACKOFFS, STEPS
from ._checks import _check, _check_learning_rate, _check_tol

FORMAT = "efvi-bbvi-1"
_CONTENT = {"blocks", "options", "converged", "message", "iteration", "n_backoffs", "n_halved_steps", "elapsed",
            "rng", "divergence", "exact"}
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
"""The generators a file may hold the state of (``seed`` may be a Generator on any of them)."""
_OPTIONS = {"estimator", "control_variate", "n_samples", "rao_blackwellised", "step", "learning_rate", "tol",
            "window", "vectorized", "single"}


def save(result, path):
    """Write ``result`` to ``path`` atomically (see the module notes)."""
    state = result.state
    arrays = {"elbo_trace": result.elbo_trace, "elbo_standard_error_trace": result.elbo_standard_error_trace}
    if state.exact is not None:
        arrays["exact_elbo_trace"] = result.exact_elbo_trace
    blocks = []
    for i, (name, q) in enumerate(state.posterior.items()):
        blocks.append({"name": name, "family": type(q).name})
        for j, part in enumerate(q.natural):
            arrays[f"posterior/{i}/{j}"] = np.asarray(part, dtype=float)
        arrays[f"grad_variance/{i}"] = np.asarray(state.variance[name], dtype=float)
        if name in state.stepper.moments:
            arrays[f"adam/{i}/first"], arrays[f"adam/{i}/second"] = state.stepper.moments[name]
    content = {"blocks": blocks, "options": result.options, "converged": result.converged,
               "message": result.message, "iteration": state.iteration, "n_backoffs": state.stepper.n_backoffs,
               "n_halved_steps": state.stepper.n_halved_steps, "elapsed": state.elapsed,
               "rng": _plain(state.rng.bit_generator.state), "divergence": state.divergence.state_dict(),
               "exact": state.exact is not None}
    save_archive(path, FORMAT, arrays, content)


def _plain(value):
    """A bit generator's state as JSON values (MT19937's key is an array)."""
    if isinstance(value, dict):
        return {key: _plain(v) for key, v in value.items()}
    return value.tolist() if isinstance(value, np.ndarray) else value


def load(path, result_class):
    """The ``result_class`` (:class:`BBVIResult`) saved at ``path``, every entry checked (see the module notes)."""
    with open_archive(path, FORMAT, "black-box VI fit") as archive:
        result = _Loader(archive).result(result_class)
        archive.finish()
    return result


class _Loader:
    def __init__(self, archive):
        self.archive = archive
        content = archive.content
        self.exactly(content, _CONTENT, "__meta__.content")
        self.content = content

    def fail(self, entry, problem):
        self.archive.fail(entry, problem)

    def exactly(self, spec, keys, entry):
        self.archive.check(isinstance(spec, dict) and set(spec) == keys, entry,
                           f"must be an object with exactly {sorted(keys)}; got "
                           f"{sorted(spec) if isinstance(spec, dict) else type(spec).__name__}")

    def integer(self, key, maximum=2 ** 62):
        value = self.content[key]
        self.archive.check(isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= maximum,
                           f"__meta__.content.{key}", f"must be an integer in [0, {maximum}]; got {value!r}"[:300])
        return value

    def flag(self, key, spec=None, where="__meta__.content"):
        value = (self.content if spec is None else spec)[key]
        self.archive.check(isinstance(value, bool), f"{where}.{key}", f"must be true or false; got {value!r}")
        return value

    def trace(self, key, length, minimum=None):
        a = self.archive.array(key)
        self.archive.check(a.shape == (length,), key, f"must have shape ({length},) (one entry per iterate); got "
                                                      f"{a.shape}")
        if minimum is not None:
            self.archive.check(np.all(a >= minimum), key, f"must hold values >= {minimum}")
        return a.tolist()

    # ------------------------------------------------------------------ the pieces
    def result(self, result_class):
        posterior = self.posterior()
        options = self.options(posterior)
        n = self.integer("iteration")
        exact = self.flag("exact")
        state = RunState(posterior, self.rng(), options["step"], exact)
        state.iteration = n
        state.elbo = self.trace("elbo_trace", n + 1)
        state.elbo_se = self.trace("elbo_standard_error_trace", n + 1, minimum=0)
        if exact:
            state.exact = self.trace("exact_elbo_trace", n + 1)
        for i, name in enumerate(posterior):
            state.variance[name] = self.trace(f"grad_variance/{i}", n, minimum=0)
        self.counters(state, len(posterior))
        state.stepper.moments = self.moments(posterior, options["step"], n)
        state.divergence = self.divergence(n)
        elapsed = self.content["elapsed"]
        self.archive.check(isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool)
                           and math.isfinite(elapsed) and elapsed >= 0, "__meta__.content.elapsed",
                           f"must be non-negative seconds; got {elapsed!r}")
        state.elapsed = float(elapsed)
        converged, message = self.flag("converged"), self.content["message"]
        self.archive.check(isinstance(message, str), "__meta__.content.message", "must be a string")
        expected = self.rule(state, options)
        self.archive.check(converged == expected, "__meta__.content.converged",
                           f"must be {str(expected).lower()}, what the stopping rule says of the saved traces; "
                           f"got {str(converged).lower()}")
        return result_class(state, options, converged, message)

    def posterior(self):
        blocks = self.content["blocks"]
        self.archive.check(isinstance(blocks, list) and blocks, "__meta__.content.blocks",
                           "must be a non-empty list of blocks")
        posterior = {}
        for i, block in enumerate(blocks):
            entry = f"__meta__.content.blocks[{i}]"
            self.exactly(block, {"name", "family"}, entry)
            name, family = block["name"], block["family"]
            self.archive.check(isinstance(name, str) and name not in posterior, f"{entry}.name",
                               f"must be a block name (a string) not used before; got {name!r}")
            try:
                family = expfam.get(family)
            except (KeyError, ValueError, TypeError) as err:
                self.fail(f"{entry}.family", f"names no registered family ({err})")
            parts = tuple(self.archive.array(f"posterior/{i}/{j}") for j in range(len(family.param_names)))
            try:
                posterior[name] = family.from_natural(parts)
            except ValueError as err:
                self.fail(f"posterior/{i}", f"is not a valid {family.__name__} natural parameter ({err})"[:400])
        return posterior

    def options(self, posterior):
        options = self.content["options"]
        where = "__meta__.content.options"
        self.exactly(options, _OPTIONS, where)
        single = self.flag("single", options, where)
        self.archive.check(not single or list(posterior) == ["z"], f"{where}.single",
                           f"must be false for blocks {list(posterior)} (a single distribution is block 'z')")
        for key in ("rao_blackwellised", "vectorized"):
            self.flag(key, options, where)
        estimator, control_variate = options["estimator"], options["control_variate"]
        if estimator == "reparam" and control_variate == "none":
            control_variate = None
        init = posterior["z"] if single else posterior
        try:
            _check(lambda z: 0.0, init, estimator, control_variate, options["n_samples"], options["vectorized"])
            if options["learning_rate"] is not None:
                _check_learning_rate(options["learning_rate"])
            _check_tol(options["tol"])
            check_integer(options["window"], "window", minimum=1)
            if options["step"] not in STEPS:
                raise ValueError(f"step must be one of {', '.join(map(repr, STEPS))}; got {options['step']!r}")
        except ValueError as err:
            self.fail(where, f"must be options bbvi.fit accepts: {err}"[:400])
        self.archive.check(estimator == "score" or options["control_variate"] == "none", f"{where}.control_variate",
                           "must be 'none' with estimator 'reparam'")
        return dict(options)

    def counters(self, state, n_blocks):
        n = state.iteration
        backoffs = self.integer("n_backoffs", maximum=n * n_blocks * MAX_BACKOFFS)
        halved = self.integer("n_halved_steps", maximum=min(n, backoffs))
        self.archive.check((backoffs == 0) == (halved == 0), "__meta__.content.n_halved_steps",
                           f"must be 0 exactly when n_backoffs is; got {halved} with {backoffs}")
        state.stepper.n_backoffs, state.stepper.n_halved_steps = backoffs, halved

    def moments(self, posterior, step, n):
        moments = {}
        for i, (name, q) in enumerate(posterior.items()):
            keys = (f"adam/{i}/first", f"adam/{i}/second")
            if step != "adam" or n == 0:
                continue
            shape = flatten(q.natural, type(q).event_ndims).shape
            first, second = (self.archive.array(key) for key in keys)
            for key, a in zip(keys, (first, second)):
                self.archive.check(a.shape == shape, key, f"must have the shape of the flattened natural "
                                                          f"parameters {shape}; got {a.shape}")
            self.archive.check(np.all(second >= 0), keys[1], "must hold Adam's second moments, >= 0")
            moments[name] = (first, second)
        return moments

    def rng(self):
        value = self.content["rng"]
        name = value.get("bit_generator") if isinstance(value, dict) else None
        self.archive.check(name in BIT_GENERATORS, "__meta__.content.rng",
                           f"must be the state of one of numpy's bit generators {BIT_GENERATORS}; got "
                           f"{value!r}"[:300])
        bit_generator = getattr(np.random, name)()
        try:
            bit_generator.state = value
        except Exception as err:
            self.fail("__meta__.content.rng", f"is not a valid random state ({type(err).__name__}: {err})"[:300])
        return np.random.Generator(bit_generator)

    def divergence(self, n):
        rule = DivergenceRule(name="bbvi.fit")
        state = self.content["divergence"]
        try:
            rule.load_state_dict(state)
        except ValueError as err:
            self.fail("__meta__.content.divergence", str(err)[:400])
        steps = [step for key in ("losses", "norms") for step, _ in state[key]]
        self.archive.check(all(1 <= step <= n for step in steps), "__meta__.content.divergence",
                           f"must hold steps 1 ... {n} (the fit's); got {steps[:5]}")
        return rule

    def rule(self, state, options):
        """``converged`` as the loop decides it, from the saved traces and counters."""
        n = state.iteration
        if n and state.stepper.n_halved_steps > HALVINGS_DOMINATE * n:
            return False
        if not _stopping.due(n + 1, options["window"]):
            return False
        trace, errors = ((state.exact, np.zeros(n + 1)) if state.exact is not None
                         else (state.elbo, state.elbo_se))
        return _stopping.converged(trace, errors, options["window"], options["tol"])[0]
