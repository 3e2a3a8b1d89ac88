"""torch.hub: downloading checkpoints (download_url_to_file, load_state_dict_from_url) into torch's cache
directory ($TORCH_HOME/hub), and loading models from a local directory's hubconf.py (load(..., source="local"),
list and help of a local directory). Repositories on GitHub (source="github") are not fetched: that raises
NotImplementedError naming the local alternative."""
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

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # torch's: the hex digits after the last '-' of a file name
MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"
_hub_dir = None


def _get_torch_home():
    return os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"),
                                                                   "torch")))


def get_dir():
    """The hub cache directory: set_dir's, else $TORCH_HOME/hub ($TORCH_HOME defaults to $XDG_CACHE_HOME/torch,
    ~/.cache/torch), torch's directory, so both libraries share downloaded checkpoints."""
    if os.getenv("TORCH_HUB"):
        import warnings
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d):
    """Use d as the hub cache directory."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download url to the file dst: into a temporary file beside it, its SHA256 checked against hash_prefix
    when given, then moved into place, so dst never holds a partial download (the temporary file is removed on
    any error). progress: a byte count on stderr while downloading."""
    dst = os.path.expanduser(dst)
    for _ in range(tempfile.TMP_MAX):
        tmp_dst = dst + "." + uuid.uuid4().hex + ".partial"
        try:
            f = open(tmp_dst, "w+b")
        except FileExistsError:
            continue
        break
    else:
        import errno
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    try:
        with urlopen(Request(url, headers={"User-Agent": "torch.hub"})) as response:
            size = response.headers.get("Content-Length") if getattr(response, "headers", None) else None
            total = int(size) if size else None
            sha256 = hashlib.sha256() if hash_prefix is not None else None
            done = 0
            while True:
                buffer = response.read(1 << 16)
                if not buffer:
                    break
                f.write(buffer)
                if sha256 is not None:
                    sha256.update(buffer)
                done += len(buffer)
                if progress:
                    sys.stderr.write(f"\r{done}" + (f"/{total}" if total else "") + " bytes")
            if progress:
                sys.stderr.write("\n")
        f.close()
        if sha256 is not None:
            digest = sha256.hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(f.name, dst)
    finally:
        f.close()
        if os.path.exists(f.name):
            os.remove(f.name)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    """The object saved at url, downloaded once into model_dir (default get_dir()/checkpoints) and loaded with
    ember.load; check_hash: the file name's '-<hex>.' part must prefix the download's SHA256."""
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stderr.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            r = HASH_REGEX.search(filename)
            hash_prefix = r.group(1) if r else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    from .serialization import load as _load
    return _load(cached_file, map_location=map_location, weights_only=weights_only)


def _github(repo):
    raise NotImplementedError(f"ember.hub does not download GitHub repositories ({repo!r}): clone it and use "
                              f"ember.hub.load(<its directory>, <entrypoint>, source='local')")


def _hubconf(directory):
    import importlib.util
    path = os.path.join(directory, MODULE_HUBCONF)
    sys.path.insert(0, directory)
    try:
        spec = importlib.util.spec_from_file_location(MODULE_HUBCONF, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(directory)
    return module


def _entry(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    dependencies = getattr(module, VAR_DEPENDENCY, None)
    if dependencies is not None:
        import importlib.util
        missing = [pkg for pkg in dependencies if importlib.util.find_spec(pkg) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    func = getattr(module, model, None)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """model(*args, **kwargs) from the hubconf.py of the local directory repo_or_dir (source="local")."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        _github(repo_or_dir)
    return _entry(_hubconf(repo_or_dir), model)(*args, **kwargs)


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):  # noqa: A001
    """torch.hub.list reads a GitHub repository: not fetched by ember (NotImplementedError)."""
    _github(github)


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):  # noqa: A001
    """torch.hub.help reads a GitHub repository: not fetched by ember (NotImplementedError)."""
    _github(github)
