"""Pytrees: nested tuples, lists and dicts of arrays and Python numbers.

Adjoints of containers are containers of the same structure; these helpers build, add and
finish them. A leaf that is not a floating value (an int, a bool, None, a string) has no
adjoint: its slot holds None.
"""
import collections
import numbers

import numpy as np

from .backend import array_module, read_only
from .errors import MissingDerivative, TransformError, located


# type -> function(value) -> its vector space (zeros(), add(x, y), ...): types of the user's
# own whose values are differentiated (transpile.extend.VSpace.register, autograd's API)
VSPACES = {}


def is_container(x):
    return isinstance(x, (tuple, list, dict))


def is_float_leaf(x):
    """True for values that can carry a derivative: float/complex arrays and Python floats."""
    if isinstance(x, bool):
        return False
    if isinstance(x, (float, complex)):
        return True
    if isinstance(x, numbers.Integral):
        return False
    dtype = getattr(x, "dtype", None)
    if not hasattr(dtype, "kind"):      # none, or a class's (np.float64.dtype)
        return type(x) in VSPACES
    return dtype.kind in "fc"


def tree_map(fn, tree, *rest):
    if isinstance(tree, tuple) and not hasattr(tree, "_fields"):
        return tuple(tree_map(fn, t, *(r[i] for r in rest)) for i, t in enumerate(tree))
    if isinstance(tree, tuple):  # namedtuple
        return type(tree)(*(tree_map(fn, t, *(r[i] for r in rest)) for i, t in enumerate(tree)))
    if isinstance(tree, list):
        return [tree_map(fn, t, *(r[i] for r in rest)) for i, t in enumerate(tree)]
    if isinstance(tree, dict):
        return {k: tree_map(fn, v, *(r[k] for r in rest)) for k, v in tree.items()}
    return fn(tree, *rest)


def tree_leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in tree_leaves(t)]
    if isinstance(tree, dict):
        return [leaf for k in tree for leaf in tree_leaves(tree[k])]
    return [tree]


def _zeros_leaf(x):
    if isinstance(x, type):
        return None         # a class (a dtype like np.float64 passed on): no derivative
    if isinstance(x, float):
        return 0.0
    if isinstance(x, complex):
        return 0j
    if type(x) in VSPACES:
        return VSPACES[type(x)](x).zeros()
    if is_float_leaf(x):
        return array_module(x).zeros_like(x)
    if isinstance(x, (bool, numbers.Integral)) or getattr(x, "dtype", None) is not None:
        # Integer values have no derivative; a float zero keeps arithmetic on adjoints valid.
        return 0.0 if np.ndim(x) == 0 else array_module(x).zeros(np.shape(x))
    return None


_ARRAY_TYPES = (np.ndarray, float, np.float64, np.float32)
_ARRAY_TYPES = frozenset(_ARRAY_TYPES)


class ZeroList(list):
    """The zero adjoint of a list. Lists in generated code include stacks of saved values,
    whose length changes as the program runs, so a zero adjoint made at one moment may not
    match the list's length later: adding it to anything gives the other operand."""


def zeros_like(x):
    """The zero adjoint of `x`. For a container: its slots hold None (zero, made lazily),
    so the gradient of one layer's weights never zero-fills the others; `add`, `index_add`,
    `part` and `as_grad` read None as zeros."""
    t = type(x)
    if t is np.ndarray and x.dtype.kind in "fc":
        return np.zeros(x.shape, x.dtype)
    if t is float:
        return 0.0
    if isinstance(x, list):
        return ZeroList([None] * len(x))
    if isinstance(x, tuple):
        return type(x)(*[None] * len(x)) if hasattr(x, "_fields") else (None,) * len(x)
    if isinstance(x, dict):
        return dict.fromkeys(x)
    return _zeros_leaf(x)


def tangent_zeros(x):
    """Zeros shaped like `x` all the way down (forward mode needs real arrays)."""
    return tree_map(_zeros_leaf, x)


class ZeroTangent(np.ndarray):
    """Zeros that forward-mode code knows are zero (the tangent a loop starts with): a
    product with one is zeros without the arithmetic, a sum with one is the other term.
    Anything else computes with plain zeros."""

    # copies are ordinary arrays (code writes into copies: rt.index_update); the zeros
    # themselves are read-only, so nothing can make them nonzero behind the type's back
    def copy(self, order="C"):
        return self.view(np.ndarray).copy(order)

    def astype(self, dtype, *args, **kwargs):
        return self.view(np.ndarray).astype(dtype, *args, **kwargs)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [i.view(np.ndarray) if isinstance(i, ZeroTangent) else i for i in inputs]
        if method == "__call__" and "out" not in kwargs and len(inputs) <= 2:
            zero = [isinstance(i, ZeroTangent) for i in inputs]
            if ufunc in (np.multiply, np.matmul) and any(zero) or \
                    ufunc is np.negative or (ufunc is np.add and all(zero)):
                shape = _matmul_shape(*plain) if ufunc is np.matmul else \
                    np.broadcast_shapes(*(np.shape(i) for i in plain))
                z = np.zeros(shape, np.result_type(*plain)).view(ZeroTangent)
                z.flags.writeable = False
                return z
            if ufunc in (np.add, np.subtract) and len(inputs) == 2 and any(zero):
                shape = np.broadcast_shapes(*(np.shape(i) for i in plain))
                dtype = np.result_type(*plain)
                if zero[0] and ufunc is np.subtract:
                    return np.broadcast_to(np.negative(plain[1]), shape).astype(dtype)
                other = plain[1] if zero[0] else plain[0]
                return np.array(np.broadcast_to(other, shape), dtype=dtype)
        return getattr(ufunc, method)(*plain, **kwargs)


def _matmul_shape(a, b):
    sa, sb = np.shape(a), np.shape(b)
    if len(sa) == 1 and len(sb) == 1:
        return ()
    if len(sa) == 1:
        return sb[:-2] + sb[-1:]
    if len(sb) == 1:
        return sa[:-1]
    return np.broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1])


def zero_tangent(x):
    """The tangent of a value before a loop makes it active: zeros that products skip."""
    if isinstance(x, (tuple, list, dict)):
        return tangent_zeros(x)
    z = _zeros_leaf(x)
    if type(z) is np.ndarray and z.dtype.kind in "fc":
        z = z.view(ZeroTangent)
        z.flags.writeable = False
    return z


def part(g, key, like):
    """Element `key` of the container adjoint `g`, as zeros shaped like `like` if unset.

    The adjoint of a list that grew may be shorter than the list: its missing tail is zero."""
    if g is None or isinstance(g, list) and isinstance(key, int) and key >= len(g):
        return zeros_like(like)       # (None: the whole container's adjoint is zero)
    item = g[key]
    return zeros_like(like) if item is None else item


def filled(g, like):
    """The container adjoint `g` with its unset (None) slots made zeros like `like`'s."""
    if isinstance(g, (tuple, list)):
        if isinstance(g, list) and len(g) < len(like):   # a list adjoint's missing tail
            g = list(g) + [None] * (len(like) - len(g))
        items = [zeros_like(l) if v is None else filled(v, l) for v, l in zip(g, like)]
        return type(g)(items) if not isinstance(g, tuple) or not hasattr(g, "_fields") \
            else type(g)(*items)
    if isinstance(g, dict):
        return {k: zeros_like(like[k]) if v is None else filled(v, like[k])
                for k, v in g.items()}
    return g


def add(a, b):
    """Adjoint accumulation `a + b`, elementwise through containers (never concatenation).

    None and ZeroList stand for zero, at any depth."""
    if type(a) in _ARRAY_TYPES and type(b) in _ARRAY_TYPES:
        return a + b
    if a is None or isinstance(a, ZeroList):
        return b
    if b is None or isinstance(b, ZeroList):
        return a
    if type(a) is MissingDerivative or type(b) is MissingDerivative:
        return a if type(a) is MissingDerivative else b     # a sum with a missing term
    if isinstance(a, tuple):
        items = [add(x, y) for x, y in zip(a, b)]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    if isinstance(a, list):
        # lists grow as a function runs: the adjoint of an older, shorter version of a list
        # has a missing tail, which is zero
        if len(a) < len(b):
            a, b = b, a
        return [add(x, y) for x, y in zip(a, b)] + list(a[len(b):])
    if isinstance(a, dict):   # dicts grow as a function runs: keys missing on a side are 0
        return {k: add(a.get(k), b.get(k)) for k in {**a, **b}}
    if type(a) in VSPACES:
        return VSPACES[type(a)](a).add(a, b)
    return a + b


def _finish_leaf(g, x):
    if not is_float_leaf(x):
        return None  # integers, bools, strings, None: no derivative
    if type(g) is MissingDerivative:
        raise g.error()
    if g is None:
        return _zeros_leaf(x)
    if type(x) is complex:
        return complex(np.sum(g)) if np.ndim(g) else complex(g)
    if np.iscomplexobj(g) and not np.iscomplexobj(x):
        # A real input moves only along the real axis: its gradient is the real part of the
        # complex cotangent that reached it (as in JAX), never a complex number.
        g = np.real(g)
    if type(x) is float:
        return float(np.sum(g)) if np.ndim(g) else float(g)
    if isinstance(x, np.generic):       # a numpy scalar: one of its own type and dtype
        return _finish_leaf(g, np.asarray(x))[()]
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return g
    xp = array_module(x, g)
    g = xp.asarray(g)
    if g.shape != np.shape(x):
        g = xp.broadcast_to(g, np.shape(x))
    if g.dtype != dtype and dtype.kind in "fc":
        g = g.astype(dtype)
    elif read_only(g):
        g = g.copy()
    return g


def as_grad(g, x):
    """Finish the adjoint `g` of input `x`: same structure, shape and dtype as `x`."""
    if type(x) is np.ndarray and type(g) is np.ndarray and g.dtype == x.dtype and \
            g.shape == x.shape and g.flags.writeable:
        return g
    if type(x) is float and type(g) in _ARRAY_TYPES and np.ndim(g) == 0 and \
            (type(g) is not np.ndarray or g.dtype.kind != "c"):
        return float(g)
    return _finish_tree(g, x)


def _finish_tree(g, x):
    if type(x) is np.ndarray and type(g) is np.ndarray and g.dtype == x.dtype and \
            g.shape == x.shape and g.flags.writeable:
        return g
    if isinstance(x, tuple):
        items = [_finish_tree(None if g is None else g[i], xi) for i, xi in enumerate(x)]
        return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
    if isinstance(x, list):
        return [_finish_tree(None if g is None else g[i], xi) for i, xi in enumerate(x)]
    if isinstance(x, dict):
        out = {k: _finish_tree(None if g is None else g[k], v) for k, v in x.items()}
        return collections.OrderedDict(out) if type(x) is collections.OrderedDict else out
    return _finish_leaf(g, x)


def _keyed(seq):
    """A dict, set or keys view: Python's loop over it gives keys, its indexing (if any)
    does not."""
    return isinstance(seq, (dict, set, frozenset)) or type(seq).__name__ == "dict_keys"


def loop_sequence(seq, where):
    """What a `for` loop of transformed code walks: it is lowered to `seq[i]` for i in
    range(len(seq)), so a dict, set or keys view is walked as the list of what Python's
    loop gives (keys, in its order); anything else as it is."""
    if _keyed(seq):
        return list(seq)
    if type(seq).__name__ in ("dict_values", "dict_items"):
        raise located(where, f"a for loop over a {type(seq).__name__} object passed in is not "
                      "supported in transformed code.",
                      "pass the dict and loop over d.values() or d.items() in the function.")
    return seq


def loop_sequence_adj(g, seq):
    """The adjoint of loop_sequence: `g` for what is walked as it is; none (zero) for a
    dict's keys or a set's items."""
    return None if _keyed(seq) else g


def loop_sequence_tangent(t, seq):
    """The tangent of loop_sequence: `t`, or for the keys of a dict (or a set's items), one
    None per key (keys carry no tangent, and the loop reads one per trip)."""
    return [None] * len(seq) if _keyed(seq) else t


def check_record_fields(values, names, depth=0, budget=None):
    """Transformed code reads the array attributes `names` (`x.shape`, `x.T`) as numpy's
    (np.shape(x)): a namedtuple among the arguments with a field of such a name would be
    read as an array there. Refused, naming the field. (The first 256 items of nested
    containers are looked at: a longer list is data.)"""
    budget = budget if budget is not None else [256]
    for value in values:
        budget[0] -= 1
        if budget[0] < 0:
            return
        if isinstance(value, tuple) and hasattr(type(value), "_fields"):
            clash = sorted(set(type(value)._fields) & set(names))
            if clash:
                raise TransformError(
                    f"{type(value).__name__} has a field '{clash[0]}', and the transformed "
                    f"code reads '.{clash[0]}' of its arguments as an array's attribute.\n"
                    f"  hint: rename the field, or read it by position.")
        if isinstance(value, (tuple, list)) and depth < 4:
            check_record_fields(value, names, depth + 1, budget)
        elif isinstance(value, dict) and depth < 4:
            check_record_fields(tuple(value.values()), names, depth + 1, budget)


def check_keys(mapping, keys, where):
    """`f(**kw)` of a dict the code made with these keys (`kw = {"a": x, "b": y}`), read as
    f(a=kw["a"], b=kw["b"]): a dict whose keys changed since (an item added or removed)
    would make another call."""
    if tuple(mapping) != tuple(keys):
        raise located(where, f"the dict unpacked by ** has the keys {tuple(mapping)!r} here; "
                      f"the code was made for the keys {tuple(keys)!r} it was written with.",
                      "pass the keywords one by one, or build the dict with all its keys "
                      "in one display.")


def check_length(seq, n, where, at_least=False, what="zip"):
    """Refuse `for a, b, c in zip(*seq)` where `seq` has other than 3 items: the loop is
    lowered to zip(seq[0], seq[1], seq[2]), which is Python's loop only for such a `seq`
    (with another length Python's unpacking fails too, unless the loop never runs).
    at_least: `zip(layers, params)` unrolled once per layer, which needs as many params.
    what="unpacking": `a, *rest, b = seq`, read as seq[0], seq[1:-1], seq[-1], needs two.
    what="jvp": tp.jvp(f, primals, tangents) in transformed code, one of them a tuple
    whose length the other gives (read as primals[0], ..., primals[n-1])."""
    if what == "jvp" and len(seq) != n:
        raise located(where, f"tp.jvp got {len(seq)} primals or tangents where the other "
                      f"tuple has {n}.", "give one tangent for each primal.")
    if what == "unpacking" and len(seq) < n:
        raise located(where, f"not enough values to unpack (expected at least {n}, got "
                      f"{len(seq)})", "unpack a sequence with an item for each name without "
                      "a star.")
    if at_least and len(seq) < n:
        raise located(where, f"zip of {n} functions or models with a sequence of "
                      f"{len(seq)} items: transformed code runs the loop once per function.",
                      "pass as many items as there are functions (Python would stop at the "
                      "shorter one).")
    if not at_least and len(seq) != n:
        raise located(where, f"zip(*x) of an x with {len(seq)} items, unpacked into {n} "
                      "names.", "unpack as many names as x has items.")


def holds_array(value, outer=0):
    """Whether `value op= v` writes into `value` (an array or a list) rather than binding
    the name anew (a number). Under vmap, `outer` says how many leading axes are the
    batch's (a number per example)."""
    lead = outer if isinstance(outer, int) else sum(outer[0])
    if isinstance(value, np.ndarray) and not lead:
        return True                  # a 0-d numpy array too: `op=` writes into it
    # (numpy's x[0] of a 1-d x is a number, cupy's a 0-d array: the code means numpy's)
    return type(value) is list or np.ndim(value) > lead


def number_only(value, name, op, other, where, outer=0):
    """`name op= v`, where the transformer could not tell whether `name` holds a number
    (then `op=` binds it anew: the value passes through) or an array (then NumPy updates
    it in place, and `other`, which may share its memory, would see the change: an error,
    raised here). `other`: "'y'", a name read afterwards, or "global 'K'", the caller's
    array. Under vmap, `outer` says how many leading axes are the batch's (a number per
    example)."""
    if holds_array(value, outer):
        if other.startswith(("global", "parameter")):
            message = (f"[aliasing] '{name}' holds an array here, so `{name} {op}= ...` "
                       f"writes into it in place, and it may be an array the caller can see "
                       f"({other}, or a view of it), which transformed code cannot change.")
        else:
            message = (f"[aliasing] '{name}' holds an array here, so `{name} {op}= ...` "
                       f"updates it in place, and {other}, which may be the same array or "
                       "share its memory, sees the change when it is used afterwards; "
                       "transformed code cannot follow that.")
        raise located(where, message,
                      f"write {name} = {name} {op} ... to make a new value, or copy the "
                      "array first, so that each name owns its data.")
    return value


def type_of(obj):
    """`type(obj)` in transformed code, which holds an object of a registered class as its
    stand-in (a namedtuple or tuple class naming the class in `__transpile_class__`)."""
    return getattr(type(obj), "__transpile_class__", type(obj))


def is_instance(obj, classinfo):
    """`isinstance(obj, classinfo)` in transformed code, where a stand-in is an instance
    of the class it stands for (see type_of)."""
    if isinstance(obj, classinfo):
        return True
    stands_for = getattr(type(obj), "__transpile_class__", None)
    return stands_for is not None and issubclass(stands_for, classinfo)


def check_instance(value, cls, where):
    """A field whose class transformed code took from its annotation (`layer: Layer` of a
    NamedTuple model, whose `layer.apply` it calls as Layer.apply) holds one."""
    if not is_instance(value, cls):
        raise located(where, f"a field annotated {cls.__name__} holds an instance of "
                      f"{type(value).__name__}: transformed code calls {cls.__name__}'s "
                      "methods for it.", "make the annotation say the field's class.")


def check_float_input(x, name, where):
    """Reject differentiation with respect to a non-float value (ints, bools, strings)."""
    t = type(x)
    if t is float or (t is np.ndarray and x.dtype.kind in "fc"):
        return
    if (t is list or t is tuple) and all(
            type(v) is np.ndarray and v.dtype.kind in "fc" or type(v) is float or
            (type(v) is tuple or type(v) is list) and all(
                type(w) is np.ndarray and w.dtype.kind in "fc" for w in v) for v in x):
        return   # a list of layers of float arrays: the common case, checked quickly
    for leaf in tree_leaves(x):
        if not is_float_leaf(leaf) and leaf is not None:    # (None: a node without leaves)
            dtype = getattr(leaf, "dtype", None)
            raise located(where, f"argument '{name}' is differentiated but holds a value of "
                          f"type {type(leaf).__name__}"
                          f"{'' if dtype is None else ' with dtype ' + str(dtype)}, which has "
                          "no derivative.", "pass floats (e.g. x.astype(float) or 1.0 instead "
                          "of 1), or leave this argument out of argnums.")


def check_complex_input(x, name, where):
    """grad(..., holomorphic=True) differentiates complex arguments only (as JAX does): a
    real one would get the derivative of a function that is not holomorphic in it."""
    for leaf in tree_leaves(x):
        dtype = getattr(leaf, "dtype", None)
        if not (isinstance(leaf, complex) or dtype is not None and dtype.kind == "c"):
            raise located(where, f"argument '{name}' is differentiated with holomorphic=True "
                          f"but holds a value of type {type(leaf).__name__}"
                          f"{'' if dtype is None else ' with dtype ' + str(dtype)}.",
                          "pass complex arrays (x.astype(complex)), or drop "
                          "holomorphic=True.")


def pop_adjoint(adjoints, value):
    """Adjoint of `stack.append(value)`: the top of the adjoint stack, or zero if the code
    being differentiated never popped that value (its bottom-of-stack leftovers)."""
    item = adjoints.pop() if adjoints else None
    if item is None:   # nothing saved, or a placeholder saved before the value existed
        return 0.0 if value is None else zeros_like(value)
    return item


def push(stack, value):
    """Save `value` for the backward pass (generated code's stacks are plain lists)."""
    stack.append(value)


def pop(stack):
    return stack.pop()


def scan_length(xs, length, outer=0):
    """The number of steps of tp.lax.scan: `length`, or the leading axis of xs' first leaf
    (after `outer` batch axes: the same in every example)."""
    if length is not None:
        return length
    leaves = [leaf for leaf in tree_leaves(xs) if leaf is not None]   # (dicts too)
    return np.shape(leaves[0])[outer]


def _leafwise(fn, tree, *rest):
    """fn on every leaf of `tree` (tuples, lists, dicts), None leaves staying None."""
    return tree_map(lambda leaf, *r: None if leaf is None else fn(leaf, *r), tree, *rest)


def tree_stack(trees, axis=0):
    """A list of trees of one structure as one tree whose leaves are stacked along `axis`
    (tp.lax.scan's outputs)."""
    if not trees:
        return None
    xp = array_module(*[leaf for t in trees for leaf in tree_leaves(t) if leaf is not None])
    return tree_map(lambda *leaves: None if leaves[0] is None else
                    xp.stack([xp.asarray(v) for v in leaves], axis), *trees)


def tree_step_like(tree, axis=0):
    """Ones shaped as one slice along `axis` of every leaf: the input of a step that
    tp.lax.scan takes over zero steps for the shapes of its outputs only (ones, where most
    functions are defined)."""
    return _leafwise(lambda leaf: array_module(leaf).ones(
        np.shape(leaf)[:axis] + np.shape(leaf)[axis + 1:], dtype=np.result_type(leaf)), tree)


def tree_stack_empty(tree, axis=0):
    """Every leaf stacked zero times along `axis`: tp.lax.scan's outputs over zero steps,
    shaped as the steps would stack them (`tree`: one step's outputs)."""
    return _leafwise(lambda leaf: array_module(leaf).zeros(
        np.shape(leaf)[:axis] + (0,) + np.shape(leaf)[axis:], dtype=np.result_type(leaf)),
        tree)


def tree_unstack(tree, like, axis=0):
    """The adjoint of `tree_stack`: a list (as long as `like`) of the slices of each leaf."""
    xp = array_module(*[leaf for leaf in tree_leaves(tree) if leaf is not None])
    return [_leafwise(lambda leaf: xp.take(leaf, i, axis=axis), tree) for i in range(len(like))]


def sorted_keys(d):
    """The keys of dict `d` in the order JAX's pytrees give its children: sorted, but an
    OrderedDict's in their order."""
    if isinstance(d, collections.OrderedDict):
        return list(d)
    return sorted(d, key=lambda k: ("", k) if isinstance(k, (int, float)) else
                  (type(k).__name__, k))


def tree_skeleton(structure):
    """What transformed code rebuilds a pytree from (tp.tree_unflatten): the nest of
    containers of a tree (the structure transformed code carries) or of a structure made in
    plain code (tp.tree_util.PyTreeDef), with 0 for each leaf: small, and the same in every
    example under vmap."""
    if not all(hasattr(structure, a) for a in ("kind", "aux", "children", "num_leaves")):
        return _skeleton_of_tree(structure)
    kind = structure.kind
    children = [tree_skeleton(c) for c in structure.children]
    if isinstance(kind, str) and kind == "leaf":
        return 0
    if kind is None:
        return None
    if kind is dict:
        return dict(zip(structure.aux, children))
    if kind is tuple or kind is list:
        return kind(children)
    if isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields"):
        return kind(*children)
    raise TransformError(f"a pytree with nodes of the registered class "
                         f"{getattr(kind, '__name__', kind)} cannot be rebuilt in transformed "
                         "code (only tuples, lists, dicts, namedtuples and None can).\n  "
                         "hint: unflatten it outside the transformed function.")


def attribute(obj, name):
    """`obj.name` in transformed code: a namedtuple's field (whose rules follow it as they
    follow `obj[position]`), or an attribute of a plain object (a model, a config), data
    that carries no derivative. Arrays are read through their own attributes (T, shape,
    ...) only: `x.real` of an array is np.real(x), which has a derivative."""
    if isinstance(obj, (tuple, list, dict)) and getattr(type(obj), "_fields", None) is None \
            or isinstance(obj, (np.ndarray, np.generic)) or type(obj).__module__ == "cupy":
        field_index(obj, name)          # raises, naming what transformed code reads
    return getattr(obj, name)


def field_index(obj, name):
    """The position of field `name` of namedtuple `obj`: transformed code reads `obj.name`
    as `obj[position]`."""
    fields = getattr(type(obj), "_fields", None)
    if not isinstance(obj, tuple) or fields is None or name not in fields:
        raise TransformError(
            f"'.{name}' is read from a value of type {type(obj).__name__} here; transformed "
            "code reads the fields of namedtuples (and the array attributes T, shape, ndim, "
            "size, dtype, real, imag) only.\n  hint: pass the field's value as an argument, "
            "or make the object a namedtuple.")
    return fields.index(name)


def check_structure(tree, structure, what):
    """Raise ValueError unless `tree` has the structure `structure` (a tree or a
    tp.tree_util.PyTreeDef) describes; `what` names the check."""
    try:
        expected = tree_skeleton(structure)
    except TransformError:      # registered classes: their structure is not known here
        return
    if tree_skeleton(tree) != expected:
        raise ValueError(f"{what}: a tree of structure {tree_skeleton(tree)} where "
                         f"{expected} was expected (0 stands for a leaf)")


def _skeleton_of_tree(tree):
    if tree is None:
        return None
    if isinstance(tree, dict):
        return {k: _skeleton_of_tree(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return rebuild_like(tree, [_skeleton_of_tree(v) for v in tree])
    return 0


def rebuild_like(like, items):
    """A tuple or list (or namedtuple, such as an optimizer's state) of the type of `like`,
    holding `items`."""
    items = list(items)
    if hasattr(like, "_fields"):
        return type(like)(*items)
    return type(like)(items)


def tree_index(tree, i, axis=0):
    """Every leaf's slice i along `axis` (tp.lax.scan's inputs of one step)."""
    return _leafwise(lambda leaf: array_module(leaf).take(leaf, i, axis=axis), tree)


def tree_index_adj(g, tree, i, axis=0):
    """The adjoint of `tree_index`: zeros shaped like `tree`, with slice i set to g's."""
    def leaf(x, gx):
        xp = array_module(x)
        out = xp.zeros(np.shape(x), dtype=np.result_type(x, gx, np.float64) if
                       np.iscomplexobj(gx) else np.result_type(x, np.float64))
        index = (slice(None),) * axis + (i,)
        if gx is not None:
            out[index] = gx
        return out
    return tree_map(lambda x, gx: None if x is None else leaf(x, gx), tree,
                    _like_tree(g, tree))


def _like_tree(g, tree):
    if g is None and is_container(tree):
        return tree_map(lambda _: None, tree)
    return g


def tree_vdot(a, b):
    """Sum over matching leaves of np.sum(a * b): the inner product of two pytrees. None
    is zero at any depth: an adjoint leaves the slots of values never read unset, a whole
    subtree of them included (`(da, None)` against `(x, (y, z))`)."""
    if a is None or b is None:
        return 0.0
    if isinstance(a, (tuple, list)):
        return sum((tree_vdot(x, y) for x, y in zip(a, b)), 0.0)
    if isinstance(a, dict):
        return sum((tree_vdot(a[k], b[k]) for k in a), 0.0)
    return np.sum(a * b)


def tree_scale(x, s):
    """Every leaf of `x` times the scalar `s`."""
    if isinstance(x, (tuple, list)):
        return rebuild_like(x, (tree_scale(v, s) for v in x))
    if isinstance(x, dict):
        return {k: tree_scale(v, s) for k, v in x.items()}
    return None if x is None else x * s


def check_vjp_rule_result(value, n, function, rule, where):
    """Refuse what the `rule` ("fwd" or "bwd") of custom_vjp `function` returned unless it
    is a tuple of `n` items (fwd: (out, saved); bwd: one cotangent per argument), before
    generated code unpacks it. `where` is the rule's definition."""
    if isinstance(value, (tuple, list)) and len(value) == n:
        return
    found = f"a {type(value).__name__} of {len(value)} items" if \
        isinstance(value, (tuple, list)) else f"a {type(value).__name__}"
    kind = "custom_jvp" if rule == "jvp" else "custom_vjp"
    head = f"the {rule} rule of {kind} function {function} returned {found}"
    if rule == "jvp":
        raise located(where, f"{head}; a jvp rule must return a pair (out, out_tangent).",
                      "return the function's output with its tangent: `return f(x), "
                      "np.cos(x) * t`.")
    if rule == "fwd":
        raise located(where, f"{head}; a fwd rule must return a pair (out, saved).",
                      "return the function's output and what bwd needs: `return out, "
                      "(x, y)`.")
    raise located(where, f"{head}; a bwd rule must return a tuple with one cotangent per "
                  f"primal argument of {function} ({n} here).",
                  "return `(dx,)`, not `dx`, for a function of one argument; None for an "
                  "argument that gets no cotangent.")


def copy_stack(stack):
    """A shallow copy of a list: of a stack of saved values, so popping it leaves the
    original intact, or of a user's list saved for the backward pass, which the forward
    pass goes on appending to. None (a list not made yet, saved before its first trip)
    stays None."""
    return None if stack is None else list(stack)


def sorted_order(keys, reverse=False):
    """The positions of `keys` in the order Python's sorted() puts them (stable; with
    reverse, stable as sorted(..., reverse=True) is): transformed code's sorted(xs) picks
    xs's items in this order."""
    return sorted(range(len(keys)), key=keys.__getitem__, reverse=bool(reverse))
