"""Batching a call: the primitive's rule from the table (elementwise, a template, a helper
taking `outer`, collectives), or the batched variant of a user function.

`CallRules` is a part of `statements.Batching`, kept here so that the rules for calls read
on their own; it uses the pass's `expr_spec`, `error`, `convert` and `getitem`."""
import ast
import copy as _copy
import inspect

import gast

import runtime
from ..errors import TransformError
from ..ir import anno
from ..ir.anno import Anno
from ..ir.nodes import call, const, name
from ..ir.templates import as_index_value, bind_call, dotted, substitute
from .specs import batched, literal_ast
from .templates import UndecidedTest, fold_static, fold_static_ifs


class CallRules:
    """How `Batching` rewrites a call (see the module docstring)."""

    def value(self, s, v, target):
        """(expression, spec) for the right-hand side `v` of statement `s`."""
        spec = self.expr_spec(v)
        if isinstance(v, (gast.Name, gast.Constant, gast.Tuple, gast.List, gast.Dict)):
            if isinstance(v, gast.Dict) and batched(spec):
                v = _copy.deepcopy(v)
                v.values = [self.convert(e, self.expr_spec(e), True) for e in v.values]
            return v, spec
        if isinstance(v, gast.Subscript):
            return self.getitem(s, v), spec
        callee = anno.get(v, Anno.CALLEE)
        args = operands(v)
        if callee:
            specs = tuple(self.expr_spec(a) for a in v.args)
            if not any(batched(x) for x in specs) and not self.meets_the_examples(callee):
                return v, False
            fname, result = self.callee_batched(callee, specs)
            new = gast.Call(func=name(fname), args=[name(self.size)] + list(v.args),
                            keywords=[])
            anno.set(new, Anno.CALLEE, fname)
            return new, result
        found = anno.get(v, Anno.PRIM)
        spelling = found[1] if found else None
        if spelling in COLLECTIVES:
            return self.collective(s, v, spelling), spec
        if self._part_of(v, spelling) is not None:
            return self.part(v), spec
        if self._namedtuple_made(v, spelling) is not None:
            return v, spec        # its fields as they are (each with its own spec)
        if self._field_of(v, spelling) is not None and \
                isinstance(self.expr_spec(v.args[0]), tuple):
            return v, spec        # a field of such a namedtuple, read as it is
        if self._element_of(v, spelling) is not None:
            return v, spec        # an element of a container, with its own spec
        if spelling == "rt.lane_index":
            # a tuple index, per example where `index` is batched; for an array batched
            # again, the aranges it makes (advanced indices apart) span the inner batch
            # axes, after this one
            if self.expr_spec(v.args[0]) is True:
                v = self._one_more_outer(v)
            return v, spec
        if spelling in ("rt.lane_scatter_index", "rt.lane_key") and spec:
            return self.each_lane(v, spelling), spec    # each outer example's own rows
        if self._lane_indexed(v, spelling):
            new = self.each_lane(v, spelling)
            if spec is False:      # the same for every example (a shape): checked, once
                new = call("rt.uniform_lanes", [new, const(True), const(spelling),
                                                const("index")])
            return new, spec
        if not any(batched(self.expr_spec(a)) for a in args) and not is_random(v):
            return v, False
        prim = found[0] if found else None
        if prim is None or prim.batch is None:
            what = spelling or gast.unparse(v) if hasattr(gast, "unparse") else spelling
            raise self.error(s, f"{what} has no batching rule.",
                             f"add one in transpile/rules/ next to its derivative rules "
                             f"(@batch(\"{spelling}\"), or batch_elementwise/batch_same; see "
                             "docs/adding_a_primitive.md).")
        rule = prim.batch_for.get(spelling) or prim.batch
        if rule.kind == "same":
            return v, spec
        if rule.kind == "elementwise":
            return self.elementwise(s, v, rule), spec
        if rule.kind == "lanes":
            return self.lanes(s, v, spelling, rule), spec
        if rule.kind == "axis_size":
            return self.axis_size(s, v), spec
        if rule.kind == "unsupported":
            raise self.error(s, f"{spelling} cannot be batched again (vmap of vmap of code "
                             "that indexes with per-example indices).")
        return self.template(s, v, prim, spelling, rule), spec

    def elementwise(self, s, v, rule):
        """Align batched operands with the others, then the same operation broadcasts."""
        v = _copy.deepcopy(v)
        if isinstance(v, gast.BinOp):
            v.left, v.right = self._aligned([v.left, v.right])
            return v
        if isinstance(v, gast.Compare):
            ops = self._aligned([v.left] + v.comparators)
            v.left, v.comparators = ops[0], ops[1:]
            return v
        if isinstance(v, gast.UnaryOp):
            if isinstance(v.op, gast.Not):
                return call("np.logical_not", [v.operand])
            return v
        positional = list(v.args)
        kw = [k.value for k in v.keywords]
        ops = self._aligned(positional + kw)
        new = call(rule.vectorized, ops[:len(positional)])
        new.keywords = [gast.keyword(arg=k.arg, value=o)
                        for k, o in zip(v.keywords, ops[len(positional):])]
        return new

    def _aligned(self, operands):
        arrays = [o for o in operands if not isinstance(o, gast.Constant) and not
                  (isinstance(o, gast.Name) and o.id in self.ints)]
        if len(arrays) < 2:
            return operands
        out = []
        for o in operands:
            if isinstance(o, gast.Constant) or not batched(self.expr_spec(o)):
                out.append(o)
                continue
            others = [a for a in arrays if a is not o and not _same_name(a, o)]
            plain = [_copy.deepcopy(a) for a in others if not batched(self.expr_spec(a))]
            lanes = [_copy.deepcopy(a) for a in others if batched(self.expr_spec(a))]
            new = o
            for a in plain:
                new = call("rt.align", [new, a])
            for a in lanes:
                new = call("rt.align_lanes", [new, a])
            out.append(new)
        return out

    def template(self, s, v, prim, spelling, rule):
        tpl = rule.template
        actual = bind_call(tpl, spelling, v, skip=0, rule="batching rule")
        if isinstance(actual, str):
            raise self.error(s, f"{spelling}: {actual}")
        mapping = {"batch_size": name(self.size)}
        for p in tpl.params:
            mapping[p] = actual[p]
            mapping[p + "_batched"] = const(batched(self.expr_spec(actual[p])))
            mapping[p + "_spec"] = literal_ast(self.expr_spec(actual[p]))
        try:
            body = fold_static_ifs([substitute(st, mapping, {}, {}) for st in tpl.body])
        except UndecidedTest as undecided:
            raise self.error(s, f"the batching rule of {spelling} branches on `{undecided}`, "
                             "which is not known when the code is generated.",
                             "a batching template may branch only on `<param>_batched`, on "
                             "`<param> is None` (or ==, != a literal) where the argument is a "
                             "literal at the call, and on not/and/or of those; pass that "
                             "argument as a literal, or move the case analysis into a "
                             "runtime helper.") from None
        if len(body) != 1 or not isinstance(body[-1], gast.Assign) or \
                body[-1].targets[0].id != "out":
            raise TransformError(f"the batching rule of {spelling} must come down to one "
                                 "statement `out = ...` once its `if`s are decided.\n  hint: "
                                 "see docs/adding_a_primitive.md, section 9.")
        return fold_static(body[-1].value)

    def _bound(self, v, spelling):
        fn = getattr(runtime, spelling.split(".", 1)[1])
        sig = inspect.signature(fn)
        return sig, sig.bind_partial(*v.args, **{k.arg: k.value for k in v.keywords})

    def _one_more_outer(self, v):
        """Call `v` (a runtime helper taking `outer` by name) told one more outer batch
        axis leads."""
        v = _copy.deepcopy(v)
        kept = [k for k in v.keywords if k.arg != "outer"]
        before = [k.value for k in v.keywords if k.arg == "outer"]
        outer = self.literal(before[0]) if before else const(0)
        if not (isinstance(outer, gast.Constant) and isinstance(outer.value, int)):
            raise TransformError(f"internal: {dotted(v.func)} with outer={gast.unparse(outer)}")
        v.keywords = kept + [gast.keyword(arg="outer", value=const(outer.value + 1))]
        return v

    def lanes(self, s, v, spelling, rule):
        """A helper taking `outer`: its unbatched array arguments get this batch axis too,
        and it is told one more outer axis leads (runtime/batching.py)."""
        sig, bound = self._bound(v, spelling)
        if any(batched(self.expr_spec(bound.arguments[p])) for p in bound.arguments
               if p not in rule.arrays and p not in ("outer", "outer_adj", rule.param)):
            return self.each_lane(v, spelling)     # a per-example index: example by example
        each = rule.each
        args, flags, keywords, skipped = [], [], [], False
        for p in sig.parameters:
            if p in ("outer", "outer_adj", rule.param):
                continue
            if p not in bound.arguments:
                skipped = True          # the ones after a default left out go by name
                continue
            a = bound.arguments[p]
            if p in rule.arrays:
                spec = self.expr_spec(a)
                carried = batched(spec)
                flags.append(int(carried))
                if not each and isinstance(spec, tuple) and carried:
                    # a list some of whose elements are batched: batch the others
                    a = call("rt.broadcast_batch", [a, name(self.size), literal_ast(spec)])
                elif not each and not carried and not isinstance(a, gast.Constant):
                    # helpers only read their arguments: a view, not a copy per example
                    a = call("rt.batch_view", [a, name(self.size)])
            if skipped:
                keywords.append(gast.keyword(arg=p, value=a))
            else:
                args.append(a)
        param = rule.param
        if param == "outer_adj" and "outer" in bound.arguments:
            if skipped:
                keywords.append(gast.keyword(arg="outer", value=bound.arguments["outer"]))
            else:
                args.append(bound.arguments["outer"])
        outer = self.literal(bound.arguments.get(param, const(0)))
        if isinstance(outer, gast.Constant) and outer.value == ():
            outer = const(0)
        new = call(spelling, args)
        if not isinstance(outer, (gast.Constant, gast.Tuple)):
            # a name the code saved (a helper of a backward pass): the same, at run time
            value = call("rt.outer_frames", [outer] + ([literal_ast(tuple(flags))] if each
                                                       else []))
        elif each:
            old = ast.literal_eval(gast.unparse(outer)) if isinstance(outer, gast.Tuple) \
                else outer.value
            before = runtime.batching.frames(old, len(flags))
            value = literal_ast(tuple((f,) + tuple(b) for f, b in zip(flags, before)))
        elif isinstance(outer, gast.Tuple):      # per-argument frames, all now batched
            old = ast.literal_eval(gast.unparse(outer))
            value = literal_ast(tuple((1,) + tuple(f) for f in old))
        else:
            value = const(outer.value + 1)
        new.keywords = keywords + [gast.keyword(arg=param, value=value)]
        return new

    def literal(self, node, depth=0):
        """`node` with names bound once to literals (`tuple_ = 1, 0`, as generated code
        transformed again spells a tuple literal) replaced by them; as it is otherwise."""
        if node is None or depth > 20:
            return node
        if isinstance(node, gast.Name):
            found = self.literals.get(node.id)
            if found is None:
                return node
            got = self.literal(found, depth + 1)
            return got if _is_literal(got) else node
        if isinstance(node, gast.Tuple):
            elts = [self.literal(e, depth + 1) for e in node.elts]
            if all(_is_literal(e) for e in elts):
                return gast.Tuple(elts=elts, ctx=gast.Load())
        return node

    def each_lane(self, v, spelling):
        """`rt.each_lane(helper, n, flags, args...)`: the helper called once per example of
        this vmap (a Python loop), for helpers of an inner vmap given a per-example index."""
        flags = tuple(batched(self.expr_spec(a)) for a in v.args)
        new = call("rt.each_lane", [const(spelling), name(self.size), literal_ast(flags)] +
                   list(v.args))
        new.keywords = list(v.keywords)
        return new

    def _lane_indexed(self, v, spelling):
        """A helper of an inner vmap's code given an index it made (rt.lane_index) that
        this vmap batches: an index per outer example, which its rule cannot take."""
        return spelling is not None and spelling.startswith("rt.") and any(
            isinstance(a, gast.Name) and a.id in self.lane_indices and
            batched(self.expr_spec(a)) for a in list(v.args) + [k.value for k in v.keywords])

    def axis_size(self, s, v):
        """The inner batch size check of vmap of vmap: arguments this vmap batches have one
        more leading axis, which the check must skip."""
        sig, bound = self._bound(v, "rt.axis_size")
        args = bound.arguments["args"]
        spec = self.expr_spec(args)
        before = self.literal(bound.arguments.get("outer"))
        if isinstance(before, gast.Tuple):
            before = const(ast.literal_eval(gast.unparse(before)))
        n = len(spec) if isinstance(spec, tuple) else None
        if n is None:
            raise self.error(s, "internal: rt.axis_size of a value that is not a tuple")
        old = before.value if isinstance(before, gast.Constant) and before.value else (0,) * n
        leads = tuple(o + (1 if batched(p) else 0) for o, p in zip(old, spec))
        new = call("rt.axis_size", [bound.arguments[p] for p in
                                    ("args", "in_axes", "names", "given", "where")])
        new.keywords = [gast.keyword(arg="outer", value=literal_ast(leads))]
        return new

    def collective(self, s, v, spelling):
        axis = axis_name_of(v, spelling, self.literal)
        if isinstance(axis, tuple):
            return self.collective_over_names(s, v, spelling, axis)
        if axis != self.axis_name:
            return self.foreign_collective(v, spelling)
        if spelling == "rt.axis_index":
            return call("np.arange", [name(self.size)])
        _, bound = self._bound(v, spelling)
        x = bound.arguments["x"]
        if not batched(self.expr_spec(x)):
            # the same value in every example (in the dtype np.sum / np.mean give)
            if spelling == "rt.psum":
                return call("rt.psum_copies", [x, name(self.size)])
            if spelling == "rt.pmean":
                return gast.BinOp(left=x, op=gast.Mult(), right=const(1.0))
            if spelling in ("rt.pmax", "rt.pmin"):
                return x
            x = call("rt.broadcast_batch", [x, name(self.size)])
        if spelling in LANE_HELPERS:
            new = call(LANE_HELPERS[spelling], [x])
            new.keywords = [gast.keyword(arg=p, value=bound.arguments[p])
                            for p in COLLECTIVES[spelling] if p in bound.arguments]
            return new
        reducer = {"rt.psum": "np.sum", "rt.pmean": "np.mean", "rt.pmax": "np.max",
                   "rt.pmin": "np.min"}[spelling]
        new = call(reducer, [x])
        new.keywords = [gast.keyword(arg="axis", value=const(0))]
        return new

    def collective_over_names(self, s, v, spelling, names):
        """psum(x, ("i", "j")) and the like: the reduction over this vmap's axis, if named,
        then over the other names (left for the mappings that bind them)."""
        if self.axis_name not in names:
            return v
        x = self._bound(v, spelling)[1].arguments["x"]
        own = _copy.copy(v)
        own.args, own.keywords = [x, const(self.axis_name)], []
        reduced = self.collective(s, own, spelling)
        rest = tuple(n for n in names if n != self.axis_name)
        if not rest:
            return reduced
        outer = _copy.copy(v)
        outer.args = [reduced, const(rest[0]) if len(rest) == 1 else
                      gast.Tuple(elts=[const(n) for n in rest], ctx=gast.Load())]
        outer.keywords = []
        return outer

    def foreign_collective(self, v, spelling):
        """A collective over an axis an enclosing mapping binds: left for it, with the axes
        it names moved past this vmap's batch axis when its operand carries one."""
        if spelling == "rt.axis_index" or not COLLECTIVES[spelling]:
            return v
        _, bound = self._bound(v, spelling)
        if not batched(self.expr_spec(bound.arguments["x"])):
            return v
        new = _copy.copy(v)
        new.args = [bound.arguments["x"], bound.arguments["axis_name"]]
        new.keywords = []
        for p in COLLECTIVES[spelling]:
            axis_option = p in ("axis", "scatter_dimension", "split_axis", "concat_axis")
            if p not in bound.arguments and not axis_option:
                continue
            # (an axis left at its default, 0, moves too)
            value = bound.arguments.get(p, const(0))
            if axis_option:
                if not isinstance(value, gast.Constant) or type(value.value) is not int:
                    raise TransformError(f"{spelling[3:]}: {p} must be an integer literal "
                                         "under vmap")
                if value.value >= 0:
                    value = const(value.value + 1)
            new.keywords.append(gast.keyword(arg=p, value=value))
        return new


# each collective's options (after x and axis_name), in order
COLLECTIVES = {"rt.psum": (), "rt.pmean": (), "rt.pmax": (), "rt.pmin": (),
               "rt.all_gather": ("axis", "tiled"),
               "rt.psum_scatter": ("scatter_dimension", "tiled"),
               "rt.ppermute": ("perm",),
               "rt.all_to_all": ("split_axis", "concat_axis", "tiled"),
               "rt.axis_index": ()}
LANE_HELPERS = {"rt.all_gather": "rt.all_gather_lanes",
                "rt.psum_scatter": "rt.psum_scatter_lanes",
                "rt.ppermute": "rt.ppermute_lanes",
                "rt.all_to_all": "rt.all_to_all_lanes"}


def operands(v):
    if isinstance(v, gast.BinOp):
        return [v.left, v.right]
    if isinstance(v, gast.UnaryOp):
        return [v.operand]
    if isinstance(v, gast.Compare):
        return [v.left] + list(v.comparators)
    if isinstance(v, gast.Call):
        return list(v.args) + [k.value for k in v.keywords]
    if isinstance(v, gast.Subscript):
        return [v.value, as_index_value(v.slice)]
    return []


def is_random(v):
    """np.random draws and draws from a user's generator (rt.draw): each example draws its
    own numbers, as in a loop; and np.random.seed, which restarts every example's draws."""
    name_ = dotted(v.func) if isinstance(v, gast.Call) else None
    return bool(name_) and (name_.startswith("np.random.") or name_ == "rt.draw")


def _same_name(a, b):
    return isinstance(a, gast.Name) and isinstance(b, gast.Name) and a.id == b.id


def operand_first(v):
    """Give a collective's operand and axis name (`tp.psum(x=v, axis_name="i")`) by
    position, in place: the rules read them there."""
    given = {k.arg: k.value for k in v.keywords}
    leading = ("axis_name",) if anno.get(v, Anno.PRIM)[1] == "rt.axis_index" else \
        ("x", "axis_name")
    for param in leading[len(v.args):]:
        if param not in given:
            return
        v.args.append(given[param])
        v.keywords = [k for k in v.keywords if k.arg != param]


def axis_name_of(v, spelling, literal=lambda node: node):
    """The axis name a collective names: a string, or for psum, pmean, pmax and pmin a
    tuple of strings (the reduction over all of those axes). `literal` resolves a name
    bound to a literal (normalization binds a tuple to one)."""
    args = list(v.args) + [k.value for k in v.keywords if k.arg == "axis_name"]
    pos = 0 if spelling == "rt.axis_index" else 1
    node = literal(args[pos]) if len(args) > pos else None
    if spelling in REDUCTIONS and isinstance(node, gast.Tuple) and node.elts and all(
            isinstance(e, gast.Constant) and isinstance(e.value, str) for e in node.elts):
        return tuple(e.value for e in node.elts)
    if not isinstance(node, gast.Constant) or not isinstance(node.value, str):
        many = " (a tuple of them for psum, pmean, pmax and pmin)" \
            if spelling in REDUCTIONS else ""
        tuple_given = isinstance(node, gast.Tuple) and spelling not in REDUCTIONS
        raise TransformError(
            f"{spelling[3:]}: the axis name must be a string literal{many}" +
            (f"; {spelling[3:]} over several axes at once (a tuple of names) is not "
             "supported yet.\n  hint: apply it once per axis." if tuple_given else "."))
    return node.value


REDUCTIONS = ("rt.psum", "rt.pmean", "rt.pmax", "rt.pmin")


def _is_literal(node):
    if isinstance(node, gast.Constant):
        return True
    return isinstance(node, gast.Tuple) and all(_is_literal(e) for e in node.elts)
