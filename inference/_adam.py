"""Adam's moment updates (Kingma and Ba, 2015), shared by the ngvi optimisers Adam and BayesByBackprop and by black-box VI."""

import numpy as np


def adam_update(params, grad, first, second, step, lr, beta1, beta2, eps):
    """One Adam step: returns ``(params, first, second)`` without touching the inputs."""
    first = beta1 * first + (1.0 - beta1) * grad
    second = beta2 * second + (1.0 - beta2) * grad ** 2
    corrected = first / (1.0 - beta1 ** step)
    scale = np.sqrt(second / (1.0 - beta2 ** step)) + eps
    return params - lr * corrected / scale, first, second
