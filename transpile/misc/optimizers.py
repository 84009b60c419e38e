"""autograd.misc.optimizers: sgd, rmsprop and adam with autograd's calling convention.

    params = adam(grad_fn, init_params, callback=None, num_iters=100, step_size=0.001)

`grad_fn(params, i)` returns the gradient at step `i` (autograd's examples pass
`tp.grad(objective)` of an `objective(params, i)`); `callback(params, i, g)` is called before
each step. Parameters may be any pytree (nested lists, tuples, dicts of arrays): the
optimizer works on its flattened vector and returns the same structure. The arithmetic is
autograd's, so a program fitted with autograd's optimizers follows the same path here.
"""
import functools

import numpy as np

from ..flatten_util import ravel_pytree

__all__ = ["sgd", "rmsprop", "adam", "unflatten_optimizer"]


def unflatten_optimizer(optimize):
    """An optimizer of one flat vector, made to take and return a pytree of parameters."""
    @functools.wraps(optimize)
    def tree_optimize(grad, x0, callback=None, *args, **kwargs):
        flat_x0, unflatten = ravel_pytree(x0)

        def flat_grad(x, i):
            return ravel_pytree(grad(unflatten(x), i))[0]

        flat_callback = None
        if callback:
            def flat_callback(x, i, g):
                return callback(unflatten(x), i, unflatten(g))
        return unflatten(optimize(flat_grad, flat_x0, flat_callback, *args, **kwargs))
    return tree_optimize


@unflatten_optimizer
def sgd(grad, x, callback=None, num_iters=200, step_size=0.1, mass=0.9):
    """Stochastic gradient descent with momentum `mass` (autograd's form: the velocity is
    an exponential average of -g)."""
    velocity = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


@unflatten_optimizer
def rmsprop(grad, x, callback=None, num_iters=100, step_size=0.1, gamma=0.9, eps=1e-8):
    """RMSprop; the running average of g**2 starts at one, as autograd's does."""
    avg_sq_grad = np.ones(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        avg_sq_grad = avg_sq_grad * gamma + g ** 2 * (1 - gamma)
        x = x - step_size * g / (np.sqrt(avg_sq_grad) + eps)
    return x


@unflatten_optimizer
def adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999,
         eps=1e-8):
    """Adam (Kingma and Ba), with bias-corrected moment estimates."""
    m = np.zeros(len(x))
    v = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * g ** 2 + b2 * v
        m_hat = m / (1 - b1 ** (i + 1))
        v_hat = v / (1 - b2 ** (i + 1))
        x = x - step_size * m_hat / (np.sqrt(v_hat) + eps)
    return x
