"""Annotations the passes attach to AST nodes, as an Enum that documents itself."""
import copy as _copying
import enum


class Anno(enum.Enum):
    PRIM = "the Primitive a call, operator or subscript node denotes"
    CALLEE = "IR name of the user function a call node calls"
    COND_LEN = "on a While: how many statements at the end of its body recompute its test"
    ORIGIN = "the user-source node a generated node was made from (for line comments)"
    STACK = "on a push or pop statement: this list is a stack of saved values"
    INPLACE = "on `x = x op v` made from `x op= v`: the operator symbol (in place on arrays)"
    MIRROR = ("on a backward statement: when the primal values it reads must be as the forward "
              "pass left them: ('after', s), ('before', s) for a forward statement s, "
              "'start' or 'end'")
    ADJOINT_OF = "on a backward statement: it computes an adjoint (emit labels its line so)"
    LOOP_OF = "on the header of a backward loop: id() of the forward loop it undoes"
    NO_SAVE = ("on a forward statement: what it assigns is read once, after its loop (a trip "
               "counter), so it needs no saving")
    SOURCE = "on a generated FunctionDef: the parse.Source of the user function it is made from"
    SHARES_MEMORY = ("on an in-place write `x[i] = v`: the other names that may share x's "
                     "memory there (views of x, x a view of them)")


# Annotations a copy of a node shares: ORIGIN points at a node of the user's source (for
# line comments), PRIM at the table's Primitive (its rule templates), SOURCE at the parsed
# user file: copying would duplicate all they hold, at every copy of a node.
_SHARED = (Anno.ORIGIN, Anno.PRIM, Anno.SOURCE)


class _Annotations(dict):
    """A node's annotations. A deep copy of the node copies them, except _SHARED ones."""

    def __deepcopy__(self, memo):
        new = _Annotations()
        for key, value in self.items():
            new[key] = value if key in _SHARED else _copying.deepcopy(value, memo)
        return new


def set(node, key, value):  # noqa: A001 - mirrors getattr/setattr naming
    annos = node.__dict__.setdefault("_transpile_anno", _Annotations())
    annos[key] = value


def get(node, key, default=None):
    return node.__dict__.get("_transpile_anno", {}).get(key, default)


def copy(src, dst):
    annos = src.__dict__.get("_transpile_anno")
    if annos:
        dst.__dict__["_transpile_anno"] = _Annotations(annos)
    return dst
