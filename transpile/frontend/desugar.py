"""Python forms written as ones the front end knows, before A-normal form.

    for x in xs:                      broke = False
        if x > 0:                     for x in xs:
            break             ->          if x > 0:
    else:                                     broke = True
        y = -y                                break
                                      if not broke:
                                          y = -y

    match kind:                       if kind == "sum":
        case "sum":                       out = np.sum(x)
            out = np.sum(x)   ->      elif kind == "max" or kind == "top":
        case "max" | "top":               out = np.max(x)
            out = np.max(x)           else:
        case _:                           out = x
            out = x

`del name` only unbinds a name (the code that follows no longer reads it), so it goes; a
`global` declaration of a name the function only reads says nothing. Match patterns that
take a value apart (sequences, mappings, classes) are refused with a hint.
"""
import copy

import gast

from ..errors import error_at
from ..ir.nodes import assign, const, name


def desugar(fdef, src, taken):
    """`fdef` with the forms above rewritten (a new tree; `taken`: names in use, for the
    flags it adds)."""
    if not any(isinstance(n, _FORMS) or isinstance(n, (gast.For, gast.While)) and n.orelse
               for n in gast.walk(fdef)):
        return fdef
    fdef = copy.deepcopy(fdef)      # the parsed tree may be cached: leave it as written
    return _Desugar(fdef, src, set(taken)).generic_visit(fdef)


_FORMS = (gast.Match, gast.Delete, gast.Global)


class _Desugar(gast.NodeTransformer):
    def __init__(self, root, src, taken):
        self.root = root
        self.src = src
        self.taken = taken

    def fresh(self, hint):
        n, candidate = 0, hint
        while candidate in self.taken:
            n += 1
            candidate = f"{hint}_{n}"
        self.taken.add(candidate)
        return candidate

    def error(self, node, message, hint):
        return error_at(node, self.src, message, hint, pass_name="normalize")

    # a nested function is desugared when it is lifted; its `global` is its own
    def visit_FunctionDef(self, node):
        return node

    def visit_Lambda(self, node):
        return node

    # ---------------------------------------------------------------- loops with else
    def visit_For(self, node):
        return self._loop_else(node)

    def visit_While(self, node):
        return self._loop_else(node)

    def _loop_else(self, node):
        self.generic_visit(node)
        if not node.orelse:
            return node
        orelse, node.orelse = node.orelse, []
        if not _breaks(node.body):          # the else block always runs after the loop
            return [node] + orelse
        flag = self.fresh("broke")
        node.body = _flag_breaks(node.body, flag)
        ran_out = gast.If(test=gast.UnaryOp(op=gast.Not(), operand=name(flag)),
                          body=orelse, orelse=[])
        out = [assign(flag, const(False)), node, ran_out]
        for s in out:
            _locate(s, node)
        return out

    # ---------------------------------------------------------------- del, global
    def visit_Delete(self, node):
        if all(isinstance(t, gast.Name) for t in node.targets):
            return []
        raise self.error(node, "del of an item or attribute is not supported in transformed "
                         "code.", "build the container without it (a dict comprehension, a "
                         "slice), or `del` a name only.")

    def visit_Global(self, node):
        written = {n.id for n in gast.walk(self.root) if isinstance(n, gast.Name) and
                   isinstance(n.ctx, (gast.Store, gast.Del))}
        if not written & set(node.names):
            return []                       # read only: the declaration changes nothing
        raise self.error(node, "writing a global from transformed code is not supported.",
                         "return the value instead.")

    # ---------------------------------------------------------------- match
    def visit_Match(self, node):
        self.generic_visit(node)
        subject = self.fresh("subject")
        out = [_locate(assign(subject, node.subject), node)]
        chain = None
        for case in reversed(node.cases):
            test, binds = self._pattern(case.pattern, name(subject))
            body = binds + case.body
            if case.guard is not None:
                # `case p if guard`: binds first (the guard reads them, and as in Python
                # they stay bound when it fails), then the guard; failing, the cases after
                guarded = gast.If(test=case.guard, body=case.body,
                                  orelse=copy.deepcopy(chain) if chain is not None else [])
                body = binds + [_locate(guarded, case.guard)]
            if test is None:
                chain = body
            else:
                chain = [_locate(gast.If(test=test, body=body, orelse=chain or []),
                                 case.pattern)]
        return out + (chain or [])

    def _pattern(self, pattern, subject):
        """(test or None for "always", the statements binding its names) of a pattern."""
        if isinstance(pattern, gast.MatchValue):
            return _compare(subject, gast.Eq(), pattern.value), []
        if isinstance(pattern, gast.MatchSingleton):
            return _compare(subject, gast.Is(), const(pattern.value)), []
        if isinstance(pattern, gast.MatchAs):
            binds = [] if pattern.name is None else \
                [_locate(assign(pattern.name, subject), pattern)]
            if pattern.pattern is None:
                return None, binds
            test, inner = self._pattern(pattern.pattern, subject)
            return test, inner + binds
        if isinstance(pattern, gast.MatchOr):
            tests = []
            for p in pattern.patterns:
                test, binds = self._pattern(p, subject)
                if binds:
                    raise self.error(p, "a name bound inside an or-pattern is not supported "
                                     "in transformed code.", "bind the subject with `as`.")
                if test is None:
                    return None, []
                tests.append(test)
            return gast.BoolOp(op=gast.Or(), values=tests), []
        raise self.error(pattern, f"{type(pattern).__name__} patterns (taking the subject "
                         "apart) are not supported in transformed code.",
                         "match values, None/True/False, `_` or `case x:`; unpack the "
                         "subject inside the case.")


def _breaks(stmts):
    """Does a `break` of this loop (not of a loop inside it) occur in `stmts`?"""
    for s in stmts:
        if isinstance(s, gast.Break):
            return True
        if isinstance(s, (gast.For, gast.While, gast.FunctionDef, gast.Lambda)):
            continue
        for field in ("body", "orelse", "handlers", "finalbody", "cases"):
            if _breaks(getattr(s, field, None) or []):
                return True
        if isinstance(s, (gast.ExceptHandler, gast.match_case)) and _breaks(s.body):
            return True
    return False


def _flag_breaks(stmts, flag):
    """`stmts` with each break of this loop setting `flag` first."""
    out = []
    for s in stmts:
        if isinstance(s, gast.Break):
            out += [_locate(assign(flag, const(True)), s), s]
            continue
        if not isinstance(s, (gast.For, gast.While, gast.FunctionDef)):
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, _flag_breaks(getattr(s, field), flag))
            for inner in getattr(s, "handlers", None) or getattr(s, "cases", None) or []:
                inner.body = _flag_breaks(inner.body, flag)
        out.append(s)
    return out


def _compare(left, op, right):
    return gast.Compare(left=left, ops=[op], comparators=[right])


def _locate(node, origin):
    """`node` and the nodes in it without a position take `origin`'s (errors point there)."""
    for n in gast.walk(node):
        if getattr(n, "lineno", None) is None and hasattr(origin, "lineno"):
            gast.copy_location(n, origin)
    return node
