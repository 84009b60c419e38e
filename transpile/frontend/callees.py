"""What the front end asks about the objects a transformed function calls.

Normalizing `y = tp.grad(g)(x)` or a call of a function that is already transformed needs
answers that only the API layer has: is this object a transformation, what does this
transformed function take, and the Python function for an IR function that a nested
transformation is applied to. The API layer (api.py) answers through a `Callees` handed
down with each `Program`, so the front end never imports the layers above it, and
generating a callee's code stays the pipeline's decision.

The base class knows nothing: a Program made without the API layer (a unit test of the
front end) treats every such object as unknown.
"""


class TransformedCall:
    """How generated code calls a function that is already transformed: its entry function
    (plain Python with source), the values bound before the user's arguments (a partial)
    and after them (closure values), and the defaults of the user's parameters."""

    def __init__(self, entry_function, prefix, extra, defaults):
        self.entry_function = entry_function
        self.prefix = list(prefix)
        self.extra = list(extra)
        self.defaults = defaults


class Callees:
    def transformation(self, value):
        """The name of the transformation `value` is ("grad", "vmap", "jvp", ...), else
        None. Applying one is calling it."""
        return None

    def transformation_named(self, name):
        """The API function of transformation `name` ("grad"), else None."""
        return None

    def transformed_call(self, value, nargs=None, keywords=()):
        """A TransformedCall for a transformed function, else None (`nargs`: the number of
        arguments the call gives, for a function with *args; with `keywords`, the names it
        passes, for a vmap whose one int in_axes maps only the arguments passed)."""
        return None

    def stand_in_class(self, value):
        """The namedtuple transformed code holds in place of registered dataclass `value`
        (a class), else None."""
        return None

    def jvp_of(self, fn, options, nargs=None):
        """The forward-mode transformed function that `tp.jvp(fn, primals, tangents)`
        inside transformed code calls (a value `transformed_call` knows)."""
        raise NotImplementedError("tp.jvp inside transformed code needs the API layer")

    def compile(self, program, ir_name):
        """A Python function (with source) computing IR function `ir_name` of `program`,
        for a transformation applied to a nested function."""
        raise NotImplementedError("nested transformations need the API layer")

    def grad(self, fn, argnums):
        """tp.grad(fn, argnums): the pipeline transposes a custom_jvp rule with it."""
        raise NotImplementedError("custom_jvp in reverse mode needs the API layer")

    def vmap(self, fn, in_axes, out_axes, axis_name):
        """tp.vmap(fn, ...): the pipeline batches a custom rule's rules with it."""
        raise NotImplementedError("custom rules under vmap need the API layer")
