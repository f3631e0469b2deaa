"""The peer of the minibatch-learning benchmark: GPflow's SVGP learning its kernel from minibatches.

Runs in a separate environment that holds GPflow (it does not import efvi; see
``svgp_gpflow_peer.py`` for how to make one), as a script::

    OPENBLAS_NUM_THREADS=1 VENV/bin/python benchmarks/svgp_gpflow_minibatch_peer.py \\
        --data problem.npz --whiten 0 --gamma 0.1 --lr 0.05 --steps 1000 --out gpflow.json

``problem.npz`` (written by ``bench_sparse_minibatch_learning.py``) holds the
inputs ``X``, targets ``y``, inducing inputs ``Z``, the starting lengthscale and
variance, the Gaussian noise variance, the batch size and the shuffling seed.
The model is ``gpflow.models.SVGP`` with a squared-exponential kernel, fixed
inducing inputs and noise, ``num_data = N``, whitened or not (``--whiten``).
Each step is GPflow's recipe (Salimbeni, Eleftheriadis and Hensman, 2018): one
``NaturalGradient(gamma)`` step on ``(q_mu, q_sqrt)`` and one Adam step on the
kernel's parameters, on the same minibatch, compiled once by ``tf.function``
in float64 on one thread.  It writes the learned lengthscale and variance and
the time per step (the first, traced, step excluded).
"""

import argparse
import json
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--whiten", type=int, choices=(0, 1), required=True)
    parser.add_argument("--gamma", type=float, required=True)
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    import gpflow
    from gpflow.optimizers import NaturalGradient

    gpflow.config.set_default_float(np.float64)
    data = np.load(args.data)
    X, y, Z = data["X"], data["y"], data["Z"]
    kernel = gpflow.kernels.SquaredExponential(lengthscales=float(data["lengthscale"]),
                                               variance=float(data["variance"]))
    likelihood = gpflow.likelihoods.Gaussian(variance=float(data["noise"]))
    gpflow.set_trainable(likelihood.variance, False)
    model = gpflow.models.SVGP(kernel, likelihood, Z, num_data=len(X), whiten=bool(args.whiten))
    gpflow.set_trainable(model.inducing_variable, False)
    gpflow.set_trainable(model.q_mu, False)
    gpflow.set_trainable(model.q_sqrt, False)
    batches = iter(tf.data.Dataset.from_tensor_slices((X, y[:, None])).repeat()
                   .shuffle(len(X), seed=int(data["seed"])).batch(int(data["batch"])))
    natural, adam = NaturalGradient(gamma=args.gamma), tf.optimizers.Adam(args.lr)

    @tf.function
    def step(batch):
        natural.minimize(lambda: model.training_loss(batch), [(model.q_mu, model.q_sqrt)])
        with tf.GradientTape() as tape:
            loss = model.training_loss(batch)
        gradients = tape.gradient(loss, model.trainable_variables)
        adam.apply_gradients(zip(gradients, model.trainable_variables))

    step(next(batches))                     # traced here, and counted as the first step
    start = time.perf_counter()
    for _ in range(args.steps - 1):
        step(next(batches))
    seconds = time.perf_counter() - start
    result = {"whiten": bool(args.whiten), "gamma": args.gamma, "lr": args.lr, "steps": args.steps,
              "lengthscale": float(kernel.lengthscales.numpy()), "variance": float(kernel.variance.numpy()),
              "seconds_per_step": seconds / max(args.steps - 1, 1)}
    with open(args.out, "w") as fh:
        json.dump(result, fh)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
