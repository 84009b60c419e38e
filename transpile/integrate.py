"""tp.integrate.odeint: scipy.integrate.odeint's interface, solved in Python that
transformations read.

    ys = tp.integrate.odeint(lambda y, t: -k * y, y0, np.linspace(0.0, 1.0, 10))

scipy's odeint runs LSODA in Fortran, which no transformation can enter. Transformed code
calls this one instead (the front end rewrites `scipy.integrate.odeint(func, y0, t,
args=(a, b))` into `odeint(lambda y, t: func(y, t, a, b), y0, t)`), so grad, jvp, vmap and
jit see an ordinary adaptive Runge-Kutta loop: Dormand and Prince's 5(4) pair, the step
size chosen from the local error estimate as scipy's RK45 chooses it, and each output time
reached by a step that ends on it exactly. The step-size decisions are constants to the
derivative (`stop_gradient`), so the derivative is that of the discrete solution for the
steps taken: it converges to the exact sensitivity as the tolerances shrink, and agrees
with it to about the solution's own accuracy (the "discretize, then differentiate" way;
JAX's odeint solves an adjoint ODE instead, which agrees to the same order). Derivatives
flow to y0, to every array `func` reads (its args, or values it closes over) and to t.

Values agree with scipy's to the tolerances (default rtol = atol = 1.49e-8, scipy's), not
bit for bit: it is another method.
"""
import numpy as np

from .frontend.calls import REPLACEMENTS
from .lax import stop_gradient

__all__ = ["odeint"]

# Dormand-Prince 5(4): the nodes, the stages' weights, the 5th-order solution's weights
# (its last stage is the next step's first: FSAL) and the error weights (5th - 4th order).
_C2, _C3, _C4, _C5 = 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0
_A21 = 1.0 / 5.0
_A31, _A32 = 3.0 / 40.0, 9.0 / 40.0
_A41, _A42, _A43 = 44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0
_A51, _A52, _A53, _A54 = 19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0
_A61, _A62, _A63, _A64, _A65 = (9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0,
                                49.0 / 176.0, -5103.0 / 18656.0)
_B1, _B3, _B4, _B5, _B6 = (35.0 / 384.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0,
                           11.0 / 84.0)
_E1, _E3, _E4, _E5, _E6, _E7 = (71.0 / 57600.0, -71.0 / 16695.0, 71.0 / 1920.0,
                                -17253.0 / 339200.0, 22.0 / 525.0, -1.0 / 40.0)
_SAFETY, _MIN_FACTOR, _MAX_FACTOR = 0.9, 0.2, 10.0


def _rms(x):
    return np.sqrt(np.mean(x * x))


def _initial_step(func, y0, f0, t0, rtol, atol):
    """scipy's choice of the first step (Hairer, Norsett and Wanner, II.4)."""
    scale = atol + rtol * np.abs(y0)
    d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
    h0 = 1e-6
    if d0 >= 1e-5 and d1 >= 1e-5:
        h0 = 0.01 * d0 / d1
    f1 = func(y0 + h0 * f0, t0 + h0)
    d2 = _rms((f1 - f0) / scale) / h0
    h1 = max(1e-6, h0 * 1e-3)
    if d1 > 1e-15 or d2 > 1e-15:
        h1 = (0.01 / max(d1, d2)) ** 0.2
    return min(100.0 * h0, h1)


def odeint(func, y0, t, rtol=1.49012e-8, atol=1.49012e-8, mxstep=500, hmax=np.inf):
    """y(t) for dy/dt = func(y, t), y(t[0]) = y0; one row per time in t (increasing).

    `mxstep` bounds the steps between two output times, as scipy's does."""
    y = np.asarray(y0) * 1.0          # float64 for integer y0, as scipy
    out = [y]
    tc = t[0]
    f = func(y, tc)
    h = stop_gradient(_initial_step(func, y, f, tc, rtol, atol))
    for i in range(1, len(t)):
        target = t[i]
        steps = 0
        while tc < target:
            steps = steps + 1
            if steps > mxstep:
                raise ValueError(f"odeint: more than {mxstep} steps to reach t = "
                                 f"{float(target)} (raise mxstep, or the tolerances)")
            proposed = h
            last = h >= target - tc
            if last:
                h = target - tc         # end on the output time exactly
            if h > hmax:
                h = hmax
            k1 = f
            k2 = func(y + h * (_A21 * k1), tc + _C2 * h)
            k3 = func(y + h * (_A31 * k1 + _A32 * k2), tc + _C3 * h)
            k4 = func(y + h * (_A41 * k1 + _A42 * k2 + _A43 * k3), tc + _C4 * h)
            k5 = func(y + h * (_A51 * k1 + _A52 * k2 + _A53 * k3 + _A54 * k4), tc + _C5 * h)
            k6 = func(y + h * (_A61 * k1 + _A62 * k2 + _A63 * k3 + _A64 * k4 + _A65 * k5),
                      tc + h)
            y_new = y + h * (_B1 * k1 + _B3 * k3 + _B4 * k4 + _B5 * k5 + _B6 * k6)
            t_new = target if last else tc + h
            f_new = func(y_new, t_new)
            error = h * (_E1 * k1 + _E3 * k3 + _E4 * k4 + _E5 * k5 + _E6 * k6 + _E7 * f_new)
            scale = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
            ratio = stop_gradient(_rms(error / scale))
            if ratio == 0.0:
                factor = _MAX_FACTOR
            else:
                factor = min(_MAX_FACTOR, max(_MIN_FACTOR, _SAFETY * ratio ** -0.2))
            if ratio <= 1.0:
                y, f, tc = y_new, f_new, t_new
                if last:                # a step cut short to end on t[i]: not a smaller
                    factor = max(factor, proposed / h)     # step's worth of advice
            h = stop_gradient(h * factor)
        out.append(y)
    return np.stack(out)


REPLACEMENTS["odeint"] = odeint     # what scipy.integrate.odeint becomes in transformed code
