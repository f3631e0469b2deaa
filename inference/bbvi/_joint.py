"""The user's log joint as a sum of terms over named blocks, evaluated at draws from q.

A term is ``(blocks, log_density)``: ``log_density`` receives the draws of
its blocks only (a dict, or the bare array in single-block mode) and returns
a scalar (or, with ``vectorized=True``, one value per draw).  A plain
callable is one term over every block.  The terms of block ``b`` are the
ones that name it: their sum is ``log p_b``, the part of the log joint that
varies with ``z_b`` (Ranganath et al., 2014, section 3.1).
"""

import autograd
import autograd.numpy as anp
import numpy as np

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

    def _term_total(self, k, draws, n_samples):
        """Sum over draws of term ``k`` (autograd-traceable in the draws)."""
        fn = self.terms[k][1]
        if self.vectorized:
            return anp.sum(fn(self._argument(k, draws)))
        total = 0.0
        for s in range(n_samples):
            total = total + fn(self._argument(k, {b: _take(d, s) for b, d in draws.items()}))
        return total

    def values(self, draws, n_samples):
        """Values of every term at every draw: array ``(K, S)``.

        Raises
        ------
        ValueError
            Naming ``log_joint`` if a term returns a non-scalar (or, vectorized,
            not shape ``(S,)``) or a value that is NaN or infinite.
        """
        out = np.empty((len(self.terms), n_samples))
        for k, (_, fn) in enumerate(self.terms):
            if self.vectorized:
                value = np.asarray(fn(self._argument(k, draws)), dtype=float)
                if value.shape != (n_samples,):
                    raise ValueError(f"log_joint{_label(self, k)} with vectorized=True must return one value per "
                                     f"draw, shape ({n_samples},); got shape {value.shape}")
                out[k] = value
            else:
                for s in range(n_samples):
                    value = np.asarray(fn(self._argument(k, {b: _take(d, s) for b, d in draws.items()})), dtype=float)
                    if value.shape != ():
                        raise ValueError(f"log_joint{_label(self, k)} must return a scalar (the log density of one "
                                         f"draw); got an array of shape {value.shape}")
                    out[k, s] = value
        bad = ~np.isfinite(out)
        if np.any(bad):
            k, s = np.argwhere(bad)[0]
            raise ValueError(f"log_joint{_label(self, k)} must return a finite log density at every draw from q; "
                             f"got {out[k, s]} at draw {s} ({_describe_draw(draws, s)})")
        return out

    def block_gradient(self, draws, name, n_samples):
        """``grad_{z_b} log p_b`` at every draw, shaped like ``draws[name]``.

        Raises
        ------
        ValueError
            Naming ``log_joint`` if the gradient is not finite.
        """
        terms = self.terms_of(name)

        def total(block_draws):
            replaced = dict(draws)
            replaced[name] = block_draws
            result = 0.0
            for k in terms:
                result = result + self._term_total(k, replaced, n_samples)
            return result

        gradient = np.asarray(autograd.grad(total)(np.asarray(draws[name], dtype=float)), dtype=float)
        if not np.all(np.isfinite(gradient)):
            raise ValueError(f"log_joint must have a finite gradient in block {name!r} at every draw from q; "
                             f"got a non-finite entry")
        return gradient


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
