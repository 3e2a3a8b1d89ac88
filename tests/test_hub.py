"""ember.hub against torch.hub, offline: downloads from file:// URLs and from a local HTTP server (the SHA256
prefix check, no partial file left on failure), load_state_dict_from_url's cache directory and file naming,
the cache directory's defaults, and load() from a local hubconf.py; GitHub sources raise NotImplementedError."""
import functools
import http.server
import os
import threading

import numpy as np
import pytest
import torch

import ember


@pytest.fixture
def served(tmp_path):
    """A directory served over HTTP on localhost: (directory, base URL)."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _checkpoint(lib, path):
    lib.save({"w": lib.tensor([1.0, 2.0]), "n": 3}, path)


@pytest.mark.parametrize("scheme", ["file", "http"])
def test_download_and_hash_check_as_torch(tmp_path, served, scheme):
    root, base = served
    payload = bytes(range(256)) * 300
    (root / "blob.bin").write_bytes(payload)
    url = f"{base}/blob.bin" if scheme == "http" else (root / "blob.bin").as_uri()
    import hashlib
    digest = hashlib.sha256(payload).hexdigest()
    results = []
    for lib in (ember, torch):
        out = tmp_path / f"{lib.__name__}.bin"
        lib.hub.download_url_to_file(url, str(out), hash_prefix=digest[:10], progress=False)
        assert out.read_bytes() == payload
        bad = tmp_path / f"{lib.__name__}-bad.bin"
        with pytest.raises(RuntimeError) as info:
            lib.hub.download_url_to_file(url, str(bad), hash_prefix="0000", progress=False)
        assert not bad.exists()
        assert not [p for p in os.listdir(tmp_path) if p.endswith(".partial")]
        results.append(str(info.value))
    assert results[0] == results[1]


def test_load_state_dict_from_url_caches_under_model_dir(tmp_path, served):
    root, base = served
    _checkpoint(torch, root / "weights-abc.pt")
    import hashlib
    digest = hashlib.sha256((root / "weights-abc.pt").read_bytes()).hexdigest()
    named = root / f"weights-{digest[:8]}.pt"
    named.write_bytes((root / "weights-abc.pt").read_bytes())
    model_dir = tmp_path / "ckpt"
    sd = ember.hub.load_state_dict_from_url(f"{base}/{named.name}", model_dir=str(model_dir), progress=False,
                                            check_hash=True)
    assert (model_dir / named.name).exists()
    np.testing.assert_array_equal(sd["w"].numpy(), [1.0, 2.0])
    assert sd["n"] == 3
    os.remove(named)  # the second call reads the cache
    again = ember.utils.model_zoo.load_url(f"{base}/{named.name}", model_dir=str(model_dir), progress=False)
    assert again["n"] == 3
    sd2 = ember.hub.load_state_dict_from_url(f"{base}/weights-abc.pt", model_dir=str(model_dir), progress=False,
                                             file_name="renamed.pt")
    assert (model_dir / "renamed.pt").exists() and sd2["n"] == 3


def test_cache_directory_follows_torch(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    assert ember.hub.get_dir() == torch.hub.get_dir()
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ember.hub.get_dir() == torch.hub.get_dir()
    old = ember.hub._hub_dir
    try:
        ember.hub.set_dir(str(tmp_path / "mine"))
        assert ember.hub.get_dir() == str(tmp_path / "mine")
    finally:
        ember.hub._hub_dir = old


def test_load_from_a_local_hubconf_as_torch(tmp_path):
    (tmp_path / "helper_mod_for_hub.py").write_text("SCALE = 3\n")
    (tmp_path / "hubconf.py").write_text(
        "dependencies = ['numpy']\n"
        "import helper_mod_for_hub\n"
        "def tiny(n=2):\n"
        "    '''A list of n scaled ones.'''\n"
        "    return [helper_mod_for_hub.SCALE] * n\n"
        "def _private():\n"
        "    pass\n"
        "needs = None\n")
    for lib in (ember, torch):
        assert lib.hub.load(str(tmp_path), "tiny", 4, source="local") == [3, 3, 3, 3]
        with pytest.raises(RuntimeError, match="Cannot find callable missing in hubconf"):
            lib.hub.load(str(tmp_path), "missing", source="local")
        with pytest.raises(ValueError, match="Unknown source"):
            lib.hub.load(str(tmp_path), "tiny", source="ftp")


def test_github_sources_are_not_fetched():
    for call in (lambda: ember.hub.load("pytorch/vision", "resnet18"), lambda: ember.hub.list("pytorch/vision"),
                 lambda: ember.hub.help("pytorch/vision", "resnet18")):
        with pytest.raises(NotImplementedError, match="source='local'"):
            call()
