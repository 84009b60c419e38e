"""Specs: how a value is batched. False (the same for every example), True (every leaf
batched on axis 0) or a tuple of specs (a tuple or list whose elements differ); in_axes and
out_axes read as specs; a spec written into generated code as a literal."""

import gast

from ..ir.templates import annotate_prims



def join(a, b):
    if a == b or b is False:
        return a
    if a is False:
        return _widened(b)
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return _widened(tuple(join(x, y) for x, y in zip(a, b)))
    return _joined(a, b)


def widened_join(a, b):
    """The join of `a` and `b` where no part may nest deeper than in `a`: a part where
    they differ other than in a tuple's elements is read as a whole (True where anything
    in it is batched, else False). A recursive variant's assumed result spec grows so
    once it has grown a few times by join (a value it saves holds its own recursive call's
    saved values, a spec nested once more every time)."""
    if a == b:
        return a
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(widened_join(x, y) for x, y in zip(a, b))
    return batched(a) or batched(b)


def _widened(spec, depth=12):
    """`spec` cut at nesting `depth` (a value put in a list of itself on a path, `k = [k]`,
    would nest once more on every visit of the analysis, which would never reach a fixed
    point): a part deeper than that is read as a whole, False where nothing in it is
    batched, else True. Cut specs are a fixed point of further joins."""
    if not isinstance(spec, tuple):
        return spec
    if depth == 0:
        return True if batched(spec) else False
    return tuple(_widened(x, depth - 1) for x in spec)


def _joined(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple) and not batched(a) and not batched(b):
        # lists of other lengths (`[]` on one path), nothing batched: the longer spec (a
        # fixed point of further joins, as the analysis needs)
        return a if len(a) >= len(b) else b
    return True


def settled(spec):
    """`spec` with every part that nothing is batched in read as False, and every part
    batched throughout as True (the same values at run time), as a recursive call's
    variant is keyed: a recursive helper that wraps its argument, `f((p, p), n - 1)`,
    would otherwise ask for a variant nested once more at every level."""
    if not isinstance(spec, tuple):
        return spec
    if not batched(spec):
        return False
    if all(s is True for s in flat(spec)):
        return True
    return tuple(settled(s) for s in spec)


def batched(spec):
    return spec is True or (isinstance(spec, tuple) and any(batched(s) for s in spec))


def uniform(spec):
    """A spec as one bool: batched if any part is (the value is then made fully batched)."""
    return batched(spec)


def literal_ast(value):
    """A Python literal (ints, None, strings, tuples, dicts of them) as an annotated AST
    (a namedtuple or OrderedDict among them, in_axes=(Point(0, None),), as its plain
    tuple or dict: the runtime reads them by position and key, and their repr would name
    a class the generated module does not know)."""
    node = gast.parse(repr(_plain(value))).body[0].value
    annotate_prims(node)
    return node


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        items = [_plain(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def axes_spec(axes):
    """The spec of an argument mapped along `axes` (an in_axes entry, a prefix tree)."""
    if axes is None:
        return False
    if isinstance(axes, int):
        return True
    if isinstance(axes, (tuple, list)):
        return tuple(axes_spec(a) for a in axes)
    return any(axes_spec(a) is not False for a in axes.values())   # dict: all or nothing


def is_dict_mixed(a):
    return isinstance(a, dict) and len({x is None for x in flat(a)}) > 1


def flat(tree):
    if isinstance(tree, (tuple, list)):
        return [x for t in tree for x in flat(t)]
    if isinstance(tree, dict):
        return [x for t in tree.values() for x in flat(t)]
    return [tree]


def keep(have, want):
    """`have` for broadcast_batch: True for leaves to leave alone (batched already, or
    not wanted batched)."""
    if want is False or have is True:
        return True
    if want is True:
        return have
    if not isinstance(have, tuple):
        return tuple(keep(have, w) for w in want)
    return tuple(keep(h, w) for h, w in zip(have, want))


def unbatched_spec(have, want):
    """The spec after rt.unbatch_out: leaves out_axes leaves unmapped are unbatched."""
    if want is False:
        return False
    if isinstance(want, tuple):
        haves = have if isinstance(have, tuple) else (have,) * len(want)
        return tuple(unbatched_spec(h, w) for h, w in zip(haves, want))
    return have
