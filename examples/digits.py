"""Train a small network on handwritten digits: the main demo of transpile.

    pip install -e '.[examples]' && python examples/digits.py

scikit-learn's bundled digits (1,797 8x8 images, nothing is downloaded), a stax-style MLP
from `tp.nn` with dropout keyed by `tp.random`, Adam with a warmup-cosine schedule from
`tp.optim`, and one training step compiled by `tp.jit` around `tp.value_and_grad`. A
progress bar per epoch shows the loss and the training accuracy; at the end the held-out
accuracy is printed and the curves are plotted to a PNG (its path is printed).

Options: --epochs N, --plot PATH, --show-source (print the generated training step).
"""
import argparse
import time

import matplotlib
import numpy as np
from sklearn.datasets import load_digits
from tqdm import tqdm

import transpile as tp
from transpile.nn import stax

matplotlib.use("Agg")                     # write the PNG without a display
import matplotlib.pyplot as plt  # noqa: E402


def mlp(mode):
    """The network; mode 'train' drops units (stax's Dropout keeps each with probability
    0.8), 'test' keeps them all. Both share one set of parameters."""
    return stax.serial(stax.Dense(256), stax.Relu, stax.Dropout(0.8, mode),
                       stax.Dense(128), stax.Relu, stax.Dense(10))


init_params, predict_train = mlp("train")
_, predict = mlp("test")


def loss(params, images, labels, key):
    logits = predict_train(params, images, rng=key)
    return tp.nn.sparse_softmax_cross_entropy(logits, labels)


def accuracy(params, images, labels):
    return float(tp.nn.accuracy(predict(params, images), labels))


def load(seed):
    """Images scaled to [0, 1] as rows of 64, integer labels; 80% to train, 20% held out."""
    digits = load_digits()
    images = digits.images.reshape(len(digits.images), -1) / 16.0
    order = np.random.default_rng(seed).permutation(len(images))
    cut = int(0.8 * len(images))
    train, test = order[:cut], order[cut:]
    return images[train], digits.target[train], images[test], digits.target[test]


def main(epochs=30, batch_size=64, seed=0, plot="digits_training.png", show_source=False):
    train_x, train_y, test_x, test_y = load(seed)
    steps_per_epoch = len(train_x) // batch_size
    key = tp.random.PRNGKey(seed)
    key, init_key = tp.random.split(key)
    _, params = init_params(init_key, (-1, train_x.shape[1]))
    schedule = tp.optim.warmup_cosine_decay_schedule(
        0.0, 2e-3, warmup_steps=steps_per_epoch, decay_steps=epochs * steps_per_epoch,
        end_value=1e-5)
    opt = tp.optim.adam(schedule)
    state = opt.init(params)

    # opt is a closure variable here: the step is transformed with this optimizer in it
    @tp.jit
    def train_step(params, state, images, labels, key):
        value, grads = tp.value_and_grad(loss)(params, images, labels, key)
        updates, state = opt.update(grads, state, params)
        return tp.optim.apply_updates(params, updates), state, value

    history = {"loss": [], "train accuracy": [], "test accuracy": []}
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        key, epoch_key = tp.random.split(key)
        order = tp.random.permutation(epoch_key, len(train_x))
        step_keys = tp.random.split(tp.random.fold_in(epoch_key, 1), steps_per_epoch)
        losses = []
        bar = tqdm(range(steps_per_epoch), desc=f"epoch {epoch:2d}/{epochs}", leave=False)
        for i in bar:
            batch = order[i * batch_size:(i + 1) * batch_size]
            params, state, value = train_step(params, state, train_x[batch], train_y[batch],
                                              step_keys[i])
            losses.append(float(value))
            bar.set_postfix(loss=f"{np.mean(losses):.4f}")
        history["loss"].append(float(np.mean(losses)))
        history["train accuracy"].append(accuracy(params, train_x, train_y))
        history["test accuracy"].append(accuracy(params, test_x, test_y))
        tqdm.write(f"epoch {epoch:2d}  loss {history['loss'][-1]:.4f}  train accuracy "
                   f"{history['train accuracy'][-1]:.1%}  held-out accuracy "
                   f"{history['test accuracy'][-1]:.1%}")
    elapsed = time.perf_counter() - start

    if show_source:
        print(train_step.source)
    held_out = history["test accuracy"][-1]
    print(f"held-out accuracy {held_out:.1%} on {len(test_x)} images "
          f"({epochs} epochs of {steps_per_epoch} steps in {elapsed:.1f} s)")
    _plot(history, plot)
    print(f"training curves written to {plot}")
    return held_out


def _plot(history, path):
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    epochs = np.arange(1, len(history["loss"]) + 1)
    left.plot(epochs, history["loss"])
    left.set(xlabel="epoch", ylabel="training loss (cross-entropy)", yscale="log")
    for name in ("train accuracy", "test accuracy"):
        right.plot(epochs, history[name], label=name)
    right.set(xlabel="epoch", ylabel="accuracy", ylim=(0.8, 1.0))
    right.legend()
    fig.suptitle("transpile: an MLP on scikit-learn's digits")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--plot", default="digits_training.png")
    parser.add_argument("--show-source", action="store_true")
    args = parser.parse_args()
    accuracy_ = main(epochs=args.epochs, plot=args.plot, show_source=args.show_source)
    assert accuracy_ >= 0.95, f"held-out accuracy {accuracy_:.1%} is below 95%"
