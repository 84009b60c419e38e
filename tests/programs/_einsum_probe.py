"""The smallest use of np.einsum, for tests/test_user_programs.py to probe whether it is refused."""
import numpy as np


def f(a, b):
    return np.sum(np.einsum("ij,jk->ik", a, b))
