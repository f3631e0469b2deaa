"""The user's log joint as a sum of terms over named blocks, evaluated at draws from q.

A term is ``(blocks, log_density)``: ``log_density`` receives the draws of
its blocks only (a dict, or the bare array in single-block mode) and returns
a scalar (or, with ``vectorized=True``, one value per draw).  A plain
callable is one term over every block.  The terms of block ``b`` are the
ones that name it: their sum is ``log p_b``, the part of the log joint that
varies with ``z_b`` (Ranganath et al., 2014, section 3.1).
"""

import autograd.numpy as anp
import numpy as np
from autograd import make_vjp
from autograd.tracer import getval, isbox

SINGLE_BLOCK = "z"


class _BlockDraws(dict):
    """The draws a term may read; reading a block the term did not declare is a named error."""

    def __init__(self, values, term):
        super().__init__(values)
        self._term = term

    def __missing__(self, key):
        raise ValueError(
            f"log_joint: term {self._term} declares blocks {tuple(self)} but read block {key!r}; "
            f"list every block a term uses"
        )


class LogJoint:
    """Terms over blocks, each evaluated at a set of ``S`` draws (validated by :func:`efvi.inference.bbvi.fit`)."""

    def __init__(self, terms, single, vectorized):
        self.terms = terms                    # list of (tuple of block names, callable)
        self.single = single
        self.vectorized = vectorized

    def terms_of(self, name):
        """Indices of the terms that involve block ``name``."""
        return [k for k, (blocks, _) in enumerate(self.terms) if name in blocks]

    def _argument(self, k, draws):
        blocks = self.terms[k][0]
        if self.single:
            return draws[SINGLE_BLOCK]
        return _BlockDraws({b: draws[b] for b in blocks}, k)

    def _draws_of(self, draws, n_samples):
        """The argument(s) term functions receive: all draws at once (vectorized) or each draw in turn."""
        if self.vectorized:
            return [draws]
        return [{b: _take(d, s) for b, d in draws.items()} for s in range(n_samples)]

    def _evaluate(self, k, draws, n_samples, out):
        """Term ``k`` at every draw, its values checked and written to ``out[k]``; returns their sum
        (traceable by autograd when the draws are)."""
        fn, total = self.terms[k][1], 0.0
        for s, argument in enumerate(self._draws_of(draws, n_samples)):
            value = fn(self._argument(k, argument))
            if self.vectorized:
                out[k] = self._log_density(value, k, (n_samples,))
                return anp.sum(value)
            out[k, s] = self._log_density(value, k, ())
            total = total + value
        return total

    def _log_density(self, value, k, shape):
        """``value`` as float, after checking it is real, numeric and of ``shape``."""
        raw = getval(value)
        array = np.asarray(raw)
        if array.dtype.kind == "c":
            raise ValueError(f"log_joint{_label(self, k)} must return a real log density; got the complex value "
                             f"{np.array2string(array.ravel()[:3], precision=4)}: efvi would drop its imaginary "
                             f"part, so return the real log density itself")
        if array.dtype.kind not in "iuf":
            raise ValueError(f"log_joint{_label(self, k)} must return a number (a real log density); got "
                             f"{type(raw).__name__} {raw!r:.80}")
        if array.shape != shape:
            if self.vectorized:
                raise ValueError(f"log_joint{_label(self, k)} with vectorized=True must return one value per "
                                 f"draw, shape {shape}; got shape {array.shape}")
            raise ValueError(f"log_joint{_label(self, k)} must return a scalar (the log density of one "
                             f"draw); got an array of shape {array.shape}")
        return array.astype(float)

    def values(self, draws, n_samples):
        """Values of every term at every draw: array ``(K, S)``.

        Raises
        ------
        ValueError
            Naming ``log_joint`` if a term returns something other than a real
            number (complex, a string), a non-scalar (or, vectorized, not shape
            ``(S,)``) or a value that is NaN or infinite.
        """
        out = np.empty((len(self.terms), n_samples))
        for k in range(len(self.terms)):
            self._evaluate(k, draws, n_samples, out)
        return self._finite(out, draws)

    def _finite(self, out, draws):
        bad = ~np.isfinite(out)
        if np.any(bad):
            k, s = np.argwhere(bad)[0]
            raise ValueError(f"log_joint{_label(self, k)} must return a finite log density at every draw from q; "
                             f"got {out[k, s]} at draw {s} ({_describe_draw(draws, s)})")
        return out

    def values_and_gradients(self, draws, n_samples):
        """Values of every term at every draw, ``(K, S)``, and ``grad_{z_b} log p_b`` of every block.

        One autograd pass per block gives both: the values are those of the
        traced evaluation, equal to :meth:`values`' to the last bit.  The
        terms see all draws at once when ``vectorized``.

        Returns
        -------
        values : ndarray, shape (K, S)
        gradients : dict
            Block name -> gradient, shaped like ``draws[name]``.

        Raises
        ------
        ValueError
            As :meth:`values`; naming ``log_joint`` if autograd cannot trace it
            (it raised on traced draws, or its value does not depend on them as
            autograd sees them), or if a gradient is not finite.
        """
        out = np.full((len(self.terms), n_samples), np.nan)
        gradients = {}
        for name in draws:
            terms = self.terms_of(name)
            depends = []

            def total(block_draws):
                replaced = dict(draws)
                replaced[name] = block_draws
                result = 0.0
                for k in terms:
                    result = result + self._evaluate(k, replaced, n_samples, out)
                depends.append(isbox(result))
                return result

            try:
                vjp, _ = make_vjp(total)(np.asarray(draws[name], dtype=float))
                if not depends[0]:
                    raise _Untraced("its value does not depend on the draws as autograd sees them (they were "
                                    "turned into plain numbers or numpy arrays)")
                self._finite(out[terms], draws)
                gradient = np.asarray(vjp(1.0), dtype=float)
            except Exception as err:
                self.values(draws, n_samples)          # a log joint that fails untraced too: its own error
                raise ValueError(
                    f"log_joint must be differentiable by autograd in block {name!r} (estimator='reparam' "
                    f"differentiates it); {_untraceable(err)}. Write it with autograd.numpy (import "
                    f"autograd.numpy as anp), without float(...), math functions, np.array([...]) of draws or "
                    f"in-place assignment, or use estimator='score', which only evaluates it") from err
            if not np.all(np.isfinite(gradient)):
                raise ValueError(f"log_joint must have a finite gradient in block {name!r} at every draw from q; "
                                 f"got a non-finite entry")
            gradients[name] = gradient
        return out, gradients


class _Untraced(Exception):
    """A log joint whose traced value is a plain number: autograd would return a zero gradient."""


def _untraceable(err):
    if isinstance(err, _Untraced):
        return str(err)
    return f"on traced draws it raised {type(err).__name__}: {str(err).rstrip('.')}"[:400]


def _take(draw, s):
    """Draw ``s`` of a block (a tuple for families whose draws are tuples)."""
    if isinstance(draw, tuple):
        return tuple(p[s] for p in draw)
    return draw[s]


def _label(joint, k):
    return "" if len(joint.terms) == 1 else f" term {k} (blocks {joint.terms[k][0]})"


def _describe_draw(draws, s):
    shown = []
    for name, d in draws.items():
        value = _take(d, s)
        value = np.asarray(value[0] if isinstance(value, tuple) else value)
        shown.append(f"{name}={np.array2string(value.ravel()[:4], precision=4)}{' ...' if value.size > 4 else ''}")
    return ", ".join(shown)
