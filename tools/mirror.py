"""How much of ember's source reads like torch's: for each ember file, the share of its long lines that also occur
somewhere in the installed torch's Python sources, and the longest run of consecutive such lines.

    python tools/mirror.py                      # every ember file at or above --share or --run, worst first
    python tools/mirror.py ember/nn/utils/prune.py -v    # one file, with its shared lines listed

ember reads torch's source for semantics and copies none of it (CONTRIBUTING.md). Some lines are bound to match:
signatures, error messages the tests compare, attribute names that land in state_dicts and reprs. A high share or a
long run of shared lines means structure was copied too. A line counts when it is at least 30 characters once
stripped and is not a comment or an import. torch comes from the test extra; the tool only reads its files.
"""
import argparse
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN_CHARS = 30


def _long_lines(path):
    with open(path, errors="ignore") as f:
        stripped = (line.strip() for line in f)
        return [s for s in stripped if len(s) >= MIN_CHARS and not s.startswith(("#", "import ", "from "))]


def torch_lines():
    """Every long line of the installed torch's .py files, as a set."""
    import importlib.util
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("tools/mirror.py needs torch installed (pip install -e '.[test]')")
    seen = set()
    for path in glob.glob(os.path.join(spec.submodule_search_locations[0], "**", "*.py"), recursive=True):
        seen.update(_long_lines(path))
    return seen


def measure(path, known):
    """(share of long lines found in `known`, longest run of consecutive found lines, the found lines)."""
    lines = _long_lines(path)
    found = [s in known for s in lines]
    run = longest = 0
    for hit in found:
        run = run + 1 if hit else 0
        longest = max(longest, run)
    return sum(found) / max(1, len(lines)), longest, [s for s, hit in zip(lines, found) if hit]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="ember files (default: the whole package)")
    parser.add_argument("--share", type=float, default=0.25, help="list files from this share (default 0.25)")
    parser.add_argument("--run", type=int, default=6, help="or from this many consecutive shared lines (default 6)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each file's shared lines")
    args = parser.parse_args()
    known = torch_lines()
    paths = args.files or sorted(glob.glob(os.path.join(ROOT, "ember", "**", "*.py"), recursive=True))
    rows = []
    for path in paths:
        share, longest, shared = measure(path, known)
        if args.files or share >= args.share or longest >= args.run:
            rows.append((share, longest, os.path.relpath(path, ROOT), shared))
    for share, longest, name, shared in sorted(rows, reverse=True):
        print(f"{share:5.2f}  longest run {longest:2d}  {name}")
        if args.verbose:
            print("".join(f"        {s}\n" for s in shared), end="")


if __name__ == "__main__":
    main()
