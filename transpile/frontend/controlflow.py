"""Control flow: `return`, `break` and `continue` -> flags and structured if/loops.

    if x > 0:                        if x > 0:
        return x * x          ->         out = x * x
    return 0.1 * x                   else:
                                         out = 0.1 * x
                                     return out

Afterwards a function has exactly one `return`, at its end, and loops have no jumps, which
is the form the reverse pass can invert. Statements after an `if` whose branch always exits
move into its other branch (no flag needed); otherwise a flag (`returned`, `broke`,
`skipped`) guards what follows. A `for` loop that breaks keeps iterating its range but does
nothing once its flag is set; a `while` loop's recomputed test becomes False.
"""
import gast

from ..ir import anno
from ..ir.anno import Anno
from ..ir.nodes import assign as _assign, const as _const, name as _name


def _set(flag, value):
    return _assign(flag, _const(value))


def _jumps(stmts, kinds, into_loops):
    """Does `stmts` contain a jump of `kinds` (looking into nested loops if asked)?"""
    for s in stmts:
        if isinstance(s, kinds):
            return True
        if isinstance(s, gast.If) and (_jumps(s.body, kinds, into_loops) or
                                       _jumps(s.orelse, kinds, into_loops)):
            return True
        if into_loops and isinstance(s, (gast.For, gast.While)) and _jumps(s.body, kinds, True):
            return True
    return False


def _always_exits(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (gast.Return, gast.Break, gast.Continue)):
        return True
    if isinstance(last, gast.If):
        return _always_exits(last.body) and _always_exits(last.orelse)
    return False


class ControlFlow:
    def __init__(self, namer):
        self.namer = namer
        self.retval = None
        self.returned = None       # flag, only when a return can't be structured away
        self.loops = []            # stack of {"break": flag, "continue": flag}

    def transform(self, fdef):
        body = fdef.body
        simple = (not _jumps(body[:-1], (gast.Return,), True) and
                  not any(_jumps([s], (gast.Return,), True) for s in body[-1:]
                          if not isinstance(s, gast.Return)))
        if simple and not _jumps(body, (gast.Break, gast.Continue), True):
            return fdef
        self.retval = self.namer.fresh("result")
        self.reads = {}
        for n in gast.walk(fdef):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                self.reads[n.id] = self.reads.get(n.id, 0) + 1
        if _jumps(body, (gast.Return,), True) and self._needs_flag(body):
            self.returned = self.namer.fresh("returned")
        new = self.block(body)
        prefix = [_set(self.returned, False)] if self.returned else []
        if not _always_exits(body):
            prefix.append(_set(self.retval, None))
        fdef.body = prefix + new + [gast.Return(value=_name(self.retval))]
        return fdef

    def _needs_flag(self, stmts):
        """A return inside a loop, or one that can't become an if/else, needs a flag."""
        for i, s in enumerate(stmts):
            if isinstance(s, (gast.For, gast.While)) and _jumps(s.body, (gast.Return,), True):
                return True
            if isinstance(s, gast.If) and _jumps([s], (gast.Return,), True):
                b, o = _always_exits(s.body), _always_exits(s.orelse)
                if not (b or o):
                    return True
                if self._needs_flag(s.body) or self._needs_flag(s.orelse + stmts[i + 1:]):
                    return True
                return False
        return False

    def block(self, stmts):
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, gast.Return):
                v = s.value
                prev = out[-1] if out else None
                if isinstance(v, gast.Name) and self.reads.get(v.id) == 1 and \
                        isinstance(prev, gast.Assign) and len(prev.targets) == 1 and \
                        isinstance(prev.targets[0], gast.Name) and prev.targets[0].id == v.id:
                    prev.targets[0].id = self.retval      # `t = x * x; out = t` -> `out = x * x`
                else:
                    out.append(gast.copy_location(gast.Assign(
                        targets=[_name(self.retval, True)], value=s.value, type_comment=None), s))
                if self.returned:
                    out.append(_set(self.returned, True))
                return out
            if isinstance(s, (gast.Break, gast.Continue)):
                kind = "break" if isinstance(s, gast.Break) else "continue"
                out.append(_set(self.loops[-1][kind], True))
                return out
            rest = stmts[i + 1:]
            if isinstance(s, gast.If) and self._may_exit(s):
                body_exits, else_exits = _always_exits(s.body), _always_exits(s.orelse)
                if body_exits and not else_exits:
                    out.append(self._if(s, s.body, s.orelse + rest))
                    return out
                if else_exits and not body_exits:
                    out.append(self._if(s, s.body + rest, s.orelse))
                    return out
                out.append(self._if(s, s.body, s.orelse))
                if not (body_exits and else_exits):
                    out.extend(self._guard(s, self.block(rest)))
                return out
            if isinstance(s, (gast.For, gast.While)):
                out.extend(self.loop(s))
                if _jumps(s.body, (gast.Return,), True):
                    out.extend(self._guard(s, self.block(rest)))
                    return out
                continue
            if isinstance(s, gast.If) and _jumps([s], (gast.Break, gast.Continue), True):
                out.append(self._if(s, s.body, s.orelse))   # loops inside it jump
                continue
            out.append(s)
        return out

    def _may_exit(self, s):
        return _jumps([s], (gast.Return,), True) or (
            self.loops and _jumps([s], (gast.Break, gast.Continue), False))

    def _if(self, s, body, orelse):
        new = gast.If(test=s.test, body=self.block(body), orelse=self.block(orelse))
        return anno.copy(s, gast.copy_location(new, s))

    def _flags_set_by(self, s):
        flags = []
        if self.returned and _jumps([s], (gast.Return,), True):
            flags.append(self.returned)
        if self.loops and not isinstance(s, (gast.For, gast.While)):
            for kind, cls in (("break", gast.Break), ("continue", gast.Continue)):
                if self.loops[-1].get(kind) and _jumps([s], (cls,), False):
                    flags.append(self.loops[-1][kind])
        return flags

    def _guard(self, s, rest, flags=None):
        if not rest:
            return []
        for flag in reversed(flags if flags is not None else self._flags_set_by(s)):
            rest = [gast.If(test=_name(flag), body=[], orelse=rest)]
        return rest

    def loop(self, s):
        cond_len = anno.get(s, Anno.COND_LEN, 0) if isinstance(s, gast.While) else 0
        user_body = s.body[:len(s.body) - cond_len]
        recompute = s.body[len(s.body) - cond_len:]
        flags = {}
        if _jumps(user_body, (gast.Break,), False):
            flags["break"] = self.namer.fresh("broke")
        if _jumps(user_body, (gast.Continue,), False):
            flags["continue"] = self.namer.fresh("skipped")
        self.loops.append(flags)
        body = self.block(user_body)
        self.loops.pop()
        if "continue" in flags:
            body = [_set(flags["continue"], False)] + body
        stop = [f for f in (flags.get("break"), self.returned if _jumps(
            user_body, (gast.Return,), True) else None) if f]
        pre = [_set(flags["break"], False)] if "break" in flags else []
        if isinstance(s, gast.For):
            body = self._guard(s, body, stop) if stop else body
            new = gast.For(target=s.target, iter=s.iter, body=body, orelse=[], type_comment=None)
        else:
            for flag in reversed(stop):   # once a flag is set the loop test is False
                recompute = [gast.If(test=_name(flag), body=[_set(s.test.id, False)],
                                     orelse=recompute)]
            new = gast.While(test=s.test, body=body + recompute, orelse=[])
            anno.set(new, Anno.COND_LEN, len(recompute))
        return pre + [gast.copy_location(new, s)]


def transform(fdef, namer):
    return ControlFlow(namer).transform(fdef)
