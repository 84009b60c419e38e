"""A tiny 2-D smoke simulation (periodic grid, semi-Lagrangian advection with bilinear
interpolation, pressure projection by Jacobi iterations with np.roll). The initial
velocity field is optimized so that the smoke ends near a target pattern."""
import numpy as np

import transpile as tp

GRID = 8
NUM_STEPS = 3
JACOBI_ITERS = 4


def project(vx, vy):
    """Make the velocity field (roughly) divergence free."""
    h = 1.0 / vx.shape[0]
    div = -0.5 * h * (np.roll(vx, -1, axis=0) - np.roll(vx, 1, axis=0)
                      + np.roll(vy, -1, axis=1) - np.roll(vy, 1, axis=1))
    p = np.zeros(vx.shape)
    for _ in range(JACOBI_ITERS):
        p = (div + np.roll(p, 1, axis=0) + np.roll(p, -1, axis=0)
             + np.roll(p, 1, axis=1) + np.roll(p, -1, axis=1)) / 4.0
    vx = vx - 0.5 * (np.roll(p, -1, axis=0) - np.roll(p, 1, axis=0)) / h
    vy = vy - 0.5 * (np.roll(p, -1, axis=1) - np.roll(p, 1, axis=1)) / h
    return vx, vy


def advect(f, vx, vy):
    """Move field f along (vx, vy): sample f at the back-traced positions, bilinearly."""
    rows, cols = f.shape
    cell_ys, cell_xs = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    center_xs = (cell_xs - vx).ravel()
    center_ys = (cell_ys - vy).ravel()
    left_ix = np.floor(center_xs).astype(int)
    top_ix = np.floor(center_ys).astype(int)
    rw = center_xs - left_ix
    bw = center_ys - top_ix
    left_ix = np.mod(left_ix, cols)
    right_ix = np.mod(left_ix + 1, cols)
    top_ix = np.mod(top_ix, rows)
    bot_ix = np.mod(top_ix + 1, rows)
    flat = (1 - rw) * ((1 - bw) * f[top_ix, left_ix] + bw * f[bot_ix, left_ix]) \
        + rw * ((1 - bw) * f[top_ix, right_ix] + bw * f[bot_ix, right_ix])
    return np.reshape(flat, (rows, cols))


def simulate(vx, vy, smoke, num_steps):
    for t in range(num_steps):
        vx_updated = advect(vx, vx, vy)
        vy_updated = advect(vy, vx, vy)
        vx, vy = project(vx_updated, vy_updated)
        smoke = advect(smoke, vx, vy)
    return smoke


def objective(init_velocity, smoke, target):
    vx, vy = init_velocity
    final = simulate(vx, vy, smoke, NUM_STEPS)
    return np.sum((final - target) ** 2)


def make_args(rng):
    smoke = np.zeros((GRID, GRID))
    smoke[2:5, 2:5] = 1.0
    target = np.roll(np.roll(smoke, 2, axis=0), 1, axis=1)
    init_velocity = (0.3 * rng.standard_normal((GRID, GRID)),
                     0.3 * rng.standard_normal((GRID, GRID)))
    return init_velocity, smoke, target


def fit(steps=15, step_size=0.02):
    (vx, vy), smoke, target = make_args(np.random.default_rng(0))
    grad_fn = tp.grad(objective)
    initial = objective((vx, vy), smoke, target)
    for _ in range(steps):
        dvx, dvy = grad_fn((vx, vy), smoke, target)
        vx, vy = vx - step_size * dvx, vy - step_size * dvy
    return initial, objective((vx, vy), smoke, target)
