"""Black-box variational inference: fit a diagonal Gaussian to a 2-D banana-shaped density
with reparameterized samples drawn from a module-level RandomState (autograd's style:
every evaluation of the objective draws new samples)."""
import numpy as np
import numpy.random as npr

import transpile as tp

D = 2
NUM_SAMPLES = 20
rs = npr.RandomState(0)


def log_density(x):
    # a banana: x1 ~ N(0, 1.5^2), x2 | x1 ~ N(0.5 x1^2 - 1, 0.5^2)
    x1, x2 = x[:, 0], x[:, 1]
    lp1 = -0.5 * (x1 / 1.5) ** 2 - np.log(1.5)
    lp2 = -0.5 * ((x2 - 0.5 * x1 ** 2 + 1.0) / 0.5) ** 2 - np.log(0.5)
    return lp1 + lp2 - np.log(2 * np.pi)


def unpack_params(params):
    mean, log_std = params[:D], params[D:]
    return mean, log_std


def gaussian_entropy(log_std):
    return 0.5 * D * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)


def objective(params):
    """Negative evidence lower bound, estimated with NUM_SAMPLES draws."""
    mean, log_std = unpack_params(params)
    samples = rs.randn(NUM_SAMPLES, D) * np.exp(log_std) + mean
    lower_bound = gaussian_entropy(log_std) + np.mean(log_density(samples))
    return -lower_bound


def objective_seeded(params, seed):
    """The same bound with the seed reset inside: the same draws on every evaluation."""
    rs_local = npr.RandomState(seed)
    mean, log_std = unpack_params(params)
    samples = rs_local.randn(NUM_SAMPLES, D) * np.exp(log_std) + mean
    return -(gaussian_entropy(log_std) + np.mean(log_density(samples)))


def fresh(args, seed=0):
    rs.seed(seed)
    return args


def make_args(rng):
    return (np.concatenate([0.5 * rng.standard_normal(D), -1.0 + 0.1 * rng.standard_normal(D)]),)


def fit(steps=60, step_size=0.05):
    (params,) = make_args(np.random.default_rng(0))
    grad_fn = tp.grad(objective)

    def evaluate(p):
        rs.seed(1234)           # a fixed large-sample estimate for the comparison
        return np.mean([objective(p) for _ in range(20)])

    initial = evaluate(params)
    rs.seed(0)
    for _ in range(steps):
        params = params - step_size * grad_fn(params)
    return initial, evaluate(params)
