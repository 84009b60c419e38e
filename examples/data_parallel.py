"""Data-parallel training with tp.pmap on scikit-learn's digits.

    pip install -e '.[examples]' && python examples/data_parallel.py --devices 4
    TRANSPILE_CPU_DEVICES=2 mpiexec -n 2 python examples/data_parallel.py --mpi

Every device holds the same parameters and takes its own slice of each batch; the step
computes that slice's gradient (`tp.grad`), averages the gradients over all devices
(`tp.pmean`: shared memory between a process's devices, MPI between processes with
--mpi), and applies Adam. The parameters come back as device 0's copy (out_axes=None),
identical on every device. The script checks that the first step equals the step one
device takes on the whole batch, then trains and checks the held-out accuracy.
"""
import argparse
import time

import numpy as np
from sklearn.datasets import load_digits

import transpile as tp
from transpile.nn import stax

init_params, predict = stax.serial(stax.Dense(128), stax.Relu, stax.Dense(10))
optimizer = tp.optim.adam(1e-2)


def loss(params, images, labels):
    return tp.nn.sparse_softmax_cross_entropy(predict(params, images), labels)


def step(params, state, images, labels):
    grads = tp.pmean(tp.grad(loss)(params, images, labels), "batch")
    updates, state = optimizer.update(grads, state, params)
    return tp.optim.apply_updates(params, updates), state


def whole_batch_step(params, state, images, labels):
    grads = tp.grad(loss)(params, images, labels)
    updates, state = optimizer.update(grads, state, params)
    return tp.optim.apply_updates(params, updates), state


def main(devices, epochs=20, batch_size=128, seed=0, mpi=False):
    if mpi:
        tp.distributed.initialize()
        devices = tp.local_device_count()
    total = devices * tp.process_count()              # devices across all processes
    if batch_size % total:
        raise SystemExit(f"batch size {batch_size} is not a multiple of {total} devices")
    digits = load_digits()
    images, labels = digits.data / 16.0, digits.target
    order = np.random.default_rng(seed).permutation(len(images))
    train, test = order[:1408], order[1408:]
    _, params = init_params(tp.random.PRNGKey(seed), (-1, 64))
    state = optimizer.init(params)
    parallel_step = tp.pmap(step, "batch", in_axes=(None, None, 0, 0), out_axes=None,
                            devices=tp.local_devices()[:devices])
    mine = slice(tp.process_index() * devices, (tp.process_index() + 1) * devices)

    def shard(x):
        """This process's devices' parts of a batch: (devices, batch / total, ...)."""
        return x.reshape((total, -1) + x.shape[1:])[mine]

    first = order[:batch_size]
    got = parallel_step(params, state, shard(images[first]), shard(labels[first]))
    want = whole_batch_step(params, state, images[first], labels[first])
    for g, w in zip(tp.tree_leaves(got), tp.tree_leaves(want)):
        assert np.allclose(g, w, rtol=1e-10, atol=1e-12), "data-parallel step != one step"
    rng = np.random.default_rng(seed + 1)
    start = time.perf_counter()
    for _ in range(epochs):
        perm = rng.permutation(train)
        for k in range(len(perm) // batch_size):
            batch = perm[k * batch_size:(k + 1) * batch_size]
            params, state = parallel_step(params, state, shard(images[batch]),
                                          shard(labels[batch]))
    seconds = time.perf_counter() - start
    predicted = np.argmax(predict(params, images[test]), axis=1)
    accuracy = np.mean(predicted == labels[test])
    if tp.process_index() == 0:
        print(f"{total} devices in {tp.process_count()} process(es): {epochs} epochs in "
              f"{seconds:.1f} s, held-out accuracy {100 * accuracy:.1f}%")
    assert accuracy > 0.93, accuracy
    return accuracy


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=2, help="devices to spread a batch over")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--mpi", action="store_true",
                    help="join the processes mpiexec started (tp.distributed.initialize)")
    args = ap.parse_args()
    main(args.devices, args.epochs, mpi=args.mpi)
