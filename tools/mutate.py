"""Seeded mutation testing of ember: apply one-line mutants in a scratch copy, run the tests that cover the code.

Why a script of ours rather than mutmut/cosmic-ray: both run one test command per mutant, and ember's suite
takes minutes on two cores; here each mutant runs only a selection (the op-table rows named after the
enclosing op, plus the test files mapped to the module in SELECTION), stops at the first failure (-x), and
a failure counts as a kill only if that test passes on the unmutated copy. The worktree is never written:
mutants are applied in copies under a temporary directory, restored after each run.

    python tools/mutate.py --sample 200 --seed 19 [--jobs 1] [--timeout 300]

writes tools/mutation_report.json and tools/mutation_report.md (survivors with file:line and the mutation);
survivors listed in tools/mutation_equivalent.txt (``path:line | mutation | line's code | reason``, matched on
path, mutation and code so that moved lines still match) count as equivalent.
"""
import argparse
import ast
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PACKAGES = ["ember/_ops", "ember/autograd", "ember/nn", "ember/optim", "ember/_backend", "ember/utils/data",
            "ember/serialization.py"]
EQUIVALENT = os.path.join(ROOT, "tools", "mutation_equivalent.txt")

# Module (path prefix, most specific wins) -> test files that exercise it (one pytest command, or a list of
# them). The op table (tests/ops) is added, filtered with -k by the enclosing op's name, for everything under
# ember/_ops and ember/_backend; a module whose functions are reached only through another module's op names
# its rows here (grid_bicubic: the grid_sample rows).
SELECTION = {
    "ember/_ops/_registry.py": ["tests/test_inplace.py", "tests/test_variants.py", "tests/test_promotion.py",
                                "tests/test_autograd.py::test_node_hook_sees_none_for_inputs_without_grad"],
    "ember/_ops/conv.py": ["tests/test_nn_conv.py", "tests/test_nn_conv_fuzz.py"],
    "ember/_ops/pool.py": ["tests/test_nn_pool.py", "tests/test_nn_pool_fuzz.py"],
    "ember/_ops/norm.py": ["tests/test_nn_norm.py", "tests/test_nn_norm_fuzz.py"],
    "ember/_ops/loss.py": ["tests/test_nn_loss.py"],
    "ember/_ops/ctc.py": ["tests/test_nn_loss.py"],
    "ember/_ops/distance.py": ["tests/test_nn_loss.py", "tests/test_nn_layers.py"],
    "ember/_ops/rnn.py": ["tests/test_nn_rnn.py", "tests/test_nn_rnn_fuzz.py"],
    "ember/_ops/attention.py": ["tests/test_nn_transformer.py"],
    "ember/_ops/activation.py": ["tests/test_nn_layers.py"],
    "ember/_ops/dropout.py": ["tests/test_nn_layers.py"],
    "ember/_ops/embedding.py": ["tests/test_nn_layers.py"],
    "ember/_ops/sampling.py": ["tests/test_nn_sampling.py"],
    "ember/_ops/grid_bicubic.py": [["tests/ops", "-k", "grid_sample"], ["tests/test_nn_sampling.py"]],
    "ember/_ops/grid_volumetric.py": [["tests/ops", "-k", "grid_sample"], ["tests/test_nn_sampling.py"]],
    "ember/_ops/fft.py": ["tests/test_fft.py"],
    "ember/_ops/spectral.py": ["tests/test_stft.py"],
    "ember/_ops/special.py": ["tests/test_special.py", "tests/test_opinfo_fft_special.py"],
    "ember/_ops/window": ["tests/test_signal_windows.py"],
    "ember/_ops/random": ["tests/test_random.py", "tests/test_random_streams.py"],
    "ember/_ops/index": ["tests/test_indexing_fuzz.py"],
    "ember/_ops/scatter.py": ["tests/test_indexing_fuzz.py"],
    "ember/_ops/reduction.py": ["tests/test_reduction_fuzz.py"],
    "ember/_ops/statistics.py": ["tests/test_reduction_fuzz.py"],
    "ember/_ops/products.py": ["tests/test_matmul_fuzz.py"],
    "ember/_ops/linalg_common.py": [["tests/test_matmul_fuzz.py"], ["tests/ops", "-k", "linalg"]],  # shared helpers
    "ember/_ops/linalg": ["tests/test_matmul_fuzz.py"],
    "ember/_ops/shape.py": ["tests/test_views.py", "tests/test_shape_fuzz.py"],
    "ember/_ops/strided.py": ["tests/test_views.py", "tests/test_shape_fuzz.py"],
    "ember/_ops/view_copies.py": ["tests/test_views.py"],
    "ember/_ops/joining.py": ["tests/test_shape_fuzz.py"],
    "ember/_ops/splitting.py": ["tests/test_shape_fuzz.py"],
    "ember/_ops/creation.py": ["tests/test_creation.py"],
    "ember/_ops/sparse": ["tests/test_sparse.py"],
    "ember/_ops/sparse_csr": ["tests/test_sparse_csr.py"],
    "ember/_ops/complex.py": ["tests/test_complex_autograd.py"],
    "ember/_ops/pointwise": ["tests/test_promotion.py", "tests/test_inplace.py"],
    "ember/_ops": ["tests/test_bad_input.py", "tests/test_surface.py"],
    "ember/_backend/cpu_features.py": ["tests/test_nn_conv.py"],
    "ember/_backend/allocator.py": ["tests/test_allocator.py"],
    "ember/_backend/dlpack.py": ["tests/test_dlpack.py"],
    "ember/_backend/mt19937.py": ["tests/test_random.py", "tests/test_random_streams.py"],
    "ember/_backend/fft_numpy.py": ["tests/test_fft.py"],
    "ember/_backend/special": ["tests/test_special.py", "tests/test_special32.py", "tests/test_function_domains.py"],
    "ember/_backend/conv_numpy.py": [["tests/test_nn_conv.py", "tests/test_nn_conv_fuzz.py"],
                                     ["tests/test_nn_sampling.py", "tests/test_nn_pool.py"],
                                     ["tests/ops", "-k", "grid_sample or interpolate or pool or conv"]],
    "ember/_backend/polynomials.py": ["tests/test_special.py"],
    "ember/_backend/gelu_numpy.py": [["tests/test_gelu_tables.py", "tests/test_gelu_fuzz.py", "tests/test_special32.py"],
                                     ["tests/ops", "-k", "gelu"]],
    "ember/_backend/depthwise_numpy.py": [["tests/test_nn_conv.py", "tests/test_nn_conv_fuzz.py"],
                                          ["tests/test_nn_pool.py"]],
    "ember/_backend/blas.py": ["tests/test_matmul_fuzz.py"],
    "ember/_backend/gelsy.py": ["tests/test_lstsq_gelsy.py"],
    "ember/_backend/numpy_cpu.py": ["tests/test_allocator.py"],
    "ember/_backend": ["tests/test_numpy_workarounds.py", "tests/test_views.py"],
    "ember/autograd/function.py": ["tests/test_autograd_function.py", "tests/test_autograd.py"],
    "ember/autograd/engine.py": ["tests/test_sparse_embedding.py", "tests/test_sparse_csr.py"],
    "ember/autograd/functional.py": ["tests/test_func.py", "tests/test_autograd.py"],
    "ember/autograd/profiler.py": ["tests/test_profiler.py"],
    "ember/autograd/gradcheck.py": ["tests/test_autograd.py", "tests/test_complex_autograd.py"],
    "ember/autograd/": ["tests/test_autograd.py", "tests/test_autograd_memory.py", "tests/test_autograd_function.py"],
    "ember/nn/init.py": ["tests/test_nn_init.py"],
    "ember/nn/utils/rnn.py": [["tests/test_nn_utils.py"], ["tests/test_nn_rnn.py"]],
    "ember/nn/utils": ["tests/test_nn_utils.py"],
    "ember/nn/parallel": [["tests/test_ddp_engine.py"], ["tests/test_ddp.py"]],
    "ember/nn/modules/conv.py": ["tests/test_nn_conv.py"],
    "ember/nn/modules/pooling.py": ["tests/test_nn_pool.py"],
    "ember/nn/modules/rnn.py": ["tests/test_nn_rnn.py"],
    "ember/nn/modules/loss.py": ["tests/test_nn_loss.py"],
    "ember/nn/modules/transformer.py": ["tests/test_nn_transformer.py"],
    "ember/nn/modules/attention.py": ["tests/test_nn_transformer.py"],
    "ember/nn/modules/batchnorm.py": ["tests/test_nn_norm.py", "tests/test_nn_lazy.py"],
    "ember/nn/modules/instancenorm.py": ["tests/test_nn_norm.py"],
    "ember/nn/modules/normalization.py": ["tests/test_nn_norm.py"],
    "ember/nn/modules/upsampling.py": ["tests/test_nn_sampling.py"],
    "ember/nn/modules/module.py": ["tests/test_nn_module.py"],
    "ember/nn/modules/lazy.py": ["tests/test_nn_lazy.py"],
    "ember/nn/modules/_module": ["tests/test_nn_module.py"],
    "ember/nn/modules/container.py": ["tests/test_nn_module.py"],
    "ember/nn/functional.py": ["tests/test_nn_layers.py", "tests/test_nn_loss.py", "tests/test_nn_sampling.py"],
    "ember/nn/": ["tests/test_nn_layers.py", "tests/test_nn_module.py"],
    "ember/optim/lr_scheduler.py": ["tests/test_lr_scheduler.py"],
    "ember/optim/sparse_adam.py": ["tests/test_sparse_embedding.py"],
    "ember/optim": ["tests/test_optim.py", "tests/test_optim_fuzz.py"],
    "ember/utils/data/distributed.py": ["tests/test_distributed_sampler.py"],
    "ember/utils/data/_worker.py": ["tests/test_dataloader_workers.py"],
    "ember/utils/data": ["tests/test_data.py", "tests/test_dataloader_workers.py"],
    "ember/serialization.py": ["tests/test_serialization.py", "tests/test_weights_only.py"],
}

_CMP_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
             ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
_BIN_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Mult,
             ast.Mod: ast.FloorDiv}


def _copy(node):
    return ast.parse(ast.unparse(node), mode="eval").body


def _const_mutant(value):
    """The classic constant change: True<->False, 0->1, 1->0, n->n+1, x->x+1 for floats, None->0."""
    if value is True or value is False:
        return not value
    if value is None:
        return 0
    if isinstance(value, int):
        return {0: 1, 1: 0}.get(value, value + 1)
    if isinstance(value, float):
        return value + 1.0
    return ...


def _skip_ids(tree):
    """Node ids not to mutate: docstrings, annotations, f-string parts, `if __name__`/TYPE_CHECKING."""
    skip = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skip.update(id(n) for n in ast.walk(body[0]))
        for ann in [getattr(node, "annotation", None), getattr(node, "returns", None)]:
            if ann is not None:
                skip.update(id(n) for n in ast.walk(ann))
        if isinstance(node, ast.JoinedStr):
            skip.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) or (
                isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)):
            skip.update(id(n) for n in ast.walk(node))
    return skip


def sites(path):
    """Every (node, description, mutated node) of one file, in source order."""
    src = open(os.path.join(ROOT, path)).read()
    tree = ast.parse(src)
    skip = _skip_ids(tree)
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                new = _copy(node)
                new.ops[i] = _CMP_SWAP[type(op)]()
                out.append((node, f"compare {type(op).__name__} -> {type(new.ops[i]).__name__}", new))
        elif isinstance(node, ast.BinOp) and type(node.op) in _BIN_SWAP:
            if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
                continue  # string formatting / concatenation
            new = _copy(node)
            new.op = _BIN_SWAP[type(node.op)]()
            out.append((node, f"binop {type(node.op).__name__} -> {type(new.op).__name__}", new))
        elif isinstance(node, ast.BoolOp):
            new = _copy(node)
            new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            out.append((node, f"boolop {type(node.op).__name__} -> {type(new.op).__name__}", new))
        elif isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes)):
            value = _const_mutant(node.value)
            if value is not ...:
                out.append((node, f"constant {node.value!r} -> {value!r}", ast.Constant(value)))
        elif isinstance(node, ast.If):
            guards_raise = any(isinstance(s, ast.Raise) for s in node.body)
            if guards_raise:
                out.append((node.test, "raise's condition -> False", ast.Constant(False)))
            else:
                out.append((node.test, "negate if", ast.UnaryOp(ast.Not(), _copy(node.test))))
    out.sort(key=lambda s: (s[0].lineno, s[0].col_offset, s[1]))
    return src, out


def apply(src, node, new):
    """The source with node's text replaced by the (parenthesised) unparse of new; None if it would not compile."""
    lines = src.splitlines(keepends=True)

    def offset(lineno, col):
        line = lines[lineno - 1]
        return sum(len(l) for l in lines[:lineno - 1]) + len(line.encode()[:col].decode())
    # col offsets are UTF-8 byte offsets: convert on the affected lines.
    start, end = offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)
    mutated = src[:start] + "(" + ast.unparse(new) + ")" + src[end:]
    try:
        if ast.dump(ast.parse(mutated)) == ast.dump(ast.parse(src)):
            return None
    except SyntaxError:
        return None
    return mutated


def enclosing_names(src, lineno):
    """Op names for -k: the enclosing top-level def/class and a row's first string argument; inside a private
    helper, every public def/class of the file (the ops that may reach it)."""
    tree = ast.parse(src)
    names, private = [], False
    for stmt in tree.body:
        if stmt.lineno <= lineno <= stmt.end_lineno:
            if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                names.append(re.sub(r"_(backward|forward|kernel)$", "", stmt.name.strip("_")))  # svd_backward: svd
                private = stmt.name.startswith("_")
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Call) and sub.args and isinstance(sub.args[0], ast.Constant) and \
                        isinstance(sub.args[0].value, str) and sub.lineno <= lineno <= sub.end_lineno and \
                        re.fullmatch(r"[A-Za-z_][\w.]*", sub.args[0].value):
                    names.append(sub.args[0].value)
    if private:
        names += [s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))
                  and not s.name.startswith("_")]
    for stmt in tree.body:  # the public functions of the file that call the enclosing class or function,
        # through private helpers, two public levels deep (VectorNorm: vector_norm, then norm, dist, renorm;
        # SelectSorted via _select: kthvalue, median ...)
        if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.Assign)) and stmt.lineno <= lineno <= stmt.end_lineno:
            roots = [t.id for t in stmt.targets if isinstance(t, ast.Name)] if isinstance(stmt, ast.Assign) else \
                [stmt.name]  # (a module-level constant: the functions that read it)
            users, todo = set(), [(r, 0) for r in roots]
            while todo:
                name, depth = todo.pop()
                for f in tree.body:
                    if isinstance(f, ast.FunctionDef) and f.name not in users and f.name not in roots and any(
                            isinstance(n, ast.Name) and n.id == name for n in ast.walk(f)):
                        users.add(f.name)
                        public = not f.name.startswith("_")
                        if depth + public < 2:
                            todo.append((f.name, depth + public))
            names += sorted(u for u in users if not u.startswith("_"))
    names += [re.sub(r"^(linalg|special|fft)_", r"\1.", n) for n in names]  # linalg_cholesky: the linalg.cholesky rows
    return [n for n in dict.fromkeys(names) if len(n) > 1]


def selection(path, src, lineno):
    """The pytest commands (argument lists) for a mutant at path:lineno, cheapest first."""
    cmds = []
    if path.startswith(("ember/_ops/", "ember/_backend/")):
        names = enclosing_names(src, lineno)
        if names:
            cmds.append(["tests/ops", "-k", " or ".join(names)])
    for prefix in sorted(SELECTION, key=len, reverse=True):  # the module's row, then its package's
        if path.startswith(prefix):
            row = SELECTION[prefix]
            cmds += row if isinstance(row[0], list) else [row]
    if any(isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.lineno <= lineno < f.body[0].lineno
           for f in ast.walk(ast.parse(src))):  # in a signature (a default value): the signature test pins them
        cmds.append(["tests/test_signatures.py"])
    return cmds


def pytest(root, args, timeout):
    """Run pytest in root; (status, failing node ids, seconds) with status passed/failed/timeout/none."""
    env = dict(os.environ, PYTHONPATH=root, PYTHONDONTWRITEBYTECODE="1")
    t = time.time()
    # its own session, so that a timeout kills the whole group (DataLoader workers, mpiexec ranks), not only pytest
    p = subprocess.Popen([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *args], cwd=root,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return "timeout", [], time.time() - t
    failed = re.findall(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", out, re.M)  # ids may hold spaces
    status = {0: "passed", 5: "none"}.get(p.returncode, "failed")
    if status == "failed" and not failed:
        failed = ["<collection: " + out.strip().splitlines()[-1] + ">"] if out.strip() else ["<crash>"]
    return status, failed, time.time() - t


class Worker:
    """A scratch copy of the worktree's tracked files; mutants are written there and restored after."""

    def __init__(self, base):
        self.root = tempfile.mkdtemp(prefix="ember-mut-", dir=base)
        files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        for f in files.split():
            dst = os.path.join(self.root, f)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.isfile(os.path.join(ROOT, f)):
                shutil.copy2(os.path.join(ROOT, f), dst)


def load_equivalent():
    eq = {}
    if os.path.exists(EQUIVALENT):
        for line in open(EQUIVALENT):
            parts = [p.strip() for p in line.split(" | ")]
            if len(parts) == 4 and not line.startswith("#"):
                eq[(parts[0].rsplit(":", 1)[0], parts[1], parts[2])] = parts[3]
    return eq


def sample(n, seed):
    """A seeded sample of n mutants, spread over PACKAGES (proportional to their sites, at least n // 14 each)."""
    rng = random.Random(seed)
    per_pkg = {}
    for pkg in PACKAGES:
        paths = [pkg] if pkg.endswith(".py") else sorted(
            os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(os.path.join(ROOT, pkg))
            for f in fs if f.endswith(".py"))
        per_pkg[pkg] = [(p, i) for p in paths for i in range(len(sites(p)[1]))]
    total = sum(len(v) for v in per_pkg.values())
    quota = {pkg: max(n // 14, round(n * len(v) / total)) for pkg, v in per_pkg.items()}
    while sum(quota.values()) > n:
        quota[max(quota, key=quota.get)] -= 1
    while sum(quota.values()) < n:
        quota[max(quota, key=lambda k: len(per_pkg[k]) / quota[k])] += 1
    chosen = []
    for pkg in PACKAGES:
        chosen += rng.sample(per_pkg[pkg], min(quota[pkg], len(per_pkg[pkg])))
    rng.shuffle(chosen)  # any prefix of the run is itself a spread sample
    return chosen


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300, help="seconds per pytest command")
    ap.add_argument("--only", help="run only the mutants whose 'path:line' starts with this")
    ap.add_argument("--out", default=os.path.join(ROOT, "tools", "mutation_report"))
    ap.add_argument("--rerun", action="store_true",
                    help="run again only the survivors (and timeouts) of the report at --out, keeping the rest")
    ap.add_argument("--resume", action="store_true",
                    help="run the mutants still pending in the report at --out (an interrupted run), keeping the rest")
    args = ap.parse_args()
    t0 = time.time()
    parsed = {}
    mutants = []

    def make(path, i):
        if path not in parsed:
            parsed[path] = sites(path)
        src, ss = parsed[path]
        node, desc, new = ss[i]
        line = src.splitlines()[node.lineno - 1].strip()
        return dict(path=path, line=node.lineno, col=node.col_offset, mutation=desc, code=line,
                    src=apply(src, node, new), cmds=selection(path, src, node.lineno))

    kept = []
    if args.rerun or args.resume:  # the earlier verdicts stand except for those to run again, found again by
        # path, mutation and code (the sample itself moves when sources gain or lose sites, so it is not redrawn)
        old = json.load(open(args.out + ".json"))["mutants"]
        again_status = (("pending",) if args.resume else ()) + (("survived", "timeout", "equivalent")
                                                                 if args.rerun else ())
        for m in old:
            if m["status"] not in again_status:
                kept.append(m)
                continue
            src, ss = parsed.setdefault(m["path"], sites(m["path"]))
            lines = src.splitlines()
            found = [i for i, (node, desc, _) in enumerate(ss)
                     if desc == m["mutation"] and lines[node.lineno - 1].strip() == m["code"]]
            if not found:
                m["status"] = "gone"  # the code changed under it
                kept.append(m)
                continue
            # (two sites of one mutation on one line, `x is None ... y is None`: the column tells them apart)
            again = make(m["path"], min(found, key=lambda i: (abs(ss[i][0].lineno - m["line"]),
                                                              abs(ss[i][0].col_offset - m.get("col", 0)))))
            again.update({k: m[k] for k in ("status", "seconds", "reason") if k in m})  # if --only leaves it
            mutants.append(again)
    else:
        mutants = [make(path, i) for path, i in sample(args.sample, args.seed)]
    if args.only:  # (in a rerun, the others keep their last verdict)
        kept += [m for m in mutants if not f"{m['path']}:{m['line']}".startswith(args.only)]
        mutants = [m for m in mutants if f"{m['path']}:{m['line']}".startswith(args.only)]
    base = tempfile.mkdtemp(prefix="ember-mutate-")
    workers = [Worker(base) for _ in range(args.jobs)]
    clean = Worker(base)
    clean_cache = {}
    equivalent = load_equivalent()

    def run(k, worker):
        m = mutants[k]
        m["status"], m["killed_by"], m["seconds"] = "unviable", None, 0.0
        if m["src"] is not None:
            run_tests(m, worker)
        key = (m["path"], m["mutation"], m["code"])
        if m["status"] == "survived" and key in equivalent:
            m["status"], m["reason"] = "equivalent", equivalent[key]
        print(f"[{k + 1}/{len(mutants)}] {m['status']:10s} {m['path']}:{m['line']} {m['mutation']} "
              f"({m['seconds']} s)", flush=True)
        with lock:  # the report so far, so that an interrupted run still leaves one
            done.append(m)
            write_report(done + [dict(p, status="pending") for p in mutants if not any(p is d for d in done)],
                         args, time.time() - t0, quiet=True)

    def run_tests(m, worker):
        """Write the mutant into the worker's copy, run its selection until a kill, restore the copy."""
        target = os.path.join(worker.root, m["path"])
        original = open(target).read()  # the copy's own text: the worktree may be edited while the run goes on
        t = time.time()
        try:
            with open(target, "w") as fh:
                fh.write(m["src"])
            m["status"] = "survived"
            for cmd in m["cmds"]:
                deselect = []  # tests that fail unmutated too: run the command again without them (-x stopped it)
                while m["status"] == "survived":
                    status, failed, _ = pytest(worker.root, cmd + deselect, args.timeout)
                    if status == "timeout":
                        m["status"] = "timeout"
                    if status != "failed":
                        break
                    node = failed[0]
                    if node not in clean_cache:  # a kill counts only if the test passes unmutated
                        clean_cache[node] = pytest(clean.root, [node] if "::" in node else cmd, args.timeout)[0]
                    if clean_cache[node] in ("passed", "none"):
                        m["status"], m["killed_by"] = "killed", node
                    elif clean_cache[node] == "timeout":
                        m["status"] = "timeout"  # not known whether it kills
                    elif "::" not in node or len(deselect) >= 10:
                        break
                    else:
                        deselect += ["--deselect", node]
                if m["status"] != "survived":
                    break
        finally:
            with open(target, "w") as fh:
                fh.write(original)
        m["seconds"] = round(time.time() - t, 1)

    free = list(range(args.jobs))
    lock = threading.Lock()
    done = list(kept)
    for m in mutants:  # the whole sample is in every report written, so that --resume can finish it
        m.setdefault("status", "pending")

    def task(k):
        with lock:
            w = free.pop()
        try:
            run(k, workers[w])
        finally:
            with lock:
                free.append(w)

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(task, range(len(mutants))))
    shutil.rmtree(base, ignore_errors=True)
    write_report(done, args, time.time() - t0)


def write_report(mutants, args, seconds, quiet=False):
    """JSON (every mutant) and markdown (the score and the survivors) next to args.out."""
    counts = {}
    for m in mutants:
        counts[m["status"]] = counts.get(m["status"], 0) + 1
    killed = counts.get("killed", 0)
    scored = killed + counts.get("survived", 0)  # timeouts (a selection too slow, not a hang) are not scored
    score = 100.0 * killed / scored if scored else 0.0
    summary = dict(sample=len(mutants), seed=args.seed, seconds=round(seconds),
                   mutant_seconds=round(sum(m.get("seconds", 0) for m in mutants)), counts=counts,
                   score=round(score, 1), command=" ".join(["python tools/mutate.py", *sys.argv[1:]]))
    with open(args.out + ".json", "w") as fh:
        json.dump(dict(summary=summary, mutants=[{k: v for k, v in m.items() if k != "src"} for m in mutants]), fh,
                  indent=1)
    rows = [f"# Mutation run\n\n`{summary['command']}`: {len(mutants)} mutants (seed {args.seed}), "
            f"{round(seconds / 60)} min. Counts: {counts}. Score killed / (killed + survived; equivalent, unviable "
            f"and timed-out mutants not scored): "
            f"{killed}/{scored} = {score:.1f}%.\n"]
    for status in ("survived", "timeout", "equivalent"):
        rows.append(f"\n## {status}\n")
        for m in mutants:
            if m["status"] == status:
                rows.append(f"- `{m['path']}:{m['line']}` {m['mutation']}: `{m['code']}`"
                            + (f" — {m['reason']}" if status == "equivalent" else "") + "\n")
    with open(args.out + ".md", "w") as fh:
        fh.writelines(rows)
    if not quiet:
        print("".join(rows[:1]))


if __name__ == "__main__":
    main()
