"""scipy functions written in NumPy, for transformed code (see numpy_written.py for how
CALLED_INSTEAD works): a user's `scipy.fft.fft(x)` or `scipy.linalg.cholesky(a)` is
transformed as a call of the function here, whose body the rules already cover.

scipy.fft's transforms are numpy's (the same pocketfft; scipy's extra `workers`,
`overwrite_x` and `plan` only change how it runs). Its discrete cosine transforms, types 1
to 4 with every `norm`, are written on complex FFTs of twice the length (a cosine is the
sum of two exponentials), so their derivatives are the FFT rules'.
"""
import numpy as np

import runtime as rt

from .frontend.calls import CALLED_INSTEAD


# ---------------------------------------------------------------- scipy.linalg

def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """scipy.linalg.cholesky: U with a = U^H U (upper, its default, read from a's upper
    triangle), or L with a = L L^H (lower=True, from the lower triangle): numpy's."""
    return np.linalg.cholesky(a, upper=not lower)


# ---------------------------------------------------------------- scipy.fft: numpy's FFTs

def fft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return np.fft.fft(x, n, axis, norm)


def ifft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return np.fft.ifft(x, n, axis, norm)


def rfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return np.fft.rfft(x, n, axis, norm)


def irfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return np.fft.irfft(x, n, axis, norm)


def hfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return np.fft.hfft(x, n, axis, norm)


def ihfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return np.fft.ihfft(x, n, axis, norm)


def fftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return np.fft.fftn(x, s, axes, norm)


def ifftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return np.fft.ifftn(x, s, axes, norm)


def rfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return np.fft.rfftn(x, s, axes, norm)


def irfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    return np.fft.irfftn(x, s, axes, norm)


def fft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
         plan=None):
    return np.fft.fft2(x, s, axes, norm)


def ifft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
          plan=None):
    return np.fft.ifft2(x, s, axes, norm)


def rfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
          plan=None):
    return np.fft.rfft2(x, s, axes, norm)


def irfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
           plan=None):
    return np.fft.irfft2(x, s, axes, norm)


def fftfreq(n, d=1.0, *, xp=None, device=None):
    return np.fft.fftfreq(n, d)


def rfftfreq(n, d=1.0, *, xp=None, device=None):
    return np.fft.rfftfreq(n, d)


def fftshift(x, axes=None):
    return np.fft.fftshift(x, axes)


def ifftshift(x, axes=None):
    return np.fft.ifftshift(x, axes)


# ---------------------------------------------------------------- discrete cosine transforms

def dct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
        orthogonalize=None):
    """scipy.fft.dct (its default orthogonalize)."""
    _check_dct(type, norm, orthogonalize)
    x = _fit(np.asarray(x), n, axis)
    moved = np.moveaxis(x, axis, -1)
    return np.moveaxis(_dct_last(moved, type, norm), -1, axis)


def idct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None):
    """scipy.fft.idct: the dct of the inverse type (3 for 2, 2 for 3), scaled as `norm`
    says ('backward': 1/(2N), 1/(2(N-1)) for type 1)."""
    _check_dct(type, norm, orthogonalize)
    x = _fit(np.asarray(x), n, axis)
    moved = np.moveaxis(x, axis, -1)
    inverse = {1: 1, 2: 3, 3: 2, 4: 4}[type]
    if norm == "ortho":
        out = _dct_last(moved, inverse, "ortho")
    else:
        out = _dct_last(moved, inverse, None)
        if norm in (None, "backward"):
            size = np.shape(moved)[-1]
            out = out / (2.0 * (size - 1) if type == 1 else 2.0 * size)
    return np.moveaxis(out, -1, axis)


def dctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *,
         orthogonalize=None):
    """scipy.fft.dctn: dct along each of `axes` (all by default) in turn."""
    x = np.asarray(x)
    axes = _axes(x, s, axes)
    for k in range(len(axes)):
        x = dct(x, type, None if s is None else s[k], axes[k], norm)
    return x


def idctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *,
          orthogonalize=None):
    """scipy.fft.idctn: idct along each of `axes` (all by default) in turn."""
    x = np.asarray(x)
    axes = _axes(x, s, axes)
    for k in range(len(axes)):
        x = idct(x, type, None if s is None else s[k], axes[k], norm)
    return x


def _check_dct(type, norm, orthogonalize):
    if type not in (1, 2, 3, 4):
        raise ValueError(f"invalid DCT type {type}; must be 1, 2, 3 or 4")
    if norm not in (None, "backward", "ortho", "forward"):
        raise ValueError(f'Invalid norm value {norm}, should be "backward", "ortho" or '
                         '"forward"')
    if orthogonalize is not None and orthogonalize != (norm == "ortho"):
        raise rt.TransformError("scipy.fft.dct/idct with orthogonalize= other than its "
                                "default is not supported in transformed code.\n  hint: "
                                "leave orthogonalize out.")


def _axes(x, s, axes):
    if axes is None:
        return list(range(np.ndim(x))) if s is None else \
            list(range(np.ndim(x) - len(s), np.ndim(x)))
    return [axes] if np.ndim(axes) == 0 else list(axes)


def _fit(x, n, axis):
    """x cut or padded with zeros to length n along axis (scipy's `n`)."""
    if n is None:
        return x
    size = np.shape(x)[axis]
    if n < 1:
        raise ValueError(f"invalid number of data points ({n}) specified")
    if n <= size:
        return np.take(x, np.arange(n), axis=axis)
    widths = [(0, 0)] * np.ndim(x)
    widths[axis % np.ndim(x)] = (0, n - size)
    return np.pad(x, widths)


def _dct_last(x, type, norm):
    """The DCT of `type` along the last axis, scaled for `norm` (None/'backward':
    unscaled, 'forward': divided by 2N (2(N-1) for type 1), 'ortho': orthonormal)."""
    size = np.shape(x)[-1]
    if type == 1 and size < 2:
        raise ValueError(f"invalid number of data points ({size}) specified")
    k = np.arange(size)
    if norm == "ortho":
        if type == 1:
            x = np.concatenate([x[..., :1] * np.sqrt(2.0), x[..., 1:-1],
                                x[..., -1:] * np.sqrt(2.0)], axis=-1)
        elif type == 3:
            x = np.concatenate([x[..., :1] * np.sqrt(2.0), x[..., 1:]], axis=-1)
    if type == 1:
        # the even extension x0..x_{N-1}, x_{N-2}..x1 (length 2N - 2): its FFT is the DCT
        extended = np.concatenate([x, np.flip(x[..., 1:-1], -1)], axis=-1)
        out = np.fft.fft(extended, axis=-1)[..., :size]
    elif type == 2:
        # fft([x, flip(x)])[k] = e^(i pi k / 2N) 2 sum_n x_n cos(pi k (2n + 1) / 2N)
        extended = np.concatenate([x, np.flip(x, -1)], axis=-1)
        out = np.exp(-0.5j * np.pi * k / size) * np.fft.fft(extended, axis=-1)[..., :size]
    elif type == 3:
        # x0 + 2 sum_{n>0} x_n cos(pi n (2k + 1) / 2N): the two exponentials' sums
        half = np.concatenate([x[..., :1] * 0.5, x[..., 1:]], axis=-1)
        up = np.fft.ifft(half * np.exp(0.5j * np.pi * k / size), 2 * size, axis=-1)
        down = np.fft.fft(half * np.exp(-0.5j * np.pi * k / size), 2 * size, axis=-1)
        out = (2.0 * size) * up[..., :size] + down[..., :size]
    else:
        # 2 sum_n x_n cos(pi (2n + 1)(2k + 1) / 4N)
        turn = np.exp(-0.5j * np.pi * k / size)
        down = np.fft.fft(x * turn, 2 * size, axis=-1)[..., :size]
        up = np.fft.ifft(x * np.conj(turn), 2 * size, axis=-1)[..., :size] * (2.0 * size)
        phase = np.exp(-0.25j * np.pi * (2 * k + 1) / size)
        out = phase * down + np.conj(phase) * up
    if not np.iscomplexobj(x):
        out = np.real(out)
    if norm == "forward":
        out = out / (2.0 * (size - 1) if type == 1 else 2.0 * size)
    elif norm == "ortho":
        if type == 1:
            out = out / np.sqrt(2.0 * (size - 1))
            out = np.concatenate([out[..., :1] / np.sqrt(2.0), out[..., 1:-1],
                                  out[..., -1:] / np.sqrt(2.0)], axis=-1)
        elif type == 2:
            out = out / np.sqrt(2.0 * size)
            out = np.concatenate([out[..., :1] / np.sqrt(2.0), out[..., 1:]], axis=-1)
        else:
            out = out / np.sqrt(2.0 * size)
    return out


try:
    import scipy.fft as _scipy_fft
    import scipy.linalg as _scipy_linalg
except ImportError:        # scipy is optional
    _scipy_fft = None
if _scipy_fft is not None:
    for _scipy_fn, _written in (
            (_scipy_linalg.cholesky, cholesky),
            (_scipy_fft.fft, fft), (_scipy_fft.ifft, ifft), (_scipy_fft.rfft, rfft),
            (_scipy_fft.irfft, irfft), (_scipy_fft.hfft, hfft), (_scipy_fft.ihfft, ihfft),
            (_scipy_fft.fftn, fftn), (_scipy_fft.ifftn, ifftn), (_scipy_fft.rfftn, rfftn),
            (_scipy_fft.irfftn, irfftn), (_scipy_fft.fft2, fft2), (_scipy_fft.ifft2, ifft2),
            (_scipy_fft.rfft2, rfft2), (_scipy_fft.irfft2, irfft2),
            (_scipy_fft.fftfreq, fftfreq), (_scipy_fft.rfftfreq, rfftfreq),
            (_scipy_fft.fftshift, fftshift), (_scipy_fft.ifftshift, ifftshift),
            (_scipy_fft.dct, dct), (_scipy_fft.idct, idct), (_scipy_fft.dctn, dctn),
            (_scipy_fft.idctn, idctn)):
        CALLED_INSTEAD[id(_scipy_fn)] = (_scipy_fn, _written)
