"""torch.hub: downloading checkpoints (download_url_to_file, load_state_dict_from_url) into torch's cache
directory ($TORCH_HOME/hub), and loading models from a local directory's hubconf.py (load(..., source="local")).
Repositories on GitHub are not fetched: load(..., source="github"), list and help (which torch defines for GitHub
only) raise NotImplementedError naming the local alternative."""
import contextlib
import errno
import hashlib
import os
import re
import shutil
import sys
import tempfile
import uuid
from urllib.parse import urlparse
from urllib.request import Request, urlopen

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

# module constants torch.hub exposes under these names
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # the hex digits after the last '-' of a file name
MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"

_hub_dir = None  # set_dir's choice; None: derived from the environment on each get_dir()
_CHUNK_BYTES = 1 << 16
_SOURCES = ("github", "local")


def _torch_home():
    """$TORCH_HOME, else $XDG_CACHE_HOME/torch, else ~/.cache/torch (torch's rule, so the caches coincide)."""
    cache_root = os.getenv("XDG_CACHE_HOME", "~/.cache")
    return os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(cache_root, "torch")))


def get_dir():
    """The hub cache directory: set_dir's, else $TORCH_HOME/hub ($TORCH_HOME defaults to $XDG_CACHE_HOME/torch,
    ~/.cache/torch), torch's directory, so both libraries share downloaded checkpoints."""
    if os.getenv("TORCH_HUB"):
        import warnings
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is None:
        return os.path.join(_torch_home(), "hub")
    return _hub_dir


def set_dir(d):
    """Use d as the hub cache directory."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


# ---- downloads ----

def _open_partial_file(dst):
    """A fresh '<dst>.<random hex>.partial' file opened for writing: the download goes there, and reaches dst
    only once complete and verified."""
    for _attempt in range(tempfile.TMP_MAX):
        candidate = f"{dst}.{uuid.uuid4().hex}.partial"
        try:
            return open(candidate, "w+b")
        except FileExistsError:
            pass
    raise FileExistsError(errno.EEXIST, "No usable temporary file name found")


def _declared_size(response):
    """The response's Content-Length as an int, or None when it gives none."""
    headers = getattr(response, "headers", None)
    length = headers.get("Content-Length") if headers else None
    return int(length) if length else None


def _copy_response(response, out, hasher, progress):
    """Stream response's body into the open file out (and into hasher, when one is given), reporting the byte
    count on stderr when progress is true."""
    total = _declared_size(response)
    received = 0
    chunk = response.read(_CHUNK_BYTES)
    while chunk:
        out.write(chunk)
        if hasher is not None:
            hasher.update(chunk)
        received += len(chunk)
        if progress:
            of_total = f"/{total}" if total else ""
            sys.stderr.write(f"\r{received}{of_total} bytes")
        chunk = response.read(_CHUNK_BYTES)
    if progress:
        sys.stderr.write("\n")


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download url to the file dst: into a temporary file beside it, its SHA256 checked against hash_prefix
    when given, then moved into place, so dst never holds a partial download (the temporary file is removed on
    any error). progress: a byte count on stderr while downloading."""
    dst = os.path.expanduser(dst)
    partial = _open_partial_file(dst)
    hasher = None if hash_prefix is None else hashlib.sha256()
    try:
        with urlopen(Request(url, headers={"User-Agent": "torch.hub"})) as response:
            _copy_response(response, partial, hasher, progress)
        partial.close()
        if hasher is not None:
            digest = hasher.hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(partial.name, dst)
    finally:
        partial.close()
        if os.path.exists(partial.name):  # left behind only when something above failed
            os.remove(partial.name)


def _hash_prefix_in(filename):
    """The '-<hex>.' part of a checkpoint's file name (torch's naming convention), or None."""
    found = HASH_REGEX.search(filename)
    return found.group(1) if found else None


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    """The object saved at url, downloaded once into model_dir (default get_dir()/checkpoints) and loaded with
    ember.load; check_hash: the file name's '-<hex>.' part must prefix the download's SHA256."""
    directory = os.path.join(get_dir(), "checkpoints") if model_dir is None else model_dir
    os.makedirs(directory, exist_ok=True)
    name = os.path.basename(urlparse(url).path) if file_name is None else file_name
    local_copy = os.path.join(directory, name)
    if not os.path.exists(local_copy):
        sys.stderr.write(f'Downloading: "{url}" to {local_copy}\n')
        expected = _hash_prefix_in(name) if check_hash else None
        download_url_to_file(url, local_copy, expected, progress=progress)
    from .serialization import load as load_file
    return load_file(local_copy, map_location=map_location, weights_only=weights_only)


# ---- hubconf.py entry points ----

def _github(repo):
    raise NotImplementedError(f"ember.hub does not download GitHub repositories ({repo!r}): clone it and use "
                              f"ember.hub.load(<its directory>, <entrypoint>, source='local')")


@contextlib.contextmanager
def _importable_from(directory):
    """directory first on sys.path for the duration (hubconf.py and its entry points import its siblings)."""
    sys.path.insert(0, directory)
    try:
        yield
    finally:
        sys.path.remove(directory)


def _import_hubconf(directory):
    """directory's hubconf.py, executed as a fresh module named 'hubconf.py' (torch's name for it)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(MODULE_HUBCONF, os.path.join(directory, MODULE_HUBCONF))
    hubconf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hubconf)
    return hubconf


def _require_dependencies(hubconf):
    """Raise naming every package in hubconf's `dependencies` list that cannot be imported."""
    import importlib.util
    wanted = getattr(hubconf, VAR_DEPENDENCY, None)
    if wanted is None:
        return
    absent = [package for package in wanted if importlib.util.find_spec(package) is None]
    if absent:
        raise RuntimeError(f"Missing dependencies: {', '.join(absent)}")


def _entrypoint(hubconf, model):
    """The callable named model in hubconf, once its dependencies are known to be importable."""
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    _require_dependencies(hubconf)
    entry = getattr(hubconf, model, None)
    if not callable(entry):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return entry


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """model(*args, **kwargs) from the hubconf.py of the local directory repo_or_dir (source="local")."""
    source = source.lower()
    if source not in _SOURCES:
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        _github(repo_or_dir)
    # the entry point runs with the directory still importable, as torch's does
    with _importable_from(repo_or_dir):
        entry = _entrypoint(_import_hubconf(repo_or_dir), model)
        return entry(*args, **kwargs)


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):  # noqa: A001
    """torch.hub.list reads a GitHub repository: not fetched by ember (NotImplementedError)."""
    _github(github)


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):  # noqa: A001
    """torch.hub.help reads a GitHub repository: not fetched by ember (NotImplementedError)."""
    _github(github)
