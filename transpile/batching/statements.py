"""The batching pass over one function: which names are batched (a flow-insensitive
analysis), and the rewrite of each statement; calls and control flow are its parts in
calls.py and control.py."""
import copy as _copy
import linecache
from collections import Counter

import gast

from .. import rules
from ..emit import origin_of
from ..errors import TransformError, error_at
from ..ir import anno
from ..ir.analysis import (assigned_in, definitely_defined, is_pop, is_push, is_stack_push,
                          is_update, maybe_defined, names_in, pop_stack, push_parts, reads,
                          targets, walk_simple)
from ..ir.anno import Anno
from ..ir.nodes import assign, call, const, name
from ..ir.templates import as_index_value, dotted
from .calls import COLLECTIVES, CallRules, axis_name_of, is_random, operand_first, operands
from .control import ControlFlowRules
from .specs import batched, flat, join, keep, literal_ast, uniform


class Batching(CallRules, ControlFlowRules):
    """Batches one IR function for its arguments' specs: `run` returns the statements, the
    result and its spec."""

    def __init__(self, program, fir, in_specs, callee_batched, axis_name, helper=False):
        self.program = program
        self.helper = helper         # a function the user's code calls (its arguments may
        # be Python lists of batched values: `mx([a[i] ** 2 for i in ...])`)
        self.fir = fir
        self.src = fir.source
        self.namer = program.function_namer(fir)
        self.size = self.namer.fresh("batch_size")
        self.in_specs = dict(zip(fir.params, in_specs))
        self.callee_batched = callee_batched   # (ir_name, specs) -> (name, result spec)
        self.axis_name = axis_name
        self.spec = {}
        self.arrays = set()                   # names known to hold arrays (not containers)

    def meets_the_examples(self, callee, seen=None):
        """Whether the user function `callee` (or one it calls) calls a collective: it is
        batched even for unbatched arguments (axis_index differs between examples, and
        a psum of a value they share counts them)."""
        seen = set() if seen is None else seen
        fir = self.program.functions.get(callee)
        if fir is None or callee in seen:
            return False
        seen.add(callee)
        for node in gast.walk(fir.node):
            if not isinstance(node, gast.Call):
                continue
            found = anno.get(node, Anno.PRIM)
            if found and found[1] in COLLECTIVES:
                return True
            inner = anno.get(node, Anno.CALLEE)
            if inner and self.meets_the_examples(inner, seen):
                return True
        return False

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

    def analyse(self, stmts):
        self.spec = {p: s for p, s in self.in_specs.items() if s is not False}
        self.field_names = _namedtuple_fields(stmts, self.program.namespace)
        self.local = _path_local(stmts, self.fir.node.body[-1], set(self.fir.params))
        self.uniform_needed = set()
        self.restless = set()
        # lists that grow (stacks, appended lists): one spec for all their elements
        self.grown = {push_parts(st)[0] for st in walk_simple(stmts) if is_push(st)}
        changed = True
        while changed:
            self.changed = False
            self._visit(stmts, False)
            for n in self.uniform_needed:
                # a container indexed by a key not known while transforming (`p[i]`), whose
                # elements have specs of their own: made batched throughout, since which
                # element a read gives is not known here (a parameter too: it is never
                # assigned, so contribute() does not see it)
                if self.of(n) is not True and batched(self.of(n)):
                    self.spec[n] = True
                    self.changed = True
            changed = self.changed
        self._find_arrays(stmts)
        self.seqs = _maybe_sequences(stmts, set(self.fir.params) if self.helper else set())
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
        if not batched(new) and new != old and isinstance(old, tuple):
            # a value no example differs in whose structure changed (`pad = (pad, pad)`
            # nests once more on every visit, 4**12 leaves before join cuts it): read as a
            # whole from now on, which is all an unbatched value needs
            self.restless.add(n)
        if n in self.restless and not batched(new):
            new = False
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
                if isinstance(s.value, gast.Call) and isinstance(s.value.func, gast.Name) and \
                        s.value.func.id == "slice":
                    # `slice_ = slice(H, None, None)`: its bounds must be the same in every
                    # example, which uniform_args checks when the code runs (`H` of `N, H =
                    # h.shape`, saved by a derivative with batched values, reads as batched)
                    value = False
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
            if not any(batched(s) for s in specs) and not self.meets_the_examples(callee):
                return False
            return self.callee_batched(callee, specs)[1]
        found = anno.get(v, Anno.PRIM)
        spelling = found[1] if found else None
        if spelling in COLLECTIVES:
            return self._collective_spec(v, spelling)
        part = self._part_of(v, spelling)
        if part is not None:
            return part
        made = self._namedtuple_made(v, spelling)
        if made is not None:
            return made
        field = self._field_of(v, spelling)
        if field is not None:
            return field
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
        args = [a for k, a in enumerate(operands(v)) if k not in same]
        if not any(batched(self.expr_spec(a)) for a in args) and not is_random(v):
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
                if spelling in ("len", "isinstance", "type", "rt.is_instance", "rt.type_of"):
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
        wanted = {"size"} if found[1].startswith("np.random.") else \
            UNIFORM_ROLES | {"start", "stop", "step"} if found[1] == "slice" else UNIFORM_ROLES
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
                name(a.id), literal_ast(self.of(a.id)), const(anno.get(v, Anno.PRIM)[1]),
                const(roles[k])])))
            self.spec[fresh] = False
            if k < len(v.args):
                new.args[k] = name(fresh)
            else:
                new.keywords[k - len(v.args)].value = name(fresh)
        return pre, (new if new is not None else v)

    def _element_of(self, v, spelling):
        """The spec of `rt.getitem(g, k)` (how forward mode spells `g[k]`) for a container
        `g` whose elements have their own specs: element k's for a literal k; for another
        k, as for `g[k]`, `g` is made batched throughout (uniform_needed). Else None."""
        if spelling != "rt.getitem" or len(v.args) != 2 or v.keywords:
            return None
        g, k = v.args
        spec = self.expr_spec(g)
        if not isinstance(spec, tuple):
            return None
        if not isinstance(k, gast.Constant) or type(k.value) is not int or \
                not -len(spec) <= k.value < len(spec):
            if not batched(spec) or batched(self.expr_spec(k)):
                return None
            if isinstance(g, gast.Name):
                self.uniform_needed.add(g.id)
            return True
        return spec[k.value]

    def _namedtuple_made(self, v, spelling):
        """The spec of `rt.to_like(fields, proto)` that makes a namedtuple (`State(x, w)`
        in the code, proto the class's instance of Nones): its fields' own specs, as a tuple
        display's (a field no example differs in stays so); else None."""
        if spelling != "rt.to_like" or len(v.args) != 2 or v.keywords or \
                not isinstance(v.args[1], gast.Name):
            return None
        proto = self.program.namespace.get(v.args[1].id)
        fields = self.expr_spec(v.args[0])
        if not (isinstance(proto, tuple) and hasattr(proto, "_fields")) or \
                not isinstance(fields, tuple) or len(fields) != len(proto):
            return None
        return fields

    def _field_of(self, v, spelling):
        """The spec of `rt.attribute(s, "w")` (`s.w`) for a namedtuple `s` whose fields
        have their own specs: field w's, where every assignment of `s` makes one of a
        known class (field_names); otherwise `s` is made batched throughout. Else None."""
        if spelling != "rt.attribute" or len(v.args) != 2 or v.keywords or \
                not isinstance(v.args[0], gast.Name) or \
                not isinstance(v.args[1], gast.Constant):
            return None
        spec = self.expr_spec(v.args[0])
        if not isinstance(spec, tuple):
            return None
        fields = self.field_names.get(v.args[0].id)
        if fields is not None and v.args[1].value in fields and len(fields) == len(spec):
            return spec[fields.index(v.args[1].value)]
        self.uniform_needed.add(v.args[0].id)
        return True

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
            like = call("rt.broadcast_batch", [like, name(self.size), literal_ast(keep(have, elem))])
        return call("rt.part", [g, k, like])

    def _collective_spec(self, v, spelling):
        axis = axis_name_of(v, spelling, self.literal)
        if spelling == "rt.axis_index":
            return axis == self.axis_name
        x = self.expr_spec(v.args[0]) if v.args else False
        if axis == self.axis_name or isinstance(axis, tuple) and self.axis_name in axis:
            # psum, all_gather, ...: the same for every example; the others keep a block
            # per example
            return spelling in ("rt.psum_scatter", "rt.ppermute", "rt.all_to_all")
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
                    found[1].startswith("np.") and found[1] not in _TUPLES_OF_INTS):
                made.add(t.id)
            else:
                other.add(t.id)
        self.arrays = made - other - set(self.fir.params)

    def run(self):
        body = self.fir.node.body
        ret = body[-1]
        stmts = body[:-1]
        bound = {}
        for st in walk_simple(stmts):
            for t in (targets(st) if not isinstance(st, (gast.If, gast.While)) else ()):
                bound[t] = bound.get(t, 0) + 1
        # (before the analysis: a collective's tuple of axis names is bound to a name)
        self.literals = {st.targets[0].id: st.value for st in walk_simple(stmts)
                         if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name)
                         and bound.get(st.targets[0].id) == 1 and
                         isinstance(st.value, (gast.Constant, gast.Tuple))}
        for st in walk_simple(stmts):
            for v in gast.walk(st):
                if isinstance(v, gast.Call) and anno.get(v, Anno.PRIM) and \
                        anno.get(v, Anno.PRIM)[1] in COLLECTIVES:
                    operand_first(v)
        self.analyse(stmts)
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
                all(h is True for h in flat(have))):
            return expr
        if isinstance(expr, (gast.List, gast.Tuple)) and not expr.elts:
            return expr          # an empty list: what it will hold is batched
        args = [expr, name(self.size)]
        if isinstance(want, tuple):
            # the leaves `want` batches: the others stay as they are (their spec says so)
            args.append(literal_ast(keep(have, want)))
        elif have is not False:
            args.append(literal_ast(have))
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
            return isinstance(a, gast.Name) and a.id in self.seqs and \
                not batched(self.of(a.id)) and not (self.helper and a.id in self.fir.params)

        if not any(batched(self.expr_spec(a)) for a in operands(v)):
            return [], v

        if isinstance(v, gast.Compare) and isinstance(v.ops[0], (gast.In, gast.NotIn,
                                                                 gast.Is, gast.IsNot)):
            return [], v        # `k in d`: a key of a dict, an item of a list, as it is;
            # `xs is None`: the object itself
        if isinstance(v, (gast.BinOp, gast.Compare)):
            # `xs - m` reads a list as an array; `xs + ys` of two lists joins them
            ops = operands(v)
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
                item = call("rt.lanes_array", [item, literal_ast(e), name(self.size)]) \
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
        # (a name unpacked from saved values may hold a list, or a string or None passed on:
        # rt.seq_array makes only a list or tuple an array)
        plain = "rt.seq_array" if a.id in self.unpacked else "np.asarray"
        pre.append(assign(fresh, call("rt.lanes_array",
                                      [name(a.id), literal_ast(spec), name(self.size)])
                          if batched(spec) else call(plain, [name(a.id)])))
        self.spec[fresh] = batched(spec)
        self.arrays.add(fresh)
        self.arrayized[key] = fresh
        return name(fresh)

    def _applies(self, v):
        """Whether a call's batching rule must run: a batched argument, or a random draw
        (which a loop over examples would make anew for each example)."""
        if any(batched(self.expr_spec(a)) for a in operands(v)):
            return True
        return is_random(v)

    def _convert_parts(self, value, have, want):
        if have == want or have is False and not batched(want):
            return value
        if isinstance(value, (gast.Tuple, gast.List)) and isinstance(have, tuple) and \
                len(have) == len(want):
            value.elts = [self.convert(e, h, w) if not isinstance(w, tuple) else
                          self._convert_parts(e, h, w)
                          for e, h, w in zip(value.elts, have, want)]
            return value
        if not isinstance(have, tuple) or len(have) == len(want):
            # a container made by a call (`rt.zero_tangent(ds)`) or held by a name: the
            # elements `want` batches get the axis, the others stay as the name's spec
            # says they are
            return self.convert(value, have, want)
        return self.convert(value, have, True)

    def unpack(self, s):
        names = [e.id for e in s.targets[0].elts]
        value, have = self.value(s, s.value, None)
        if batched(have) and not isinstance(have, tuple):
            return self.unpack_lanes(s, names, value, have)
        parts = have if isinstance(have, tuple) and len(have) == len(names) else \
            (uniform(have),) * len(names)
        new = anno.copy(s, gast.copy_location(
            gast.Assign(targets=s.targets, value=value, type_comment=None), s))
        out = [new]
        for n, p in zip(names, parts):
            if self.of(n) != p:
                out.append(self.convert_stmt(n, p, self.of(n)))
        return out

    def unpack_lanes(self, s, names, value, have):
        """`a, b = x` for x batched as a whole: each example's items, `rt.lane_getitem(x,
        k)` (a batched array's items lie along its second axis; a list's are its items),
        after the count is checked as Python checks it."""
        out = []
        if not isinstance(value, gast.Name):
            held = self.namer.fresh("unpacked")
            self.spec[held] = have
            out.append(anno.copy(s, gast.copy_location(assign(held, value), s)))
            value = name(held)
        check = gast.Expr(value=call("rt.lane_check_unpack", [value, const(len(names))]))
        out.append(anno.copy(s, gast.copy_location(check, s)))
        for k, n in enumerate(names):
            item = assign(n, call("rt.lane_getitem", [name(value.id), const(k)]))
            out.append(anno.copy(s, gast.copy_location(item, s)))
            if self.of(n) != uniform(have):
                out.append(self.convert_stmt(n, uniform(have), self.of(n)))
        return out

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
            return call("rt.lane_gather", [x, self._index_parts(index, si), const(batched(sx))])
        if isinstance(x, gast.Name) and x.id in self.arrays and _simple_index(v.slice):
            return gast.Subscript(value=x, slice=_lane_slice(v.slice), ctx=gast.Load())
        return call("rt.lane_getitem", [x, index])

    def _index_parts(self, index, si):
        """A batched index whose tuple also holds parts the same for all examples: those
        given the batch axis at run time (rt.lane_index_parts), as rt.lane_gather reads the
        first axis of every array part as the batch's."""
        if not isinstance(si, tuple) or all(part is True for part in si):
            return index
        return call("rt.lane_index_parts", [index, name(self.size), literal_ast(si)])

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
        container = False
        if batched(si) and x.id in self.arrays:
            idx = call("rt.lane_scatter_index", [self._index_parts(index, si),
                                                 name(self.size)])
        elif batched(si):
            # (a dict's or list's key is the same in every example: a key of a batched
            # dict's items, which vmap takes for batched)
            idx = call("rt.lane_key", [name(x.id), self._index_parts(index, si),
                                       name(self.size)])
        elif x.id in self.arrays and _simple_index(t.slice):
            idx = _lane_slice(t.slice)
        else:
            idx = call("rt.lane_index", [x, index])
            container = True
        idx_name = None
        if not isinstance(idx, (gast.Tuple, gast.Slice, gast.Constant, gast.Name)):
            idx_name = self.namer.fresh("index")
        out = []
        if idx_name:
            out.append(assign(idx_name, idx))
            idx = name(idx_name)
        if container or batched(si) and x.id not in self.arrays:
            # a dict may not hold the key yet (a key vmap takes for batched, see
            # rt.lane_gather, included): lane_slot gives None then
            slot = call("rt.lane_slot", [name(x.id), _copy.deepcopy(idx)])
        else:
            slot = gast.Subscript(value=name(x.id), slice=_copy.deepcopy(idx),
                                  ctx=gast.Load())
            anno.set(slot, Anno.PRIM, (rules.lookup("[]"), "[]"))
        if batched(si):
            # (a boolean mask lines values up with the elements it selects: rt.MaskIndex)
            def line_up(v):
                return call("rt.align_to_slot", [v, _copy.deepcopy(slot), _copy.deepcopy(idx)])
        else:
            def line_up(v):
                return call("rt.align_lanes", [v, _copy.deepcopy(slot)])
        if batched(sv):
            value = line_up(value)
        if self.mask is not None:      # only the examples on this path write
            cond = line_up(name(self.mask)) if batched(si) else name(self.mask)
            value = call("rt.select", [cond, value, _copy.deepcopy(slot)])
        new = gast.Assign(targets=[gast.Subscript(value=name(x.id), slice=idx,
                                                  ctx=gast.Store())],
                          value=value, type_comment=None)
        out.append(anno.copy(s, gast.copy_location(new, s)))
        return out


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


# numpy functions that take a sequence of arrays as a sequence (their batching rules handle
# lists whose elements are batched); any other numpy function reads a list as one array
SEQUENCE_ARGS = {"np.concatenate", "np.concat", "np.stack", "np.vstack", "np.row_stack",
                 "np.hstack", "np.dstack", "np.column_stack", "np.block", "np.array",
                 "np.asarray", "np.asanyarray", "np.broadcast_arrays", "np.meshgrid",
                 "np.select", "np.linalg.multi_dot",
                 "rt.caught"}        # (its values: the arguments of the user's try block)


# arguments (as batching templates name them) that must be the same in every example
UNIFORM_ROLES = {"shape", "newshape", "reps", "repeats", "shift", "offset",
                 "indices_or_sections", "pad_width", "num", "dimensions", "N", "M", "size",
                 "axis", "axes", "axis1", "axis2", "source", "destination", "keepdims",
                 "ddof"}


UNIFORM_HELPERS = {"rt.batched_axis": "axis", "rt.lane_axes": "axis", "rt.lane_perm": "axes",
                   "rt.lane_squeeze_axis": "axis", "rt.lane_hsplit_axis": "axis",
                   "rt.lane_reps": "reps", "rt.lane_pad_width": "pad_width",
                   "rt.pad_mask": "pad_width", "rt.lane_shape": "shape"}


# parameters of numpy functions (as their batching templates name them) that are not arrays
NOT_ARRAYS = {"axis", "axes", "shape", "newshape", "reps", "repeats", "dtype", "keepdims",
              "ord", "k", "offset", "n", "num", "indices_or_sections", "source", "destination",
              "axis1", "axis2", "order", "kind", "mode", "pad_width", "shift", "subscripts",
              "ddof", "endpoint", "base", "side", "sorter", "decimals", "out_", "initial",
              "M", "N", "lanes", "skip", "where", "retstep", "copy", "start", "stop", "step",
              "window", "strides", "padding", "dilation",
              "c_and_lower", "lu_and_piv"}   # scipy.linalg's (factor, flag/pivots) pairs


# where those (and the adjoints of joining) take their sequence of arrays
SEQUENCE_POSITION = {**{s: 0 for s in SEQUENCE_ARGS - {"np.array", "np.asarray", "np.asanyarray",
                                                      "np.block", "np.meshgrid",
                                                      "np.broadcast_arrays"}},
                     "rt.concatenate_adj": 1, "rt.stack_adj": 1, "rt.vstack_adj": 1,
                     "rt.hstack_adj": 1}


# Runtime helpers of derivative code read their arguments as arrays (np.shape(x),
# np.asarray(x)), as the numpy function they stand for did, except these, which take
# containers (adjoints of tuples and lists, pytrees) as they are.
RT_CONTAINER_ARGS = {"rt.add", "rt.as_grad", "rt.unbroadcast", "rt.basis_like", "rt.cast_like", "rt.filled",
                     "rt.getitem", "rt.index_add", "rt.index_add_into", "rt.index_clear",
                     "rt.index_update", "rt.jacobian_shape", "rt.part", "rt.seed",
                     "rt.sum_adj", "rt.sum_adj_t", "rt.to_like", "rt.to_list", "rt.to_tuple",
                     "rt.tree_scale", "rt.tree_vdot", "rt.written_part", "rt.reshape_like",
                     "rt.reversed_range", "rt.concatenate_adj", "rt.stack_adj",
                     "rt.vstack_adj", "rt.hstack_adj", "rt.copy", "rt.copy_stack",
                     "rt.zeros_like", "rt.tangent_zeros", "rt.zero_tangent", "rt.astype",
                     "rt.check_float_input", "rt.push", "rt.pop", "rt.pop_adjoint",
                     "rt.tree_index", "rt.tree_index_adj", "rt.tree_stack", "rt.tree_unstack",
                     "rt.tree_step_like", "rt.tree_stack_empty", "rt.lane_contains",
                     "rt.stop_gradient", "rt.loop_sequence", "rt.loop_sequence_adj", "rt.lane_guard",
                     "rt.lane_borrow", "rt.lane_guard_adj",
                     "rt.loop_sequence_tangent", "rt.check_length", "rt.check_instance",
                     "rt.check_jacobian_dtype", "rt.attribute",
                     # lists of arrays of np.r_/np.c_, np.select, np.column_stack, np.meshgrid
                     "rt.r_", "rt.c_", "rt.index_concat_lanes", "rt.index_concat_adj",
                     "rt.index_concat_tangent", "rt.broadcast_items", "rt.select_lanes",
                     "rt.select_choices_adj", "rt.select_default_adj",
                     "rt.select_default_place", "rt.column_stack_lanes", "rt.column_stack_adj",
                     "rt.meshgrid_adj", "rt.meshgrid_place"}


# numpy functions whose results are tuples, not arrays (a batched one is a tuple of arrays)
_TUPLES_OF_INTS = {"np.shape", "np.broadcast_shapes"}


def _namedtuple_fields(stmts, namespace):
    """Name -> the field names of the namedtuple class every assignment of it makes
    (`s = rt.to_like(fields, State_proto)`, normalized `State(x, w)`), for the names of
    which that holds."""
    found, other = {}, set()
    for st in walk_simple(stmts):
        for t in (targets(st) if not isinstance(st, (gast.If, gast.While)) else ()):
            v = st.value if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], gast.Name) else None
            proto = None
            if isinstance(v, gast.Call) and dotted(v.func) == "rt.to_like" and \
                    len(v.args) == 2 and isinstance(v.args[1], gast.Name):
                proto = namespace.get(v.args[1].id)
            fields = getattr(type(proto), "_fields", None) if isinstance(proto, tuple) \
                else None
            if fields is None or found.get(t, fields) != fields:
                other.add(t)
            else:
                found[t] = fields
    return {n: f for n, f in found.items() if n not in other}


def _reads_arrays(spelling, rule):
    """A runtime helper (with a batching template) that reads its arguments as arrays."""
    return spelling.startswith("rt.") and rule is not None and rule.kind == "template" and \
        spelling not in RT_CONTAINER_ARGS and not spelling.startswith("rt.lane") and \
        spelling not in UNIFORM_HELPERS


def _maybe_sequences(stmts, given=frozenset()):
    """Names that may hold a Python list or tuple: `given` (a helper's parameters), bound to
    a list or tuple literal, appended to, made by a function that returns a container,
    copied from such a name or popped from a stack such names were pushed on."""
    seqs, stacks = set(given), set()
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
            if isinstance(node, gast.Call) and dotted(node.func) in (
                    "isinstance", "type", "rt.is_instance", "rt.type_of"):
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
