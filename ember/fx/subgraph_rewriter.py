"""torch.fx.replace_pattern: find every non-overlapping occurrence of a pattern (a function or GraphModule with one
output) in a GraphModule's graph, by data dependencies, and put a replacement's nodes in its place."""
from typing import NamedTuple

from .graph_module import GraphModule
from .node import Node


class Match(NamedTuple):
    anchor: Node  # the node of the original graph that the pattern's output matched
    nodes_map: dict  # pattern node -> original node


def _graph_of(fn):
    if isinstance(fn, GraphModule):
        return fn.graph
    from ._symbolic_trace import symbolic_trace
    return symbolic_trace(fn).graph


def _match(pn, gn, env, claimed):
    """Whether original node gn computes what pattern node pn does, binding the pattern's placeholders in env."""
    if pn.op == "placeholder":
        bound = env.get(pn)
        if bound is None:
            env[pn] = gn
            return True
        return bound is gn
    if pn in env:
        return env[pn] is gn
    if not isinstance(gn, Node) or gn in claimed or pn.op != gn.op or pn.target != gn.target:
        return False
    env[pn] = gn
    if not (_match_args(pn.args, gn.args, env, claimed) and _match_args(pn.kwargs, gn.kwargs, env, claimed)):
        del env[pn]
        return False
    return True


def _match_args(pa, ga, env, claimed):
    if isinstance(pa, Node):
        return isinstance(ga, Node) and _match(pa, ga, env, claimed)
    if isinstance(pa, (tuple, list)):
        return isinstance(ga, (tuple, list)) and len(pa) == len(ga) and \
            all(_match_args(p, g, env, claimed) for p, g in zip(pa, ga))
    if isinstance(pa, dict):
        return isinstance(ga, dict) and pa.keys() == ga.keys() and \
            all(_match_args(pa[k], ga[k], env, claimed) for k in pa)
    return pa == ga


def replace_pattern(gm, pattern, replacement):
    """Replace each non-overlapping match of pattern in gm's graph by replacement (both callables taking the
    matched inputs, or GraphModules), recompile gm and return the matches. A match's inner values must not be
    used outside it."""
    original = gm.graph
    pg = _graph_of(pattern)
    rg = _graph_of(replacement)
    outputs = [n for n in pg.nodes if n.op == "output"]
    if len(outputs) != 1 or not isinstance(outputs[0].args[0], Node):
        raise NotImplementedError("ember.fx.replace_pattern takes a pattern with one output value")
    anchor = outputs[0].args[0]
    pattern_placeholders = [n for n in pg.nodes if n.op == "placeholder"]
    matches, claimed = [], set()
    for gn in list(original.nodes):
        env = {}
        if not _match(anchor, gn, env, claimed):
            continue
        inner = {p: g for p, g in env.items() if p.op != "placeholder"}
        if any(u not in inner.values() for p, g in inner.items() if g is not gn for u in g.users):
            continue  # an inner value is read outside the match: it cannot be removed
        claimed.update(inner.values())
        matches.append(Match(gn, env))
    for m in matches:
        val_map = {}
        replacement_placeholders = [n for n in rg.nodes if n.op == "placeholder"]
        for rp, pp in zip(replacement_placeholders, pattern_placeholders):
            val_map[rp] = m.nodes_map[pp]
        order = {n: i for i, n in enumerate(original.nodes)}
        first_user = min(m.anchor.users, key=order.__getitem__, default=m.anchor)
        with original.inserting_before(first_user):  # as torch: the replacement just before the value's first use
            result = original.graph_copy(rg, val_map)
        m.anchor.replace_all_uses_with(result)
        for pn in reversed(list(pg.nodes)):
            if pn.op in ("placeholder", "output") or pn not in m.nodes_map:
                continue
            node = m.nodes_map[pn]
            if not node.users:
                original.erase_node(node)
    gm.recompile()
    return matches

