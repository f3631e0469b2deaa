"""Shared by the PyTorch examples: classification metrics of predictive probabilities, and minibatches.

Every metric takes numpy arrays: ``prob`` (N, K) class probabilities (a
posterior predictive, or a point estimate's softmax) and ``y`` (N,) labels.
"""

import numpy as np

from efvi.plot import calibration_bins


def accuracy(prob, y):
    return float(np.mean(prob.argmax(axis=1) == y))


def log_loss(prob, y):
    """Test negative log-likelihood in nats per example."""
    return float(-np.mean(np.log(np.clip(prob[np.arange(len(y)), y], 1e-300, 1.0))))


def expected_calibration_error(prob, y, n_bins=10):
    """ECE of the top-label confidence: bin-size-weighted |accuracy - confidence| over equal-width bins."""
    confidence, correct = prob.max(axis=1), prob.argmax(axis=1) == y
    mean_confidence, frequency, count = calibration_bins(correct, confidence, n_bins)
    return float(np.sum(count * np.abs(mean_confidence - frequency)) / len(y))


def entropy(prob):
    """Predictive entropy (nats) of each row."""
    return -np.sum(prob * np.log(np.clip(prob, 1e-300, 1.0)), axis=1)


def summary(prob, y):
    """Accuracy, NLL and ECE as a dict."""
    return {"accuracy": accuracy(prob, y), "nll": log_loss(prob, y), "ece": expected_calibration_error(prob, y)}


def minibatches(n, batch, generator):
    """Index tensors of one epoch's shuffled minibatches (``torch.randperm`` with ``generator``)."""
    import torch

    order = torch.randperm(n, generator=generator)
    return [order[start:start + batch] for start in range(0, n, batch)]
