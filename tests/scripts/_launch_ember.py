"""Run an unmodified PyTorch program with ember standing in for torch.

    python tests/scripts/_launch_ember.py SCRIPT [ARGS...]

Every `import torch` / `import torch.x.y` / `from torch.x import y` in the script resolves to
`ember` / `ember.x.y`: a meta-path finder placed first on sys.meta_path answers every `torch`
name, so real PyTorch (installed in the venv as the test oracle) can never be loaded by the
script. The script then runs as `__main__` with `sys.argv = [SCRIPT, ARGS...]`. Child interpreters
(multiprocessing's spawn start method) get the same aliasing from _ember_site/sitecustomize.py.
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _ember_name(fullname):
    """'torch' -> 'ember', 'torch.nn.functional' -> 'ember.nn.functional', else None."""
    if fullname == "torch":
        return "ember"
    if fullname.startswith("torch."):
        return "ember" + fullname[len("torch"):]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Hands back the already-imported ember module instead of creating a new one."""

    def __init__(self, module):
        self.module = module
        self.own_spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        # The import system stamps the torch.* spec on the module; ember's own spec goes back.
        module.__spec__ = self.own_spec


class TorchToEmber(importlib.abc.MetaPathFinder):
    """Resolves every torch.* import to the ember module of the same path."""

    def find_spec(self, fullname, path, target=None):
        ember_name = _ember_name(fullname)
        if ember_name is None:
            return None
        try:
            module = importlib.import_module(ember_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and _ember_name_prefix(exc.name, ember_name):
                # ember has no such module: report it under the name the script asked for.
                raise ModuleNotFoundError(
                    f"No module named '{fullname}' (ember has no '{ember_name}')",
                    name=fullname) from None
            raise
        is_package = hasattr(module, "__path__")
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module),
                                               is_package=is_package)


def _ember_name_prefix(missing, wanted):
    """True when the missing module is `wanted` or one of its parents (not some other import)."""
    return wanted == missing or wanted.startswith(missing + ".")


SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ember_site")


def install():
    """Alias ember as torch for the rest of this process and for the Python processes it starts
    (their sitecustomize, found through PYTHONPATH, calls install() again)."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    os.environ["EMBER_AS_TORCH"] = "1"
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if SITE not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([SITE, ROOT] + [p for p in paths if p])
    if "torch" in sys.modules and sys.modules["torch"].__name__ != "ember":
        raise RuntimeError("real torch is already imported; cannot alias ember as torch")
    import ember
    if not any(isinstance(finder, TorchToEmber) for finder in sys.meta_path):
        sys.meta_path.insert(0, TorchToEmber())
    for name, module in list(sys.modules.items()):
        if name == "ember" or name.startswith("ember."):
            sys.modules.setdefault("torch" + name[len("ember"):], module)
    return ember


def real_torch_modules():
    """Names of loaded modules whose file lies inside the real torch package (should be none)."""
    spec = importlib.machinery.PathFinder.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return []
    torch_dir = os.path.join(spec.submodule_search_locations[0], "")
    return sorted(name for name, module in list(sys.modules.items())
                  if (getattr(module, "__file__", None) or "").startswith(torch_dir))


def main(argv):
    if not argv:
        raise SystemExit("usage: _launch_ember.py SCRIPT [ARGS...]")
    script = os.path.abspath(argv[0])
    ember = install()
    sys.argv = [script] + list(argv[1:])
    sys.path.insert(0, os.path.dirname(script))
    runpy.run_path(script, run_name="__main__")
    if sys.modules.get("torch") is not ember or real_torch_modules():
        raise RuntimeError(f"real torch was loaded while running {script}: {real_torch_modules()}")


if __name__ == "__main__":
    main(sys.argv[1:])
