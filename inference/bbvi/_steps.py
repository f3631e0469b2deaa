"""Steps on a block's natural parameters, never leaving the natural parameter space.

* ``"natural"``: :math:`\\lambda \\leftarrow \\lambda + \\rho\\, \\widehat{\\nabla}_\\mu \\mathcal L`
  (the natural gradient, :math:`F^{-1} \\nabla_\\lambda \\mathcal L`);
* ``"sgd"``: :math:`\\lambda \\leftarrow \\lambda + \\rho\\, \\widehat{\\nabla}_\\lambda \\mathcal L`;
* ``"adam"``: Adam (Kingma and Ba, 2015) on :math:`-\\mathcal L` in :math:`\\lambda`.

A proposal outside the natural parameter space (a variance or a Gamma rate
that would turn negative) is halved until it is inside, up to
``MAX_BACKOFFS`` times; if none is, the block keeps its parameters.
"""

import numpy as np

from ...expfam import flatten, unflatten
from .._adam import adam_update

STEPS = ("natural", "sgd", "adam")
MAX_BACKOFFS = 30
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


class Stepper:
    """The step of one fit: its kind, Adam's moments per block, and the counts of back-offs.

    ``n_backoffs`` counts halvings; ``n_halved_steps``, kept by the loop, the
    iterations in which some block's step was halved at least once.
    """

    def __init__(self, kind):
        self.kind = kind
        self.moments = {}
        self.n_backoffs = 0
        self.n_halved_steps = 0

    def step(self, name, q, estimate, rho, iteration):
        """The next distribution of block ``name`` after a step of size ``rho`` along ``estimate``.

        ``iteration`` counts from 0 (Adam's bias correction uses it).
        """
        family = type(q)
        flat = flatten(q.natural, family.event_ndims)
        if self.kind == "natural":
            direction = rho * estimate.natural[name]
        elif self.kind == "sgd":
            direction = rho * estimate.euclidean[name]
        else:
            first, second = self.moments.get(name, (np.zeros_like(flat), np.zeros_like(flat)))
            moved, first, second = adam_update(flat, -estimate.euclidean[name], first, second, iteration + 1,
                                               rho, ADAM_BETAS[0], ADAM_BETAS[1], ADAM_EPS)
            self.moments[name] = (first, second)
            direction = moved - flat
        for _ in range(MAX_BACKOFFS):
            proposal = family.from_valid_natural(unflatten(flat + direction, q.natural, family.event_ndims))
            if proposal is not None and np.all(np.isfinite(flatten(proposal.natural, family.event_ndims))):
                return proposal
            self.n_backoffs += 1
            direction = 0.5 * direction
        return q
