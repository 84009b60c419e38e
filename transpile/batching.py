"""vmap: an IR function -> the same function on a batch of examples.

    dot = np.dot(W, input_vec)          dot = rt.batched_dot(W, input_vec, False, True)
    add = dot + b                 ->    add = rt.align(dot, b) + b
    cond = x > 0                        cond = x > 0
    if cond: result = x * x             result_then = x * x ... result = 0.1 * x
    else: result = 0.1 * x              result = rt.select(cond, result_then, result)

Every batched value carries the batch on axis 0. A flow-insensitive analysis gives each
name a *spec*: False (the same for every example), True (every leaf batched) or a tuple of
specs (a tuple or list whose elements differ). A name assigned under a batched condition is
batched. Where an unbatched value flows into a batched name it is broadcast
(`rt.broadcast_batch`). Each primitive's batching rule lives next to its derivative rules.

Control flow on batched conditions: an `if` runs both branches and merges the names they
assign with `rt.select`; a loop runs while any example is still looping, and names it
assigns keep their old value in examples that are done; an in-place update under a batched
condition writes only the examples where the condition holds. Early return, break and
continue arrive here as flags (controlflow.py), so they follow.
"""
import ast
import copy as _copy
import inspect
import linecache
from collections import Counter

import gast

import runtime
from . import optimize, rules
from .emit import origin_of
from .errors import TransformError, error_at
from .ir import anno
from .ir.analysis import (assigned_in, definitely_defined, is_pop, is_push, is_stack_push,
                          is_update, maybe_defined, names_in, pop_stack, push_parts, reads,
                          targets, walk_simple)
from .ir.anno import Anno
from .ir.nodes import assign, call, const, funcdef, name, with_source
from .ir.templates import annotate_prims, as_index_value, bind_call, dotted, substitute

COLLECTIVES = {"rt.psum", "rt.pmean", "rt.pmax", "rt.pmin", "rt.all_gather", "rt.axis_index"}


# ---------------------------------------------------------------- specs

def join(a, b):
    if a == b or b is False:
        return a
    if a is False:
        return b
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(join(x, y) for x, y in zip(a, b))
    return True


def batched(spec):
    return spec is True or (isinstance(spec, tuple) and any(batched(s) for s in spec))


def uniform(spec):
    """A spec as one bool: batched if any part is (the value is then made fully batched)."""
    return batched(spec)


class Batching:
    def __init__(self, program, fir, in_specs, callee_batched, axis_name):
        self.program = program
        self.fir = fir
        self.src = fir.source
        self.namer = program.function_namer(fir)
        self.size = self.namer.fresh("batch_size")
        self.in_specs = dict(zip(fir.params, in_specs))
        self.callee_batched = callee_batched   # (ir_name, specs) -> (name, result spec)
        self.axis_name = axis_name
        self.spec = {}
        self.arrays = set()                   # names known to hold arrays (not containers)

    def error(self, node, msg, hint=None):
        """An error at `node`; in code that transpile generated (vmap of grad, a Hessian),
        located at the user's line it was generated from, the generated line shown after."""
        err = error_at(node, self.src, msg, hint, pass_name="vmap")
        filename = str(getattr(self.src, "filename", ""))
        if not filename.startswith("<transpile") or not getattr(node, "lineno", None):
            return err
        found = origin_of(filename, self.src.line_of(node))
        if found is None:
            return err
        user, line = found
        text = linecache.getline(user.filename, line).strip()
        head = [f'File "{user.filename}", line {line}, in {user.name}'] + \
            ([f"    {text}"] if text else [])
        return TransformError("\n".join(head) + "\n" + f"[vmap] {msg}" +
                              (f"\n  hint: {hint}" if hint else "") +
                              "\n  (found in the code transpile generated from it:\n  " +
                              str(err).split("\n[vmap]")[0].replace("\n", "\n  ") + ")")

    # ================================================================ analysis
    def analyse(self, stmts):
        self.spec = {p: s for p, s in self.in_specs.items() if s is not False}
        self.local = _path_local(stmts, self.fir.node.body[-1], set(self.fir.params))
        self.uniform_needed = set()
        # lists that grow (stacks, appended lists): one spec for all their elements
        self.grown = {push_parts(st)[0] for st in walk_simple(stmts) if is_push(st)}
        changed = True
        while changed:
            self.changed = False
            self._visit(stmts, False)
            changed = self.changed
        self._find_arrays(stmts)
        self.seqs = _maybe_sequences(stmts)
        self.unpacked = set()
        self.lane_indices = {st.targets[0].id for st in walk_simple(stmts)
                             if isinstance(st, gast.Assign) and
                             isinstance(st.targets[0], gast.Name) and
                             isinstance(st.value, gast.Call) and
                             dotted(st.value.func) in ("rt.lane_index", "rt.lane_key",
                                                        "rt.lane_scatter_index")}
        if str(getattr(self.src, "filename", "")).startswith("<transpile"):
            # generated code passes lists on in tuples of saved values and returns them from
            # its functions: a batched value unpacked, popped or returned may be one
            self.unpacked = _unpacked(stmts, set(self.fir.params)) - self.seqs
            self.seqs |= self.unpacked

    def of(self, n):
        return self.spec.get(n, False)

    def contribute(self, n, spec):
        old = self.of(n)
        new = join(old, spec)
        if n in self.uniform_needed and new is not True and batched(new):
            new = True
        if isinstance(new, tuple) and n in self.grown:
            new = uniform(new)
        if new != old:
            self.spec[n] = new
            self.changed = True

    def _visit(self, block, under):
        for s in block:
            if isinstance(s, gast.If):
                b = under or batched(self.expr_spec(s.test))
                self._visit(s.body, b)
                self._visit(s.orelse, b)
            elif isinstance(s, gast.For):
                self.contribute(s.target.id, under and s.target.id not in self.local)
                b = under or batched(self.expr_spec(s.iter))
                self._visit(s.body, b)
            elif isinstance(s, gast.While):
                b = under or batched(self.expr_spec(s.test))
                self._visit(s.body, b)
            elif is_push(s):
                stack, item = push_parts(s)
                self.contribute(stack, under or batched(self.expr_spec(item)))
            elif is_pop(s):
                self.contribute(s.targets[0].id, under or uniform(self.of(pop_stack(s))))
            elif is_update(s):
                t = s.targets[0]
                b = batched(self.expr_spec(s.value)) or batched(
                    self.expr_spec(as_index_value(t.slice)))
                self.contribute(t.value.id, under or b)
            elif isinstance(s, gast.Assign):
                value = self.expr_spec(s.value)
                t = s.targets[0]
                if isinstance(t, gast.Tuple):
                    parts = value if isinstance(value, tuple) and len(value) == len(t.elts) \
                        else (uniform(value),) * len(t.elts)
                    for e, p in zip(t.elts, parts):
                        self.contribute(e.id, True if under and e.id not in self.local else p)
                else:
                    self.contribute(t.id, True if under and t.id not in self.local else value)

    def expr_spec(self, v):
        if isinstance(v, gast.Name):
            return self.of(v.id)
        if isinstance(v, (gast.Constant, gast.Slice)) or v is None:
            return False
        if isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and v.func.id == "slice":
            return any(batched(self.expr_spec(a)) for a in v.args)
        if isinstance(v, (gast.Tuple, gast.List)):
            return tuple(self.expr_spec(e) for e in v.elts)
        if isinstance(v, gast.Dict):
            return any(batched(self.expr_spec(e)) for e in v.values)
        if isinstance(v, gast.Subscript):
            base = self.expr_spec(v.value)
            index = self.expr_spec(as_index_value(v.slice))
            if batched(index):
                return True
            if isinstance(base, tuple):
                k = v.slice.value if isinstance(v.slice, gast.Constant) else None
                if isinstance(k, int) and -len(base) <= k < len(base):
                    return base[k]
                if isinstance(v.value, gast.Name):
                    self.uniform_needed.add(v.value.id)
                return uniform(base)
            return base
        callee = anno.get(v, Anno.CALLEE)
        if callee:
            specs = tuple(self.expr_spec(a) for a in v.args)
            if not any(batched(s) for s in specs):
                return False
            return self.callee_batched(callee, specs)[1]
        found = anno.get(v, Anno.PRIM)
        spelling = found[1] if found else None
        if spelling in COLLECTIVES:
            return self._collective_spec(v, spelling)
        part = self._part_of(v, spelling)
        if part is not None:
            return part
        elem = self._element_of(v, spelling)
        if elem is not None:
            return elem
        if spelling == "rt.lane_index" and len(v.args) == 2:
            return batched(self.expr_spec(v.args[1]))
        if spelling == "rt.lane_scatter_index" and len(v.args) == 2:
            return batched(self.expr_spec(v.args[0]))
        if spelling == "rt.lane_key" and len(v.args) == 3:
            return batched(self.expr_spec(v.args[1]))
        same = self._uniform_roles(v)
        args = [a for k, a in enumerate(_operands(v)) if k not in same]
        if not any(batched(self.expr_spec(a)) for a in args) and not _is_random(v):
            return False
        prim = found[0] if found else None
        rule = (prim.batch_for.get(spelling) or prim.batch) if prim is not None else None
        if rule is not None and not rule.out_batched:
            return False
        if rule is not None and rule.kind == "same" and spelling.startswith("rt.") and \
                v.args and isinstance(self.expr_spec(v.args[0]), tuple):
            return self.expr_spec(v.args[0])    # zeros or a copy of a container, leafwise
        return True

    def _array_params(self, stmts):
        """Batched parameters (a list of arrays mapped by in_axes, possibly) that the
        function gives to numpy functions as arrays and uses in no way that needs their
        container (returned, stored, passed to a function of the user's, unpacked)."""
        params = [p for p in self.fir.params if self.of(p) is True]
        if not params:
            return []
        read, other = set(), set()
        ret = self.fir.node.body[-1]
        other |= names_in(ret)
        for st in walk_simple(stmts):
            if isinstance(st, (gast.If, gast.While)):
                continue
            if isinstance(st, gast.For):
                other |= names_in(st.iter)
                continue
            v = st.value if isinstance(st, (gast.Assign, gast.Expr)) else None
            if v is None:
                continue
            if is_push(st) or is_update(st) or (isinstance(st, gast.Assign) and
                                                 isinstance(st.targets[0], gast.Tuple)):
                other |= names_in(st)
                continue
            if isinstance(v, gast.Call) and not anno.get(v, Anno.CALLEE):
                found = anno.get(v, Anno.PRIM)
                spelling = found[1] if found else ""
                prim = found[0] if found else None
                rule = (prim.batch_for.get(spelling) or prim.batch) if prim else None
                if (spelling.startswith("np.") or spelling.startswith("scipy.")) and \
                        spelling not in SEQUENCE_ARGS and \
                        not spelling.startswith("np.random."):
                    params_ = list(rule.template.params) if rule is not None and \
                        rule.kind == "template" else []
                    roles = params_[:len(v.args)] + [k.arg for k in v.keywords]
                    for k, a in enumerate(list(v.args) + [kw.value for kw in v.keywords]):
                        if isinstance(a, gast.Name) and not (k < len(roles) and
                                                             roles[k] in NOT_ARRAYS):
                            read.add(a.id)
                    continue
                if spelling in ("len", "isinstance", "type"):
                    continue
            if isinstance(v, (gast.BinOp, gast.Compare, gast.UnaryOp, gast.Subscript)):
                continue
            other |= names_in(v)
        return [p for p in params if p in read and p not in other]

    def _uniform_roles(self, v):
        """{position among args + keyword values: role} of the arguments of a call that must
        be the same in every example (shapes, counts, axes: UNIFORM_ROLES)."""
        if not isinstance(v, gast.Call) or anno.get(v, Anno.CALLEE):
            return {}
        found = anno.get(v, Anno.PRIM)
        if found and found[1] in UNIFORM_HELPERS:    # helpers of batching rules: all of them
            return {k: UNIFORM_HELPERS[found[1]]
                    for k in range(len(v.args) + len(v.keywords))}
        prim = found[0] if found else None
        rule = (prim.batch_for.get(found[1]) or prim.batch) if prim is not None else None
        if rule is None or rule.kind != "template":
            return {}
        params = list(rule.template.params)
        roles = params[:len(v.args)] + [kw.arg for kw in v.keywords]
        wanted = {"size"} if found[1].startswith("np.random.") else UNIFORM_ROLES
        return {k: r for k, r in enumerate(roles) if r in wanted}

    def uniform_args(self, v):
        """Shape, count and axis arguments that the analysis sees as batched (made under a
        condition that differs between examples, or saved by generated code) are checked
        to be the same in every example when they run (rt.uniform_lanes) and used as one
        value: `np.reshape(x, shape)`, `np.tile(x, reps)`."""
        roles = self._uniform_roles(v)
        if not roles:
            return [], v
        pre, new = [], None
        for k, a in enumerate(list(v.args) + [kw.value for kw in v.keywords]):
            if k not in roles or not isinstance(a, gast.Name) or not batched(self.of(a.id)):
                continue
            if new is None:
                new = _copy.deepcopy(v)
            fresh = self.namer.fresh(a.id.rstrip("_") + "_value")
            pre.append(assign(fresh, call("rt.uniform_lanes", [
                name(a.id), _literal(self.of(a.id)), const(anno.get(v, Anno.PRIM)[1]),
                const(roles[k])])))
            self.spec[fresh] = False
            if k < len(v.args):
                new.args[k] = name(fresh)
            else:
                new.keywords[k - len(v.args)].value = name(fresh)
        return pre, (new if new is not None else v)

    def _element_of(self, v, spelling):
        """The spec of `rt.getitem(g, k)` (how forward mode spells `g[k]`) for a literal k
        and a container `g` whose elements have their own specs, else None."""
        if spelling != "rt.getitem" or len(v.args) != 2 or v.keywords:
            return None
        g, k = v.args
        spec = self.expr_spec(g)
        if not isinstance(spec, tuple) or not isinstance(k, gast.Constant) or \
                type(k.value) is not int or not -len(spec) <= k.value < len(spec):
            return None
        return spec[k.value]

    def _part_of(self, v, spelling):
        """The spec of `rt.part(g, k, like)`, element k of an adjoint container whose
        elements have their own specs (a literal k), else None (its batching rule)."""
        if spelling != "rt.part" or len(v.args) != 3 or v.keywords:
            return None
        g, k, like = v.args
        spec = self.expr_spec(g)
        if not isinstance(spec, tuple) or not isinstance(k, gast.Constant) or \
                type(k.value) is not int or not -len(spec) <= k.value < len(spec):
            return None
        elem = spec[k.value]
        have = self.expr_spec(like)
        if have == elem or elem is True or (elem is False and have is True) or \
                (isinstance(elem, tuple) and have is False):
            return elem
        return None

    def part(self, v):
        """`rt.part(g, k, like)` for a container `g` whose element k has spec e: that element
        as it is; `like` (the zeros if the slot is unset) given the same spec."""
        g, k, like = v.args
        elem = self.expr_spec(g)[k.value]
        have = self.expr_spec(like)
        if have == elem:
            pass
        elif elem is False:
            like = call("rt.lanes_probe", [like])
        elif elem is True and not batched(have):
            like = call("rt.lanes_view", [like, name(self.size)])
        else:
            like = call("rt.broadcast_batch", [like, name(self.size), _literal(_keep(have, elem))])
        return call("rt.part", [g, k, like])

    def _collective_spec(self, v, spelling):
        axis = _axis_name_of(v, spelling)
        if spelling == "rt.axis_index":
            return axis == self.axis_name
        x = self.expr_spec(v.args[0]) if v.args else False
        if axis == self.axis_name:
            return False       # reduced over this vmap's axis: the same for every example
        return uniform(x)

    def _find_arrays(self, stmts):
        """Names every assignment of which makes an array (so `x[i]` on it can be spelled
        `x[:, i]` without asking at run time whether x is a list)."""
        made, other = set(), set()
        for s in walk_simple(stmts):
            if not isinstance(s, gast.Assign) or is_update(s):
                continue
            t = s.targets[0]
            if isinstance(t, gast.Tuple):
                other |= {e.id for e in t.elts}
                continue
            found = anno.get(s.value, Anno.PRIM)
            if isinstance(s.value, (gast.BinOp, gast.UnaryOp, gast.Compare)) or (
                    found and found[0] is not None and found[1] != "[]" and not
                    found[0].container and not found[0].container_out and
                    found[1].startswith("np.")):
                made.add(t.id)
            else:
                other.add(t.id)
        self.arrays = made - other - set(self.fir.params)

    # ================================================================ rewriting
    def run(self):
        body = self.fir.node.body
        ret = body[-1]
        stmts = body[:-1]
        self.analyse(stmts)
        bound = {}
        for st in walk_simple(stmts):
            for t in (targets(st) if not isinstance(st, (gast.If, gast.While)) else ()):
                bound[t] = bound.get(t, 0) + 1
        self.literals = {st.targets[0].id: st.value for st in walk_simple(stmts)
                         if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name)
                         and bound.get(st.targets[0].id) == 1 and
                         isinstance(st.value, (gast.Constant, gast.Tuple))}
        self.maybe = maybe_defined(stmts, self.fir.params)
        self.surely = definitely_defined(stmts, self.fir.params)
        self.need_init = set()
        # stacks of saved values (reverse mode): pushed and popped on every path, so that
        # under a batched condition each example finds its own values at the same depth
        self.stacks = {push_parts(st)[0] for st in walk_simple(stmts) if is_stack_push(st)} | \
            {pop_stack(st) for st in walk_simple(stmts) if is_pop(st) and
             dotted(st.value.func) == "rt.pop"}
        self.ints = {st.target.id for st in walk_simple(stmts) if isinstance(st, gast.For)
                     and not self.of(st.target.id)}
        self.all_stmts = stmts
        self.mask = None
        self.arrayized = {}
        out = []
        for p in self.fir.params:        # a parameter that a batched value is stored into
            want = self.of(p)
            have = self.in_specs.get(p, False)
            if want != have:
                out.append(self.convert_stmt(p, have, want, p))
        for p in self._array_params(stmts):
            # a list of per-example arrays that numpy reads as one array: stacked with the
            # batch first (an array stays as it is)
            out.append(assign(p, call("rt.lanes_array", [name(p), const(True),
                                                          name(self.size)])))
        out += self.block(stmts)
        out[:0] = [assign(v, const(None)) for v in sorted(self.need_init)]
        return out, ret.value, self.expr_spec(ret.value)

    def convert(self, expr, have, want):
        """`expr` (spec `have`) as a value of spec `want`."""
        if have == want or want is False or have is True or (
                want is True and isinstance(have, tuple) and have and
                all(h is True for h in _flat(have))):
            return expr
        if isinstance(expr, (gast.List, gast.Tuple)) and not expr.elts:
            return expr          # an empty list: what it will hold is batched
        args = [expr, name(self.size)]
        if isinstance(want, tuple):
            # the leaves `want` batches: the others stay as they are (their spec says so)
            args.append(_literal(_keep(have, want)))
        elif have is not False:
            args.append(_literal(have))
        return call("rt.broadcast_batch", args)

    def convert_stmt(self, target, have, want, origin_name=None):
        return assign(target, self.convert(name(origin_name or target), have, want))

    def block(self, stmts):
        out = []
        saved = dict(self.arrayized)    # lists made arrays (as_arrays), while still valid
        for s in stmts:
            changed = assigned_in([s])
            if isinstance(s, (gast.If, gast.For, gast.While)):
                self._forget(changed)
            if isinstance(s, gast.If):
                out.extend(self.branch(s))
            elif isinstance(s, gast.For):
                out.extend(self.for_loop(s))
            elif isinstance(s, gast.While):
                out.extend(self.while_loop(s))
            else:
                out.extend(self.simple(s))
            self._forget(changed)
        self.arrayized = saved
        self._forget(assigned_in(stmts))
        return out

    def _forget(self, names):
        self.arrayized = {k: v for k, v in self.arrayized.items() if k[0] not in names}

    # ---------------------------------------------------------------- statements
    def simple(self, s):
        if is_push(s):
            stack, item = push_parts(s)
            if self.mask is not None and stack not in self.stacks:
                raise self.error(s, "a list append under a condition that differs between "
                                 "examples cannot be batched (the list would have a "
                                 "different length in each example).",
                                 "compute the value on every path and append "
                                 "unconditionally, or move the append out of the branch.")
            have = self.expr_spec(item)
            want = uniform(self.of(stack))
            if want and have is not True:
                new = _copy.deepcopy(s)
                args = new.value.args
                args[-1] = self.convert(args[-1], have, True)
                return [new]
            return [s]
        if is_pop(s):
            stack = pop_stack(s)
            t = s.targets[0].id
            have, want = uniform(self.of(stack)), self.of(t)
            if want != have:
                return [s, self.convert_stmt(t, have, want)]
            return [s]
        if is_update(s):
            return self.update(s)
        if isinstance(s, gast.Expr):
            if isinstance(s.value, gast.Call) and self._applies(s.value):
                pre, call_ = self.prepare(s.value, s)
                value, _ = self.value(s, call_, None)   # a call for its effect
                new = gast.Expr(value=value)
                return pre + [anno.copy(s, gast.copy_location(new, s))]
            return [s]
        if not isinstance(s, gast.Assign):
            return [s]
        t = s.targets[0]
        if isinstance(t, gast.Tuple):
            pre, v = self.prepare(s.value, s)
            if pre:
                s = anno.copy(s, gast.copy_location(
                    gast.Assign(targets=s.targets, value=v, type_comment=None), s))
            return pre + self.unpack(s)
        pre, v = self.prepare(s.value, s)
        value, have = self.value(s, v, t.id)
        want = self.of(t.id)
        value = self.convert(value, have, want) if not isinstance(want, tuple) else \
            self._convert_parts(value, have, want)
        new = gast.Assign(targets=[name(t.id, True)], value=value, type_comment=None)
        return pre + [anno.copy(s, gast.copy_location(new, s))]

    def prepare(self, v, s=None):
        """Statements before a call, and the call: uniform arguments (uniform_args), lists
        read as arrays (as_arrays). They come from the user's line of `s`."""
        pre, v = self.uniform_args(v)
        more, v = self.as_arrays(v)
        pre += more
        if s is not None:
            for st in pre:
                gast.copy_location(st, s)
                if anno.get(s, Anno.ORIGIN) is not None:
                    anno.set(st, Anno.ORIGIN, anno.get(s, Anno.ORIGIN))
        return pre, v

    def as_arrays(self, v):
        """A numpy function given a Python list or tuple holding batched values
        (`np.sum([a, b])`, `np.max(items)` of a list built by appends) reads it as one array,
        whose batch axis would not be the first: each such argument is made an array with
        the batch on axis 0 first (`rt.lanes_array`). Returns (statements before, call)."""
        def seq(a):
            return isinstance(a, gast.Name) and batched(self.of(a.id)) and (
                isinstance(self.of(a.id), tuple) or a.id in self.seqs)

        def plain_seq(a):       # a list the batching rule would view along the batch
            return isinstance(a, gast.Name) and a.id in self.seqs and not batched(self.of(a.id))

        if not any(batched(self.expr_spec(a)) for a in _operands(v)):
            return [], v

        if isinstance(v, (gast.BinOp, gast.Compare)):
            # `xs - m` reads a list as an array; `xs + ys` of two lists joins them
            ops = _operands(v)
            which = [i for i, a in enumerate(ops) if seq(a) and not any(
                seq(b) or (isinstance(b, gast.Constant) and type(b.value) is int) or (
                    isinstance(b, gast.Name) and b.id in self.ints)
                for j, b in enumerate(ops) if j != i)]
            if not which:
                return [], v
            new = _copy.deepcopy(v)
            pre, names = [], []
            for i, a in enumerate(ops):
                names.append(self._lanes_array(a, pre) if i in which else a)
            if isinstance(new, gast.BinOp):
                new.left, new.right = names
            else:
                new.left, new.comparators = names[0], names[1:]
            return pre, new
        found = anno.get(v, Anno.PRIM) if isinstance(v, gast.Call) else None
        spelling = found[1] if found else None
        pos = SEQUENCE_POSITION.get(spelling)
        if pos is not None and len(v.args) > pos and isinstance(v.args[pos], gast.Name) and \
                isinstance(self.of(v.args[pos].id), tuple) and \
                any(isinstance(e, tuple) for e in self.of(v.args[pos].id)):
            # np.concatenate([[a, b], c]): the lists among the arrays made arrays first
            a = v.args[pos]
            spec = self.of(a.id)
            elts, specs = [], []
            for i, e in enumerate(spec):
                item = gast.Subscript(value=name(a.id), slice=const(i), ctx=gast.Load())
                anno.set(item, Anno.PRIM, (rules.lookup("[]"), "[]"))
                # (an element of spec True or False may be a list too: tangent zeros of one)
                item = call("rt.lanes_array", [item, _literal(e), name(self.size)]) \
                    if batched(e) else call("np.asarray", [item])
                elts.append(item)
                specs.append(batched(e))
            fresh = self.namer.fresh(a.id.rstrip("_") + "_arrays")
            literal = gast.List(elts=elts, ctx=gast.Load())
            anno.set(literal, Anno.PRIM, (rules.lookup("list"), "list"))
            self.spec[fresh] = tuple(specs)
            new = _copy.deepcopy(v)
            new.args[pos] = name(fresh)
            return [assign(fresh, literal)], new
        prim = found[0] if found else None
        rule = (prim.batch_for.get(spelling) or prim.batch) if prim is not None else None
        if spelling is None or anno.get(v, Anno.CALLEE) or spelling in SEQUENCE_ARGS or \
                spelling.startswith("np.random.") or not (
                spelling.startswith("np.") or spelling.startswith("scipy.") or
                _reads_arrays(spelling, rule)):
            return [], v
        params = list(rule.template.params) if rule is not None and \
            rule.kind == "template" else []
        roles = params[:len(v.args)] + [kw.arg for kw in v.keywords]
        pre, new = [], None
        for k, a in enumerate(list(v.args) + [kw.value for kw in v.keywords]):
            if k < len(roles) and roles[k] in NOT_ARRAYS:
                continue        # an axis, a shape, a count: a tuple there is not an array
            if not seq(a) and not plain_seq(a):
                continue
            if new is None:
                new = _copy.deepcopy(v)
            fresh = self._lanes_array(a, pre)
            if k < len(v.args):
                new.args[k] = fresh
            else:
                new.keywords[k - len(v.args)].value = fresh
        return pre, (new if new is not None else v)

    def _lanes_array(self, a, pre):
        """A fresh name for the list `a` as one batched array (its statement added to
        `pre`)."""
        spec = self.of(a.id)
        key = (a.id, repr(spec))
        if key in self.arrayized:
            return name(self.arrayized[key])
        fresh = self.namer.fresh(a.id.rstrip("_") + "_array")
        pre.append(assign(fresh, call("rt.lanes_array",
                                      [name(a.id), _literal(spec), name(self.size)])
                          if batched(spec) else call("np.asarray", [name(a.id)])))
        self.spec[fresh] = batched(spec)
        self.arrays.add(fresh)
        self.arrayized[key] = fresh
        return name(fresh)

    def _applies(self, v):
        """Whether a call's batching rule must run: a batched argument, or a random draw
        (which a loop over examples would make anew for each example)."""
        if any(batched(self.expr_spec(a)) for a in _operands(v)):
            return True
        return _is_random(v)

    def _convert_parts(self, value, have, want):
        if have == want or have is False and not batched(want):
            return value
        if isinstance(value, (gast.Tuple, gast.List)) and isinstance(have, tuple) and \
                len(have) == len(want):
            value.elts = [self.convert(e, h, w) if not isinstance(w, tuple) else
                          self._convert_parts(e, h, w)
                          for e, h, w in zip(value.elts, have, want)]
            return value
        return self.convert(value, have, True)

    def unpack(self, s):
        names = [e.id for e in s.targets[0].elts]
        value, have = self.value(s, s.value, None)
        parts = have if isinstance(have, tuple) and len(have) == len(names) else \
            (uniform(have),) * len(names)
        new = anno.copy(s, gast.copy_location(
            gast.Assign(targets=s.targets, value=value, type_comment=None), s))
        out = [new]
        for n, p in zip(names, parts):
            if self.of(n) != p:
                out.append(self.convert_stmt(n, p, self.of(n)))
        return out

    # ---------------------------------------------------------------- values
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
        args = _operands(v)
        if callee:
            specs = tuple(self.expr_spec(a) for a in v.args)
            if not any(batched(x) for x in specs):
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
        if self._element_of(v, spelling) is not None:
            return v, spec        # an element of a container, with its own spec
        if spelling == "rt.lane_index":
            return v, spec           # a tuple index, per example where `index` is batched
        if spelling in ("rt.lane_scatter_index", "rt.lane_key") and spec:
            return self.each_lane(v, spelling), spec    # each outer example's own rows
        if self._lane_indexed(v, spelling):
            new = self.each_lane(v, spelling)
            if spec is False:      # the same for every example (a shape): checked, once
                new = call("rt.uniform_lanes", [new, const(True), const(spelling),
                                                const("index")])
            return new, spec
        if not any(batched(self.expr_spec(a)) for a in args) and not _is_random(v):
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
        actual = bind_call(tpl, spelling, v, skip=0)
        if isinstance(actual, str):
            raise self.error(s, f"{spelling}: {actual}")
        mapping = {"batch_size": name(self.size)}
        for p in tpl.params:
            mapping[p] = actual[p]
            mapping[p + "_batched"] = const(batched(self.expr_spec(actual[p])))
            mapping[p + "_spec"] = _literal(self.expr_spec(actual[p]))
        try:
            body = _fold_static_ifs([substitute(st, mapping, {}, {}) for st in tpl.body])
        except _UndecidedTest as undecided:
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
        return _fold_static(body[-1].value)

    def _bound(self, v, spelling):
        fn = getattr(runtime, spelling.split(".", 1)[1])
        sig = inspect.signature(fn)
        return sig, sig.bind_partial(*v.args, **{k.arg: k.value for k in v.keywords})

    def lanes(self, s, v, spelling, rule):
        """A helper taking `outer`: its unbatched array arguments get this batch axis too,
        and it is told one more outer axis leads (runtime/batching.py)."""
        sig, bound = self._bound(v, spelling)
        if any(batched(self.expr_spec(bound.arguments[p])) for p in bound.arguments
               if p not in rule.arrays and p not in ("outer", "outer_adj")):
            return self.each_lane(v, spelling)     # a per-example index: example by example
        each = rule.each
        args, flags = [], []
        for p in sig.parameters:
            if p in ("outer", "outer_adj") or p not in bound.arguments:
                continue
            a = bound.arguments[p]
            if p in rule.arrays:
                spec = self.expr_spec(a)
                carried = batched(spec)
                flags.append(int(carried))
                if not each and isinstance(spec, tuple) and carried:
                    # a list some of whose elements are batched: batch the others
                    a = call("rt.broadcast_batch", [a, name(self.size), _literal(spec)])
                elif not each and not carried and not isinstance(a, gast.Constant):
                    # helpers only read their arguments: a view, not a copy per example
                    a = call("rt.batch_view", [a, name(self.size)])
            args.append(a)
        param = rule.param
        if param == "outer_adj" and "outer" in bound.arguments:
            args.append(bound.arguments["outer"])
        outer = self.literal(bound.arguments.get(param, const(0)))
        if isinstance(outer, gast.Constant) and outer.value == ():
            outer = const(0)
        if not isinstance(outer, (gast.Constant, gast.Tuple)):
            raise self.error(s, f"internal: {spelling} with a computed `outer`")
        new = call(spelling, args)
        if each:
            old = ast.literal_eval(gast.unparse(outer)) if isinstance(outer, gast.Tuple) \
                else outer.value
            before = runtime.batching.frames(old, len(flags))
            value = _literal(tuple((f,) + tuple(b) for f, b in zip(flags, before)))
        elif isinstance(outer, gast.Tuple):      # per-argument frames, all now batched
            old = ast.literal_eval(gast.unparse(outer))
            value = _literal(tuple((1,) + tuple(f) for f in old))
        else:
            value = const(outer.value + 1)
        new.keywords = [gast.keyword(arg=param, value=value)]
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
        new = call("rt.each_lane", [const(spelling), name(self.size), _literal(flags)] +
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
        new.keywords = [gast.keyword(arg="outer", value=_literal(leads))]
        return new

    def collective(self, s, v, spelling):
        axis = _axis_name_of(v, spelling)
        if axis != self.axis_name:
            return v
        if spelling == "rt.axis_index":
            return call("np.arange", [name(self.size)])
        x = v.args[0]
        if not batched(self.expr_spec(x)):
            # the same value in every example
            if spelling == "rt.psum":
                return gast.BinOp(left=x, op=gast.Mult(), right=name(self.size))
            if spelling == "rt.all_gather":
                return call("rt.broadcast_batch", [x, name(self.size)])
            return x
        if spelling == "rt.all_gather":
            return x
        reducer = {"rt.psum": "np.sum", "rt.pmean": "np.mean", "rt.pmax": "np.max",
                   "rt.pmin": "np.min"}[spelling]
        new = call(reducer, [x])
        new.keywords = [gast.keyword(arg="axis", value=const(0))]
        return new

    # ---------------------------------------------------------------- subscripts
    def getitem(self, s, v):
        x = v.value
        sx = self.expr_spec(x)
        index = as_index_value(v.slice)
        si = self.expr_spec(index)
        if not batched(sx) and not batched(si):
            return v
        if isinstance(sx, tuple) and not batched(si):
            return v     # an element of a container, whose elements have their own specs
        if batched(si):
            return call("rt.lane_gather", [x, index, const(batched(sx))])
        if isinstance(x, gast.Name) and x.id in self.arrays and _simple_index(v.slice):
            return gast.Subscript(value=x, slice=_lane_slice(v.slice), ctx=gast.Load())
        return call("rt.lane_getitem", [x, index])

    def update(self, s):
        t = s.targets[0]
        x = t.value
        sx = self.of(x.id)
        index = as_index_value(t.slice)
        si = self.expr_spec(index)
        sv = self.expr_spec(s.value)
        if not batched(sx):
            return [s]
        value = s.value
        if batched(si):
            idx = call("rt.lane_scatter_index", [index, name(self.size)])
        elif x.id in self.arrays and _simple_index(t.slice):
            idx = _lane_slice(t.slice)
        else:
            idx = call("rt.lane_index", [x, index])
        idx_name = None
        if not isinstance(idx, (gast.Tuple, gast.Slice, gast.Constant, gast.Name)):
            idx_name = self.namer.fresh("index")
        out = []
        if idx_name:
            out.append(assign(idx_name, idx))
            idx = name(idx_name)
        slot = gast.Subscript(value=name(x.id), slice=_copy.deepcopy(idx), ctx=gast.Load())
        anno.set(slot, Anno.PRIM, (rules.lookup("[]"), "[]"))
        if batched(sv):
            value = call("rt.align_lanes", [value, slot])
        if self.mask is not None:      # only the examples on this path write
            value = call("rt.select", [name(self.mask), value, _copy.deepcopy(slot)])
        new = gast.Assign(targets=[gast.Subscript(value=name(x.id), slice=idx,
                                                  ctx=gast.Store())],
                          value=value, type_comment=None)
        out.append(anno.copy(s, gast.copy_location(new, s)))
        return out

    # ---------------------------------------------------------------- control flow
    def _outside_reads(self, region):
        """Names read anywhere in the function outside the statements `region`."""
        inside = {id(x) for x in walk_simple(region)}
        out = set()
        for st in walk_simple(self.all_stmts):
            if id(st) in inside:
                continue
            if isinstance(st, (gast.If, gast.While)):
                out |= names_in(st.test)
            elif isinstance(st, gast.For):
                out |= names_in(st.iter)
            else:
                out |= names_in(st)
                if is_update(st):
                    out.add(st.targets[0].value.id)
        return out | names_in(self.fir.node.body[-1])

    def branch(self, s):
        cond = s.test
        if not batched(self.expr_spec(cond)):
            new = gast.If(test=cond, body=self.block(s.body) or [gast.Pass()],
                          orelse=self.block(s.orelse))
            return [anno.copy(s, gast.copy_location(new, s))]
        _check_branch(self, s)
        outside = self._outside_reads(s.body + s.orelse)
        in_body, in_else = assigned_in(s.body), assigned_in(s.orelse)
        # a value the branch reads before changing it: the other path must start from the
        # old value, and in a loop the next trip reads the merged one
        inner = {v for v in in_body | in_else
                 if _read_before_assigned(s.body, v) or _read_before_assigned(s.orelse, v)}
        merged = sorted(((in_body | in_else) & (outside | inner)) - self.stacks)
        out, orig, then = [], {}, {}
        if names_in(cond) & (in_body | in_else):   # the branch changes its own test
            frozen = self.namer.fresh("taken")
            out.append(assign(frozen, cond))
            cond = name(frozen)
        for v in merged:
            orig[v] = self.namer.fresh(v + "_before")
            now = self.current(s, v)
            if isinstance(now, gast.Constant):   # not bound yet: None on a skipped path
                out.append(assign(v, const(None)))
            out.append(assign(orig[v], now))
        # each path runs with a mask of the examples that take it: updates in place write
        # only those, loops stop when those are done, a path no example takes is skipped
        # (which also ends recursion on a batched test)
        outer = self.mask
        if outer is None and isinstance(cond, gast.Name):
            body_mask = cond.id
        else:
            body_mask = self.namer.fresh("mask")
            out.append(assign(body_mask, _copy.deepcopy(cond) if outer is None else
                              call("np.logical_and", [name(outer), _copy.deepcopy(cond)])))
        def else_path():
            else_mask = self.namer.fresh("mask")
            skipped = call("np.logical_not", [_copy.deepcopy(cond)])
            out.append(assign(else_mask, skipped if outer is None else
                              call("np.logical_and", [name(outer), skipped])))
            out.extend(self._path(else_mask, s.orelse))

        if s.orelse and s.body and _pops_shared(self, s):
            # both paths pop values that both paths of the forward branch pushed, the
            # `else` path's last: here it runs first, so each finds its own on top
            else_ = {}
            else_path()
            for v in merged:
                if v in in_else:
                    else_[v] = self.namer.fresh(v + "_else")
                    out.append(assign(else_[v], name(v)))
                    out.append(assign(v, name(orig[v])))
            out.extend(self._path(body_mask, s.body))
            for v in merged:
                chosen = name(else_[v]) if v in else_ else name(orig[v])
                out.append(assign(v, call("rt.select", [_copy.deepcopy(cond), name(v),
                                                        chosen]), origin=s))
            return out
        if s.body:
            out.extend(self._path(body_mask, s.body))
        for v in merged:
            if v in in_body:
                then[v] = self.namer.fresh(v + "_then")
                out.append(assign(then[v], name(v)))
                out.append(assign(v, name(orig[v])))
        if s.orelse:
            else_path()
        for v in merged:
            chosen = name(then[v]) if v in then else name(orig[v])
            out.append(assign(v, call("rt.select", [_copy.deepcopy(cond), chosen, name(v)]),
                              origin=s))
        return out

    def _path(self, mask, stmts):
        """One path of a batched `if`, run with `mask` as the examples that take it."""
        outer, self.mask = self.mask, mask
        try:
            body = self.block(stmts)
        finally:
            self.mask = outer
        return self._guarded(name(mask), body, stmts)

    def _guarded(self, mask, stmts, original):
        """`stmts` run only if some example takes this path. A path that saves values on a
        stack (or restores them) runs for every example when it runs at all, so each finds
        its values at the same depth; the backward pass's mirror path has the same mask
        (its condition is the saved forward one), so it pops exactly when this pushed.
        (A condition the same for every example that vmap sees as batched, a recursive
        function's, stays consistent: the path runs where it ran before.)"""
        return [_guard(call("rt.any_lane", [mask]), stmts)]

    def current(self, s, v):
        """The value of `v` just before statement `s`: None where it may not exist yet."""
        if v in self.surely.get(id(s), ()):
            return name(v)
        if v in self.maybe.get(id(s), ()):
            self.need_init.add(v)      # bound on some paths only: start it as None
            return name(v)
        return const(None)

    def _masked_trip(self, s, active_expr):
        """The body of a loop whose examples finish at different trips: names the loop
        carries (or that are read after it) keep their value in examples that are done."""
        outside = self._outside_reads(s.body)
        body_assigned = assigned_in(s.body)
        carried = {v for v in body_assigned if _read_before_assigned(s.body, v)}
        merged = sorted((body_assigned & (outside | carried)) - self.stacks)
        active = self.namer.fresh("active")
        if self.mask is not None:      # examples outside an enclosing branch never loop
            active_expr = call("np.logical_and", [name(self.mask), active_expr])
        trip = [assign(active, active_expr)]
        orig = {}
        for v in merged:
            orig[v] = self.namer.fresh(v + "_before")
            trip.append(assign(orig[v], name(v)))
        saved, self.mask = self.mask, active
        try:
            trip += self.block(s.body)
        finally:
            self.mask = saved
        for v in merged:
            trip.append(assign(v, call("rt.select", [name(active), name(v), name(orig[v])]),
                               origin=s))
        pre = []
        for v in merged:
            if v not in self.surely.get(id(s), ()):
                if v in self.maybe.get(id(s), ()):
                    self.need_init.add(v)
                else:
                    pre.append(assign(v, const(None)))
        return pre, trip

    def while_loop(self, s):
        if not batched(self.expr_spec(s.test)):
            new = gast.While(test=s.test, body=self.block(s.body), orelse=[])
            return [anno.copy(s, gast.copy_location(new, s))]
        test = _copy.deepcopy(s.test)
        if self.mask is not None:
            test = call("np.logical_and", [name(self.mask), test])
        pre, trip = self._masked_trip(s, _copy.deepcopy(s.test))
        new = gast.While(test=call("rt.any_lane", [test]), body=trip, orelse=[])
        return pre + [anno.copy(s, gast.copy_location(new, s))]

    def for_loop(self, s):
        if not batched(self.expr_spec(s.iter)):
            new = gast.For(target=s.target, iter=s.iter, body=self.block(s.body), orelse=[],
                           type_comment=None)
            return [anno.copy(s, gast.copy_location(new, s))]
        it, backwards = s.iter, False
        if isinstance(it, gast.Call) and dotted(it.func) == "reversed":
            it, backwards = it.args[0], True
        if isinstance(it, gast.Call) and dotted(it.func) == "rt.reversed_range":
            backwards = True
        elif not (isinstance(it, gast.Call) and dotted(it.func) == "range"):
            it = None
        if it is None or not 1 <= len(it.args) <= 2:
            raise self.error(s, "a loop whose trip count differs between examples must "
                             "run over range(stop) or range(start, stop).",
                             "write the loop as a while loop.")
        start = it.args[0] if len(it.args) == 2 else const(0)
        stop = it.args[-1]
        i = s.target.id
        lo = call("rt.min_start", [_copy.deepcopy(start)]) if batched(self.expr_spec(start)) \
            else _copy.deepcopy(start)
        hi = call("rt.max_trips", [_copy.deepcopy(stop)]) if batched(self.expr_spec(stop)) \
            else _copy.deepcopy(stop)
        rng = call("rt.reversed_range" if backwards else "range", [lo, hi])
        active = gast.Compare(left=name(i), ops=[gast.Lt()],
                              comparators=[_copy.deepcopy(stop)])
        anno.set(active, Anno.PRIM, (rules.lookup("<"), "<"))
        if batched(self.expr_spec(start)):
            low = gast.Compare(left=name(i), ops=[gast.GtE()],
                               comparators=[_copy.deepcopy(start)])
            anno.set(low, Anno.PRIM, (rules.lookup(">="), ">="))
            active = call("np.logical_and", [low, active])
        pre, trip = self._masked_trip(s, active)
        new = gast.For(target=name(i, True), iter=rng, body=trip, orelse=[], type_comment=None)
        return pre + [anno.copy(s, gast.copy_location(new, s))]


# ---------------------------------------------------------------- helpers

def _operands(v):
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


def _is_random(v):
    """np.random draws (not seed): each example draws its own numbers, as in a loop."""
    name_ = dotted(v.func) if isinstance(v, gast.Call) else None
    return bool(name_) and name_.startswith("np.random.") and name_ != "np.random.seed"


def _same_name(a, b):
    return isinstance(a, gast.Name) and isinstance(b, gast.Name) and a.id == b.id


def _axis_name_of(v, spelling):
    args = list(v.args) + [k.value for k in v.keywords if k.arg == "axis_name"]
    pos = 0 if spelling == "rt.axis_index" else 1
    node = args[pos] if len(args) > pos else None
    if not isinstance(node, gast.Constant):
        raise TransformError(f"{spelling}: the axis name must be a string literal")
    return node.value


def _simple_index(idx):
    """An index that is an int/slice literal (or a tuple of them): `x[:, idx]` is right."""
    if isinstance(idx, gast.Tuple):
        return all(_simple_index(e) for e in idx.elts)
    if isinstance(idx, gast.Slice):
        return True
    return isinstance(idx, gast.Constant) and isinstance(idx.value, int) and \
        not isinstance(idx.value, bool)


def _lane_slice(idx):
    full = gast.Slice(lower=None, upper=None, step=None)
    elts = list(idx.elts) if isinstance(idx, gast.Tuple) else [idx]
    return gast.Tuple(elts=[full] + [_copy.deepcopy(e) for e in elts], ctx=gast.Load())


def _guard(test, body):
    return gast.If(test=test, body=body or [gast.Pass()], orelse=[])


def _has_update(stmts):
    return any(is_update(s) for s in walk_simple(stmts))


def _pops_shared(pass_, s):
    """Whether both paths of `s` pop from a stack of saved values they share."""
    def popped(stmts):
        return {pop_stack(st) for st in walk_simple(stmts) if is_pop(st)} & pass_.stacks
    return bool(popped(s.body) & popped(s.orelse))


def _check_branch(pass_, s):
    for st in walk_simple(s.body + s.orelse):
        if is_push(st) and push_parts(st)[0] not in pass_.stacks:
            raise pass_.error(st, "a list append (or a saved value) in a branch whose "
                              "condition differs between examples cannot be batched.",
                              "append on every path, or move it out of the branch.")


# numpy functions that take a sequence of arrays as a sequence (their batching rules handle
# lists whose elements are batched); any other numpy function reads a list as one array
SEQUENCE_ARGS = {"np.concatenate", "np.concat", "np.stack", "np.vstack", "np.row_stack",
                 "np.hstack", "np.dstack", "np.column_stack", "np.block", "np.array",
                 "np.asarray", "np.asanyarray", "np.broadcast_arrays", "np.meshgrid"}


# arguments (as batching templates name them) that must be the same in every example
UNIFORM_ROLES = {"shape", "newshape", "reps", "repeats", "shift", "offset",
                 "indices_or_sections", "pad_width", "num", "dimensions", "N", "M", "size",
                 "axis", "axes", "axis1", "axis2", "source", "destination"}

UNIFORM_HELPERS = {"rt.batched_axis": "axis", "rt.lane_axes": "axis", "rt.lane_perm": "axes",
                   "rt.lane_squeeze_axis": "axis", "rt.lane_hsplit_axis": "axis",
                   "rt.lane_reps": "reps", "rt.lane_pad_width": "pad_width",
                   "rt.pad_mask": "pad_width", "rt.lane_shape": "shape"}

# parameters of numpy functions (as their batching templates name them) that are not arrays
NOT_ARRAYS = {"axis", "axes", "shape", "newshape", "reps", "repeats", "dtype", "keepdims",
              "ord", "k", "offset", "n", "num", "indices_or_sections", "source", "destination",
              "axis1", "axis2", "order", "kind", "mode", "pad_width", "shift", "subscripts",
              "ddof", "endpoint", "base", "side", "sorter", "decimals", "out_", "initial",
              "M", "N", "lanes", "skip", "where", "retstep", "copy", "start", "stop", "step"}

# where those (and the adjoints of joining) take their sequence of arrays
SEQUENCE_POSITION = {**{s: 0 for s in SEQUENCE_ARGS - {"np.array", "np.asarray", "np.asanyarray",
                                                      "np.block", "np.meshgrid",
                                                      "np.broadcast_arrays"}},
                     "rt.concatenate_adj": 1, "rt.stack_adj": 1, "rt.vstack_adj": 1,
                     "rt.hstack_adj": 1}

# Runtime helpers of derivative code read their arguments as arrays (np.shape(x),
# np.asarray(x)), as the numpy function they stand for did, except these, which take
# containers (adjoints of tuples and lists, pytrees) as they are.
RT_CONTAINER_ARGS = {"rt.add", "rt.as_grad", "rt.basis_like", "rt.cast_like", "rt.filled",
                     "rt.getitem", "rt.index_add", "rt.index_add_into", "rt.index_clear",
                     "rt.index_update", "rt.jacobian_shape", "rt.part", "rt.seed",
                     "rt.sum_adj", "rt.sum_adj_t", "rt.to_like", "rt.to_list", "rt.to_tuple",
                     "rt.tree_scale", "rt.tree_vdot", "rt.written_part", "rt.reshape_like",
                     "rt.reversed_range", "rt.concatenate_adj", "rt.stack_adj",
                     "rt.vstack_adj", "rt.hstack_adj", "rt.copy", "rt.copy_stack",
                     "rt.zeros_like", "rt.tangent_zeros", "rt.zero_tangent", "rt.astype",
                     "rt.check_float_input", "rt.push", "rt.pop", "rt.pop_adjoint"}


def _reads_arrays(spelling, rule):
    """A runtime helper (with a batching template) that reads its arguments as arrays."""
    return spelling.startswith("rt.") and rule is not None and rule.kind == "template" and \
        spelling not in RT_CONTAINER_ARGS and not spelling.startswith("rt.lane") and \
        spelling not in UNIFORM_HELPERS


def _maybe_sequences(stmts):
    """Names that may hold a Python list or tuple: bound to a list or tuple literal, appended
    to, made by a function that returns a container, copied from such a name or popped from
    a stack such names were pushed on."""
    seqs, stacks = set(), set()
    changed = True
    while changed:
        changed = False
        for st in walk_simple(stmts):
            new = set()
            if is_push(st):
                stack, item = push_parts(st)
                if dotted(st.value.func) != "rt.push":
                    new.add(stack)                   # xs.append(v): xs is a list
                elif isinstance(item, (gast.List, gast.Tuple)) or (
                        isinstance(item, gast.Name) and item.id in seqs):
                    if stack not in stacks:
                        stacks.add(stack)
                        changed = True
            elif is_pop(st):
                if pop_stack(st) in stacks:
                    new.add(st.targets[0].id)
            elif isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name):
                v = st.value
                found = anno.get(v, Anno.PRIM)
                prim = found[0] if found else None
                if isinstance(v, (gast.List, gast.Tuple)) or (
                        isinstance(v, gast.Name) and v.id in seqs) or (
                        prim is not None and (prim.container or prim.container_out)) or (
                        found and found[1] in ("list", "tuple", "zip", "enumerate",
                                               "sorted", "rt.to_list", "rt.to_tuple")):
                    new.add(st.targets[0].id)
            if new - seqs:
                seqs |= new
                changed = True
    return seqs


def _is_literal(node):
    if isinstance(node, gast.Constant):
        return True
    return isinstance(node, gast.Tuple) and all(_is_literal(e) for e in node.elts)


def _unpacked(stmts, params):
    """Names returned by a call of a user function, or unpacked from a parameter or such a
    result (a tuple of saved values): the function cannot see the making of their values."""
    results = {st.targets[0].id for st in walk_simple(stmts)
               if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and
               anno.get(st.value, Anno.CALLEE)}
    out = set(results)
    for st in walk_simple(stmts):
        if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Tuple) and (
                (isinstance(st.value, gast.Name) and st.value.id in params | results) or
                anno.get(st.value, Anno.CALLEE)):
            out |= {e.id for e in st.targets[0].elts if isinstance(e, gast.Name)}
    return out


def _path_local(stmts, ret, params):
    """Names bound once and read only after that, in the statements that follow it in the
    same block (for a loop variable: in the loop's body). Such a name needs no merging where
    paths join: under a condition that differs between examples, an unbatched value bound
    to it is the same in every example that reads it (`shape = (4, 3)` in a branch)."""
    bound, read = {}, {}
    for st in walk_simple(stmts):
        if not isinstance(st, (gast.If, gast.While)):
            for t in targets(st):
                bound[t] = bound.get(t, 0) + 1
        for n in reads(st):
            read[n] = read.get(n, 0) + 1
    for n in names_in(ret):
        read[n] = read.get(n, 0) + 1

    subtree_counts = {}

    def subtree_reads(st):
        """How many simple statements in `st` (itself included) read each name."""
        if id(st) not in subtree_counts:
            counts = Counter()
            for inner in walk_simple([st]):
                counts.update(reads(inner))
            subtree_counts[id(st)] = counts
        return subtree_counts[id(st)]

    def reads_in(block, n):
        return sum(subtree_reads(st)[n] for st in block)

    loops_binding = {}
    for st in walk_simple(stmts):
        if isinstance(st, gast.For):
            loops_binding.setdefault(st.target.id, []).append(st)

    local = set()
    # bound once, outside every loop, to a value the same for every example: every example
    # that can read it (it is bound on its path) reads that one value
    def outside_loops(block):
        for st in block:
            if isinstance(st, gast.If):
                yield from outside_loops(st.body)
                yield from outside_loops(st.orelse)
            elif not isinstance(st, (gast.For, gast.While)):
                yield st
    # (a `None` bound first, where generated code makes a name exist on every path, does
    # not count, unless the function asks whether it is None)
    placeholders, asked = {}, set()
    for st in walk_simple(stmts):
        if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and \
                isinstance(st.value, gast.Constant) and st.value.value is None:
            placeholders[st.targets[0].id] = placeholders.get(st.targets[0].id, 0) + 1
        for node in gast.walk(st) if not isinstance(st, (gast.If, gast.For, gast.While)) \
                else [st.test] if not isinstance(st, gast.For) else [st.iter]:
            if isinstance(node, gast.Compare) and any(
                    isinstance(o, (gast.Is, gast.IsNot, gast.Eq, gast.NotEq))
                    for o in node.ops):
                asked |= names_in(node)
            if isinstance(node, gast.Call) and dotted(node.func) in ("isinstance", "type"):
                asked |= names_in(node)
    for st in outside_loops(stmts):
        if isinstance(st, gast.Assign) and not is_update(st) and not is_pop(st) and not (
                isinstance(st.value, gast.Constant) and st.value.value is None):
            for n in targets(st):
                extra = placeholders.get(n, 0) if n not in asked else 0
                if bound.get(n, 0) - extra == 1 and n not in params:
                    local.add(n)

    def visit(block):
        after = Counter()       # reads in the statements after the one visited
        for st in reversed(block):
            visit_one(st, after)
            after.update(subtree_reads(st))

    def visit_one(st, after):
        if isinstance(st, gast.If):
            visit(st.body)
            visit(st.orelse)
            return
        if isinstance(st, gast.While):
            visit(st.body)
            return
        if isinstance(st, gast.For):
            n = st.target.id
            loops = loops_binding.get(n, [])
            if bound.get(n) == len(loops) and n not in params and \
                    sum(reads_in(lp.body, n) for lp in loops) == read.get(n, 0):
                local.add(n)        # a loop counter read only in the loops it counts
            visit(st.body)
            return
        if not isinstance(st, gast.Assign) or is_update(st) or is_pop(st):
            return
        own = reads(st)
        for n in targets(st):
            if bound.get(n) == 1 and n not in params and n not in own and \
                    after[n] == read.get(n, 0):
                local.add(n)
    visit(stmts)
    return local


def _read_before_assigned(body, n):
    """Whether some path through `body` reads `n` before binding it (an assignment in
    one path of a nested `if`, or in a loop, binds it only on some paths)."""
    return _first_use(body, n) == "read"


def _first_use(stmts, n):
    """'read' if a path reads n before binding it, 'bound' if every path binds it first,
    None otherwise."""
    for st in stmts:
        if n in reads(st):
            return "read"
        if isinstance(st, gast.If):
            a, b = _first_use(st.body, n), _first_use(st.orelse, n)
            if "read" in (a, b):
                return "read"
            if a == b == "bound":
                return "bound"
        elif isinstance(st, (gast.For, gast.While)):
            if _first_use(st.body, n) == "read":
                return "read"
        elif n in targets(st) and not is_update(st):
            return "bound"
    return None


def _fold_static(expr):
    """What a batching template decides from constants, decided when generated:
    `a if True else b` -> `a`; `rt.lane_axis(1, x)` -> `2` (a literal per-example axis);
    `rt.broadcast_batch(x, n, True)` -> `x`."""
    class Fold(gast.NodeTransformer):
        def visit_IfExp(self, n):
            self.generic_visit(n)
            test = n.test
            if isinstance(test, gast.UnaryOp) and isinstance(test.op, gast.Not) and \
                    isinstance(test.operand, gast.Constant):
                return n.orelse if test.operand.value else n.body
            if isinstance(test, gast.Constant):
                return n.body if test.value else n.orelse
            return n

        def visit_Call(self, n):
            self.generic_visit(n)
            if dotted(n.func) == "rt.broadcast_batch" and len(n.args) == 3 and \
                    _all_true(n.args[2]):
                return n.args[0]           # already batched everywhere
            if dotted(n.func) == "rt.lane_axis" and len(n.args) == 2 and not n.keywords:
                a = n.args[0]
                if isinstance(a, gast.Constant) and isinstance(a.value, int) and \
                        not isinstance(a.value, bool):
                    return const(a.value + 1 if a.value >= 0 else a.value)
                if isinstance(a, gast.Tuple) and all(
                        isinstance(e, gast.Constant) and type(e.value) is int for e in a.elts):
                    return _literal(tuple(e.value + 1 if e.value >= 0 else e.value
                                          for e in a.elts))
            return n
    return Fold().visit(expr)


def _all_true(node):
    """A literal spec whose every leaf is True (True, (True, True), ...)."""
    if isinstance(node, gast.Constant):
        return node.value is True
    if isinstance(node, (gast.Tuple, gast.List)):
        return bool(node.elts) and all(_all_true(e) for e in node.elts)
    return False


_NOT_KNOWN = object()


def _static_truth(test):
    """The value of a batching template's `if` test when the code is generated, or
    _NOT_KNOWN: constants (`x_batched` is one by then), `not`, `and`/`or`, and `is None`,
    `is not None`, `==`, `!=` between constants (an argument given as a literal)."""
    if isinstance(test, gast.Constant):
        return bool(test.value)
    if isinstance(test, gast.UnaryOp) and isinstance(test.op, gast.Not):
        inner = _static_truth(test.operand)
        return inner if inner is _NOT_KNOWN else not inner
    if isinstance(test, gast.BoolOp):
        values = [_static_truth(v) for v in test.values]
        is_and = isinstance(test.op, gast.And)
        for v in values:            # short-circuit: a decided operand may settle it
            if v is not _NOT_KNOWN and v != is_and:
                return v
        return _NOT_KNOWN if _NOT_KNOWN in values else is_and
    if isinstance(test, gast.Compare) and len(test.ops) == 1 and \
            isinstance(test.left, gast.Constant) and \
            isinstance(test.comparators[0], gast.Constant):
        a, b, op = test.left.value, test.comparators[0].value, test.ops[0]
        compare = {gast.Is: lambda: a is b, gast.IsNot: lambda: a is not b,
                   gast.Eq: lambda: a == b, gast.NotEq: lambda: a != b}.get(type(op))
        if compare is not None:
            return bool(compare())
    return _NOT_KNOWN


class _UndecidedTest(Exception):
    """A batching template's `if` test that generation time cannot decide."""


def _fold_static_ifs(stmts):
    """A batching template's body with its `if`s decided (only the branch that applies)."""
    out = []
    for st in stmts:
        if isinstance(st, gast.If):
            truth = _static_truth(st.test)
            if truth is _NOT_KNOWN:
                raise _UndecidedTest(gast.unparse(st.test).strip())
            out.extend(_fold_static_ifs(st.body if truth else st.orelse))
        else:
            out.append(st)
    return out


def batched_function(program, fir, name_, in_specs, callee_batched, axis_name,
                     force_out=None):
    """`f_vmap(batch_size, params...)`: the batched variant of a user function for
    arguments of the given specs; returns (FunctionDef, result spec)."""
    bt = Batching(program, fir, in_specs, callee_batched, axis_name)
    stmts, out, spec = bt.run()
    if force_out is not None and spec != force_out:   # a recursive variant: fully batched
        stmts.append(assign(bt.namer.fresh("result"), bt.convert(out, spec, force_out)))
        out, spec = name(stmts[-1].targets[0].id), force_out
    body = _quiet(optimize.dce(stmts + [gast.Return(value=_copy.deepcopy(out))], set()))
    fdef = funcdef(name_, [bt.size] + list(fir.params), body, fir.node)
    return with_source(fdef, fir), spec


def _literal(value):
    """A Python literal (ints, None, strings, tuples, dicts of them) as an annotated AST."""
    node = gast.parse(repr(value)).body[0].value
    annotate_prims(node)
    return node


def axes_spec(axes):
    """The spec of an argument mapped along `axes` (an in_axes entry, a prefix tree)."""
    if axes is None:
        return False
    if isinstance(axes, int):
        return True
    if isinstance(axes, (tuple, list)):
        return tuple(axes_spec(a) for a in axes)
    return any(axes_spec(a) is not False for a in axes.values())   # dict: all or nothing


def vmap_function(program, fir, name_, nprefix, nuser, opts, callee_batched):
    """The entry function of `vmap`: takes the user's arguments as they are, moves each
    mapped axis to the front, runs the batched body and puts the batch axis of each output
    where out_axes says."""
    params = list(fir.params)
    in_axes = opts["in_axes"]
    axes = [None] * len(params)
    for i, a in zip(range(nprefix, nprefix + nuser), in_axes):
        axes[i] = a
    specs = [axes_spec(a) for a in axes]
    bt = Batching(program, fir, specs, callee_batched, opts["axis_name"])
    for i, a in enumerate(axes):         # a dict mapped on some keys is made fully batched
        if isinstance(a, dict) and specs[i]:
            bt.in_specs[params[i]] = True
    mapped = [(p, a) for p, a in zip(params, axes) if a is not None]
    where = fir.name
    size_args = [gast.Tuple(elts=[name(p) for p, _ in mapped], ctx=gast.Load()),
                 _literal(tuple(a for _, a in mapped)),
                 _literal(tuple(p for p, _ in mapped)), const(opts["axis_size"]), const(where)]
    for node in size_args[:1]:
        anno.set(node, Anno.PRIM, (rules.lookup("tuple"), "tuple"))
    prologue = [assign(bt.size, call("rt.axis_size", size_args))]
    for p, a, sp in zip(params, axes, specs):
        if all(x is None or x == 0 for x in _flat(a)):
            continue
        if isinstance(a, int) or not _is_dict_mixed(a):
            prologue.append(assign(p, call("rt.move_batch_axis", [name(p), _literal(a)])))
    for p, a, sp in zip(params, axes, specs):
        if isinstance(a, dict) and sp and _is_dict_mixed(a):
            moved = call("rt.move_batch_axis", [name(p), _literal(a)])
            prologue.append(assign(p, call("rt.broadcast_batch",
                                           [moved, name(bt.size), _literal(a)])))
    stmts, out, spec = bt.run()
    out_axes = opts["out_axes"]
    want = axes_spec(out_axes)
    unsure = _check_out(bt, fir, spec, want, out_axes)
    result = _copy.deepcopy(out)
    if unsure:
        # out_axes=None on outputs the analysis thinks may differ between examples (a
        # recursive function's results are batched throughout): checked when it runs
        where = ", ".join(f"output{p}" for p in unsure)
        msg = (f"vmap of {fir.name}: out_axes={out_axes!r} says {where} is the same for every "
               "example, but it differs between examples.\n  hint: give it an integer "
               "out_axes.")
        result = call("rt.unbatch_out", [result, _literal(spec), _literal(want), const(msg)])
        spec = _unbatched_spec(spec, want)
    if want is True:
        result = bt.convert(result, spec, True)
    elif isinstance(want, tuple) and spec != want and \
            not all(k is True for k in _flat(_keep(spec, want))):
        # batch the leaves out_axes maps; leaves it leaves unmapped stay as they are
        result = call("rt.broadcast_batch", [result, name(bt.size),
                                             _literal(_keep(spec, want))])
    if out_axes not in (0, None):
        result = call("rt.batch_out", [result, _literal(out_axes)])
    body = _quiet(optimize.dce(prologue + stmts + [gast.Return(value=result)], set()))
    fdef = funcdef(name_, params, body, fir.node)
    return with_source(fdef, fir)


def _is_dict_mixed(a):
    return isinstance(a, dict) and len({x is None for x in _flat(a)}) > 1


def _flat(tree):
    if isinstance(tree, (tuple, list)):
        return [x for t in tree for x in _flat(t)]
    if isinstance(tree, dict):
        return [x for t in tree.values() for x in _flat(t)]
    return [tree]


def _keep(have, want):
    """`have` for broadcast_batch: True for leaves to leave alone (batched already, or
    not wanted batched)."""
    if want is False or have is True:
        return True
    if want is True:
        return have
    if not isinstance(have, tuple):
        return tuple(_keep(have, w) for w in want)
    return tuple(_keep(h, w) for h, w in zip(have, want))


def _check_out(bt, fir, spec, want, out_axes):
    """The paths of outputs that out_axes leaves unmapped but that may be batched."""
    unsure = []

    def visit(have, w, path):
        if w is False and batched(have):
            unsure.append(path)
        if isinstance(w, tuple) and isinstance(have, tuple) and len(w) == len(have):
            for k, (h, x) in enumerate(zip(have, w)):
                visit(h, x, f"{path}[{k}]")
    if isinstance(want, tuple) and isinstance(spec, tuple) and len(want) != len(spec):
        raise TransformError(f"vmap of {fir.name}: out_axes={out_axes!r} does not match the "
                             f"output's structure ({len(spec)} values)")
    visit(spec, want, "")
    return unsure


def _unbatched_spec(have, want):
    """The spec after rt.unbatch_out: leaves out_axes leaves unmapped are unbatched."""
    if want is False:
        return False
    if isinstance(want, tuple):
        haves = have if isinstance(have, tuple) else (have,) * len(want)
        return tuple(_unbatched_spec(h, w) for h, w in zip(haves, want))
    return have


def _quiet(body):
    """Examples on a path they do not take compute values that are thrown away: their
    floating point warnings (0/0, overflow) mean nothing, so a function that selects
    between paths runs under np.errstate(all='ignore')."""
    if not _has_batched_control(body):
        return body
    ctx = call("np.errstate", [])
    ctx.keywords = [gast.keyword(arg="all", value=const("ignore"))]
    return [gast.With(items=[gast.withitem(context_expr=ctx, optional_vars=None)],
                      body=body, type_comment=None)]


def _has_batched_control(body):
    for n in gast.walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(n, gast.Call) and dotted(n.func) == "rt.select":
            return True
    return False


__all__ = ["batched_function", "vmap_function", "Batching", "join", "batched"]
