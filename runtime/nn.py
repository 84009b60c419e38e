"""tp.nn's one array primitive: the patches (windows) of an image, and their adjoint.

    patches(x, (3, 3), strides=(2, 2), padding="SAME")

takes x of shape (..., *spatial, C) (channels last, any number of leading axes) and returns
every window the filter visits, shape (..., *out_spatial, *window, C). A convolution is
then one matrix product of that with the filter reshaped to (prod(window) * C, O) (im2col),
and max and average pooling are a max or a mean over the window axes. Their derivatives
and batching come from those of `@` and the reductions, plus the rules of the two
functions here (transpile/rules/nn.py): `patches` is linear, its adjoint
`patches_adjoint` adds every window back where it came from.

padding: "VALID" (no padding), "SAME" (output size ceil(input / stride), padded as JAX's
lax.conv pads: the smaller half before) or a sequence of (low, high) pairs per spatial axis.
The padding holds `pad_value`: 0 for convolutions, -inf for max pooling.

Both copy one strided slice per window offset: prod(window) slices of the whole batch,
which numpy and cupy run at memory speed, so the same code serves both.
"""
import itertools

from .backend import array_module
from .errors import TransformError

__all__ = ["patches", "patches_adjoint", "padding_pairs", "output_shape"]


def _tuple(value, nd, what):
    if value is None:
        return (1,) * nd
    if isinstance(value, int):
        return (value,) * nd
    value = tuple(int(v) for v in value)
    if len(value) != nd:
        raise TransformError(f"tp.nn: {what} {value} has {len(value)} entries for {nd} spatial "
                             "axes")
    return value


def padding_pairs(spatial, window, strides, padding, dilation):
    """((low, high), ...) per spatial axis, for padding "SAME", "VALID" or explicit pairs."""
    nd = len(spatial)
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return ((0, 0),) * nd
        if mode != "SAME":
            raise TransformError(f"tp.nn: padding {padding!r} is not 'SAME', 'VALID' or a "
                                 "sequence of (low, high) pairs")
        pairs = []
        for n, k, s, d in zip(spatial, window, strides, dilation):
            out = -(-n // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
            pairs.append((total // 2, total - total // 2))
        return tuple(pairs)
    pairs = tuple((int(lo), int(hi)) for lo, hi in padding)
    if len(pairs) != nd:
        raise TransformError(f"tp.nn: padding {padding!r} has {len(pairs)} pairs for {nd} "
                             "spatial axes")
    return pairs


def output_shape(spatial, window, strides, padding, dilation):
    """The spatial shape of the windows' grid."""
    nd = len(spatial)
    window = _tuple(window, nd, "window")
    strides, dilation = _tuple(strides, nd, "strides"), _tuple(dilation, nd, "dilation")
    pads = padding_pairs(spatial, window, strides, padding, dilation)
    out = []
    for n, k, s, d, (lo, hi) in zip(spatial, window, strides, dilation, pads):
        span = (k - 1) * d + 1
        if n + lo + hi < span:
            raise TransformError(f"tp.nn: a window of {k} (dilation {d}) does not fit an axis "
                                 f"of {n} padded by {(lo, hi)}")
        out.append((n + lo + hi - span) // s + 1)
    return tuple(out)


def _geometry(shape, window, strides, padding, dilation):
    nd = len(window) if not isinstance(window, int) else 1
    window = _tuple(window, nd, "window")
    if len(shape) < nd + 1:
        raise TransformError(f"tp.nn: an input of shape {tuple(shape)} has no room for {nd} "
                             "spatial axes and a channel axis (channels last)")
    spatial = tuple(shape[-nd - 1:-1])
    strides, dilation = _tuple(strides, nd, "strides"), _tuple(dilation, nd, "dilation")
    pads = padding_pairs(spatial, window, strides, padding, dilation)
    out = output_shape(spatial, window, strides, pads, dilation)
    return nd, window, strides, dilation, pads, spatial, out


def _window_slices(offset, strides, dilation, out):
    """The slices of the padded input that window position `offset` reads, per axis."""
    return tuple(slice(k * d, k * d + s * (o - 1) + 1, s)
                 for k, s, d, o in zip(offset, strides, dilation, out))


def patches(x, window, strides=None, padding="VALID", dilation=None, pad_value=0.0):
    """Every window of x (..., *spatial, C): shape (..., *out_spatial, *window, C)."""
    xp = array_module(x)
    x = xp.asarray(x)
    nd, window, strides, dilation, pads, spatial, out = _geometry(
        x.shape, window, strides, padding, dilation)
    lead = x.shape[:-nd - 1]
    if any(lo or hi for lo, hi in pads):
        padded = xp.full(lead + tuple(n + lo + hi for n, (lo, hi) in zip(spatial, pads)) +
                         x.shape[-1:], pad_value, dtype=x.dtype)
        padded[(Ellipsis,) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(spatial, pads)) +
               (slice(None),)] = x
    else:
        padded = x
    result = xp.empty(lead + out + window + x.shape[-1:], dtype=x.dtype)
    for offset in itertools.product(*(range(k) for k in window)):
        result[(Ellipsis,) + (slice(None),) * nd + offset + (slice(None),)] = \
            padded[(Ellipsis,) + _window_slices(offset, strides, dilation, out) +
                   (slice(None),)]
    return result


def patches_adjoint(g, x, window, strides=None, padding="VALID", dilation=None):
    """The adjoint of `patches` (pad_value aside): each window of g added back where it came
    from, in an array of x's spatial and channel shape with g's leading axes. Only x's
    shape is read."""
    xp = array_module(g)
    g = xp.asarray(g)
    shape = tuple(x.shape)
    nd, window, strides, dilation, pads, spatial, out = _geometry(
        shape, window, strides, padding, dilation)
    lead = g.shape[:g.ndim - 2 * nd - 1]
    padded = xp.zeros(lead + tuple(n + lo + hi for n, (lo, hi) in zip(spatial, pads)) +
                      shape[-1:], dtype=g.dtype)
    for offset in itertools.product(*(range(k) for k in window)):
        padded[(Ellipsis,) + _window_slices(offset, strides, dilation, out) +
               (slice(None),)] += g[(Ellipsis,) + (slice(None),) * nd + offset +
                                    (slice(None),)]
    return padded[(Ellipsis,) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(spatial, pads)) +
                  (slice(None),)]
