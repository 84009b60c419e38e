"""Tensor convolution (tp.signal.convolve, autograd's autograd.scipy.signal.convolve,
scipy.signal.convolve) and its two transposes, called by generated code as `rt.*`.

    out[lead, ign_a, ign_b, k] = sum over dot axes and j of a[lead, ..., k + s - j, ...] * b[lead, ..., j, ...]

for every pair of convolved axes (a's axis, b's axis), with a read as zero outside its
length: the full convolution along those axes cut to the window [s, s + L) that the mode
names (full, valid, same), a sum over the `dot_axes` pairs (a tensordot), and the other axes
of a then of b kept in order. `lead` leading axes of both are batch axes (vmap): shared and
kept first. It is bilinear with no conjugation, and its transposes are the same sum with
other windows, so the three functions here are one kernel (`_window_sum`) called three
ways, and the rules of each (transpile/rules/signal.py) are the other two.
"""
import numpy as np

from .backend import array_module


def _normalized(ndim_a, ndim_b, axes, dot_axes):
    """((a_conv, b_conv), (a_dot, b_dot)) as tuples of non-negative axes (after lead)."""
    if axes is None:
        if ndim_a != ndim_b:
            raise ValueError("convolve without axes= needs arrays of the same ndim, got "
                             f"{ndim_a} and {ndim_b}")
        axes = (range(ndim_a), range(ndim_b))
    dot_axes = ((), ()) if dot_axes is None else dot_axes
    a_conv, b_conv = (tuple(int(i) % max(ndim_a, 1) for i in axes[0]),
                      tuple(int(i) % max(ndim_b, 1) for i in axes[1]))
    a_dot, b_dot = (tuple(int(i) % max(ndim_a, 1) for i in dot_axes[0]),
                    tuple(int(i) % max(ndim_b, 1) for i in dot_axes[1]))
    if len(a_conv) != len(b_conv) or len(a_dot) != len(b_dot):
        raise ValueError("convolve: axes and dot_axes must pair as many axes of A as of B")
    return (a_conv, b_conv), (a_dot, b_dot)


def _window(n_a, n_b, mode):
    """(start, length) of the mode's result within the full convolution of lengths n_a, n_b
    (autograd's and scipy's: 'same' is centred on A, 'valid' is the overlap of either
    order)."""
    if mode == "full":
        return 0, n_a + n_b - 1
    if mode == "valid":
        return min(n_a, n_b) - 1, abs(n_a - n_b) + 1
    if mode == "same":
        return (n_b - 1) // 2, n_a
    raise ValueError(f"convolve: mode must be 'full', 'valid' or 'same', not {mode!r}")


def _window_sum(x, y, x_conv, y_conv, x_dot, y_dot, starts, lengths, lead, y_reversed=False):
    """out[lead, ign_x, ign_y, k] = sum_{dot, j} x[k + s - j] y[j] along each conv pair
    (x zero outside its length; y reversed already when `y_reversed`): x's needed stretch,
    zero-padded, viewed as sliding windows the length of y's axis, then one einsum."""
    xp = array_module(x, y)
    x, y = xp.asarray(x), xp.asarray(y)
    nx, ny = x.ndim - lead, y.ndim - lead
    pads = [(0, 0)] * x.ndim
    cuts = [slice(None)] * x.ndim
    for xa, ya, s, length in zip(x_conv, y_conv, starts, lengths):
        n_x, n_y = x.shape[lead + xa], y.shape[lead + ya]
        lo, hi = s - (n_y - 1), s + length          # the stretch of x the windows read
        left = min(max(-lo, 0), hi - lo)
        first = min(max(lo, 0), n_x)
        last = min(max(hi, first), n_x)
        cuts[lead + xa] = slice(first, last)
        pads[lead + xa] = (left, hi - lo - left - (last - first))
    x = x[tuple(cuts)]
    if any(p != (0, 0) for p in pads):
        x = xp.pad(x, pads)
    shape, strides = list(x.shape), list(x.strides)
    for xa, ya, length in zip(x_conv, y_conv, lengths):
        n_y = y.shape[lead + ya]
        shape[lead + xa] = length
        shape.append(n_y)
        strides.append(x.strides[lead + xa])
    windows = xp.lib.stride_tricks.as_strided(x, tuple(shape), tuple(strides))
    if not y_reversed:
        flips = [slice(None)] * y.ndim
        for ya in y_conv:
            flips[lead + ya] = slice(None, None, -1)
        y = y[tuple(flips)]
    # einsum labels: lead, x's axes, the windows, then y's own axes
    x_labels = list(range(lead)) + [lead + i for i in range(nx)]
    w_labels = [lead + nx + p for p in range(len(x_conv))]
    y_labels = list(range(lead)) + [lead + nx + len(x_conv) + i for i in range(ny)]
    for p, (xa, ya) in enumerate(zip(x_conv, y_conv)):
        y_labels[lead + ya] = w_labels[p]
    for xa, ya in zip(x_dot, y_dot):
        y_labels[lead + ya] = x_labels[lead + xa]
    out_labels = list(range(lead)) + \
        [x_labels[lead + i] for i in range(nx) if i not in x_conv and i not in x_dot] + \
        [y_labels[lead + i] for i in range(ny) if i not in y_conv and i not in y_dot] + \
        [x_labels[lead + xa] for xa in x_conv]
    w_all = x_labels + w_labels
    summed = [label for label in y_labels if label in w_all]
    kept = int(np.prod([y.shape[i] for i, label in enumerate(y_labels) if label not in summed]))
    if lead or kept < 4:
        # the windows read in place: a matrix product would copy each window (im2col) to
        # multiply it by fewer than 4 numbers (measured on convnet's layers: einsum 50 ms,
        # im2col and BLAS 125 ms for one output channel; 169 ms against 124 for six)
        return xp.einsum(windows, w_all, y, y_labels, out_labels)
    # one matrix product (BLAS): the windows copied into rows, as im2col does
    out = xp.tensordot(windows, y, axes=([w_all.index(label) for label in summed],
                                         [y_labels.index(label) for label in summed]))
    produced = [label for label in w_all if label not in summed] + \
        [label for label in y_labels if label not in summed]
    return xp.transpose(out, [produced.index(label) for label in out_labels])


class _Layout:
    """The axes of one convolution: each operand's convolved, summed (dot) and other
    (ignored) axes after `lead`, their lengths, and the mode's window of each conv pair."""

    def __init__(self, a, b, axes, dot_axes, mode, lead):
        self.ndim_a, self.ndim_b = np.ndim(a) - lead, np.ndim(b) - lead
        (self.a_conv, self.b_conv), (self.a_dot, self.b_dot) = \
            _normalized(self.ndim_a, self.ndim_b, axes, dot_axes)
        self.sa, self.sb = np.shape(a)[lead:], np.shape(b)[lead:]
        self.a_ign = [i for i in range(self.ndim_a)
                      if i not in self.a_conv and i not in self.a_dot]
        self.b_ign = [i for i in range(self.ndim_b)
                      if i not in self.b_conv and i not in self.b_dot]
        self.windows = [_window(self.sa[i], self.sb[j], mode)
                        for i, j in zip(self.a_conv, self.b_conv)]
        # g (a result's adjoint) holds a's other axes, b's other axes, then the conv ones
        self.g_conv = tuple(len(self.a_ign) + len(self.b_ign) + p
                            for p in range(len(self.a_conv)))


def tensor_convolve(a, b, axes=None, dot_axes=None, mode="full", lead=0):
    """autograd.scipy.signal.convolve(a, b, axes, dot_axes, mode) of each example; the
    result's axes are a's other axes, b's other axes, then the convolved ones."""
    k = _Layout(a, b, axes, dot_axes, mode, lead)
    return _window_sum(a, b, k.a_conv, k.b_conv, k.a_dot, k.b_dot, [w[0] for w in k.windows],
                       [w[1] for w in k.windows], lead)


def _order(produced, ndim, lead):
    """The transpose that puts axes produced in the order `produced` (of an operand's own
    axes) back in the operand's order."""
    return list(range(lead)) + [lead + produced.index(i) for i in range(ndim)]


def tensor_convolve_adj_a(g, a, b, axes=None, dot_axes=None, mode="full", lead=0):
    """The transpose of tensor_convolve in a (linear in g and in b; a lends its shape):
    da[i] = sum_j g[i - s + j] b[j] = the window sum of g with b reversed, start n_b - 1 - s,
    length n_a, summing b's other axes against g's."""
    k = _Layout(a, b, axes, dot_axes, mode, lead)
    g_dot = tuple(len(k.a_ign) + q for q in range(len(k.b_ign)))
    starts = [k.sb[j] - 1 - w[0] for j, w in zip(k.b_conv, k.windows)]
    out = _window_sum(g, b, k.g_conv, k.b_conv, g_dot, tuple(k.b_ign), starts,
                      [k.sa[i] for i in k.a_conv], lead, y_reversed=True)
    paired = dict(zip(k.b_dot, k.a_dot))
    produced = k.a_ign + [paired[j] for j in sorted(k.b_dot)] + list(k.a_conv)
    return array_module(out).transpose(out, _order(produced, k.ndim_a, lead))


def tensor_convolve_adj_b(g, a, b, axes=None, dot_axes=None, mode="full", lead=0):
    """The transpose of tensor_convolve in b (linear in g and in a; b lends its shape):
    db[j] = sum_k g[k] a[k + s - j] = the window sum of g with a reversed, start
    n_a - 1 - s, length n_b, summing a's other axes against g's."""
    k = _Layout(a, b, axes, dot_axes, mode, lead)
    g_dot = tuple(range(len(k.a_ign)))
    starts = [k.sa[i] - 1 - w[0] for i, w in zip(k.a_conv, k.windows)]
    out = _window_sum(g, a, k.g_conv, k.a_conv, g_dot, tuple(k.a_ign), starts,
                      [k.sb[j] for j in k.b_conv], lead, y_reversed=True)
    paired = dict(zip(k.a_dot, k.b_dot))
    produced = k.b_ign + [paired[i] for i in sorted(k.a_dot)] + list(k.b_conv)
    return array_module(out).transpose(out, _order(produced, k.ndim_b, lead))
