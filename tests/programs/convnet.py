"""A small convolutional network on 8x8 digits: a valid convolution written with
im2col-style slicing and np.einsum, ReLU, 2x2 max pooling, a dense softmax layer."""
import numpy as np
from scipy.special import logsumexp

import transpile as tp

NUM_CLASSES = 3


def conv2d(images, filters):
    """images: (N, C, H, W); filters: (F, C, kh, kw) -> (N, F, H-kh+1, W-kw+1)."""
    kh, kw = filters.shape[2], filters.shape[3]
    out_h = images.shape[2] - kh + 1
    out_w = images.shape[3] - kw + 1
    patches = []
    for i in range(kh):
        for j in range(kw):
            patches.append(images[:, :, i:i + out_h, j:j + out_w])
    cols = np.stack(patches, axis=2)                       # (N, C, kh*kw, oh, ow)
    flat_filters = filters.reshape((filters.shape[0], filters.shape[1], kh * kw))
    return np.einsum("nckhw,fck->nfhw", cols, flat_filters)


def maxpool2x2(x):
    n, c, h, w = x.shape
    return np.max(x.reshape((n, c, h // 2, 2, w // 2, 2)), axis=(3, 5))


def predict(params, images):
    h = conv2d(images, params["filters"]) + params["conv_bias"][None, :, None, None]
    h = np.maximum(h, 0.0)
    h = maxpool2x2(h)
    h = h.reshape((h.shape[0], -1))
    logits = h @ params["W"] + params["b"]
    return logits - logsumexp(logits, axis=1, keepdims=True)


def objective(params, images, labels):
    return -np.mean(np.sum(predict(params, images) * labels, axis=1))


def load_data(rng, n=8):
    from sklearn.datasets import load_digits
    digits = load_digits(n_class=NUM_CLASSES)
    idx = rng.choice(len(digits.images), n, replace=False)
    images = digits.images[idx][:, None, :, :] / 16.0
    labels = np.eye(NUM_CLASSES)[digits.target[idx]]
    return images, labels


def init_params(rng, num_filters=3):
    return {"filters": 0.3 * rng.standard_normal((num_filters, 1, 3, 3)),
            "conv_bias": 0.1 * rng.standard_normal(num_filters),
            "W": 0.3 * rng.standard_normal((num_filters * 3 * 3, NUM_CLASSES)),
            "b": np.zeros(NUM_CLASSES)}


def make_args(rng):
    """Parameters and data away from the kinks, where the derivative jumps and finite
    differences straddle it: every ReLU input and every gap between the two largest
    values of a pooling window at least 1e-4, about 25 times what a finite-difference step
    moves them (the digits' blank borders give equal activations: a little noise on the
    images; otherwise a fresh draw, 0.6 of draws pass)."""
    for _ in range(100):
        images, labels = load_data(rng)
        images = images + 1e-3 * rng.standard_normal(images.shape)
        params = init_params(rng)
        if kink_margin(params, images) >= 1e-4:
            break
    return params, images, labels


def kink_margin(params, images):
    """How far the network is from a kink: the smallest |ReLU input| and the smallest gap
    between the two largest values of a max-pooling window with a positive maximum."""
    h = conv2d(images, params["filters"]) + params["conv_bias"][None, :, None, None]
    n, c, height, width = h.shape
    windows = np.maximum(h, 0.0).reshape((n, c, height // 2, 2, width // 2, 2))
    windows = np.sort(np.moveaxis(windows, 3, -2).reshape((n, c, height // 2, width // 2, 4)))
    gaps = (windows[..., -1] - windows[..., -2])[windows[..., -1] > 0]
    return min(np.min(np.abs(h)), np.min(gaps, initial=np.inf))


def fit(steps=30, step_size=0.3):
    params, images, labels = make_args(np.random.default_rng(0))
    grad_fn = tp.grad(objective)
    initial = objective(params, images, labels)
    for _ in range(steps):
        g = grad_fn(params, images, labels)
        params = {k: v - step_size * g[k] for k, v in params.items()}
    return initial, objective(params, images, labels)
