"""Per-file line counts of the ember package (tinygrad's sz.py): watch files that only grow."""
import os
import sys


def main():
    root = os.path.join(os.path.dirname(__file__), "..", "ember")
    rows = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                p = os.path.join(dirpath, f)
                with open(p) as fh:
                    n = sum(1 for line in fh if line.strip() and not line.strip().startswith("#"))
                rows.append((n, os.path.relpath(p, os.path.join(root, ".."))))
    rows.sort(reverse=True)
    total = sum(n for n, _ in rows)
    shown = rows[:15] if "--summary" in sys.argv else rows
    for n, p in shown:
        print(f"{n:6d}  {p}")
    print(f"{total:6d}  total ({len(rows)} files)")


if __name__ == "__main__":
    main()
