"""ember.hub: cache dir, fsspec downloads (file://, memory://, loopback http), hashes, caching,
offline mode."""
import functools
import hashlib
import http.server
import os
import threading

import fsspec
import pytest

import ember
from ember import hub


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("EMBER_OFFLINE", raising=False)
    hub.set_dir(None)
    yield tmp_path / "home"
    hub.set_dir(None)


def _ckpt(path, value=1.0):
    ember.save({"w": ember.full((3,), value), "step": 4}, path)
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture
def http_server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    requests = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def send_head(self):
            requests.append((self.command, self.path))
            return super().send_head()

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                          functools.partial(Handler, directory=str(root)))
    th = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_port}", root, requests
    srv.shutdown()
    srv.server_close()


def test_dirs(_home, tmp_path, monkeypatch):
    assert hub.get_dir() == str(_home / "hub")
    hub.set_dir(tmp_path / "elsewhere")
    assert hub.get_dir() == str(tmp_path / "elsewhere")
    hub.set_dir(None)
    monkeypatch.delenv("EMBER_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.get_dir() == str(tmp_path / "xdg" / "ember" / "hub")


def test_file_url_with_sha256_and_cache(_home, tmp_path):
    src = tmp_path / "model-v1.ember"
    digest = _ckpt(src)
    sd = hub.load_state_dict_from_url(src.as_uri(), sha256=digest, progress=False)
    assert sd["w"].tolist() == [1.0, 1.0, 1.0] and sd["step"] == 4
    cached = _home / "hub" / "checkpoints" / "model-v1.ember"
    assert cached.exists() and os.listdir(cached.parent) == ["model-v1.ember"]
    os.remove(src)  # a cached file is not fetched again
    assert hub.load_state_dict_from_url(src.as_uri(), progress=False)["step"] == 4


def test_local_path_and_memory_with_check_hash(tmp_path):
    src = tmp_path / "plain.ember"
    digest = _ckpt(src, 2.0)
    name = f"net-{digest[:8]}.ember"
    with fsspec.open(f"memory://hubtest/{name}", "wb") as f:
        f.write(src.read_bytes())
    try:
        sd = hub.load_state_dict_from_url(f"memory://hubtest/{name}", check_hash=True,
                                          progress=False, model_dir=tmp_path / "models")
        assert sd["w"].tolist() == [2.0] * 3
        assert (tmp_path / "models" / name).exists()
    finally:
        fsspec.filesystem("memory").rm(f"/hubtest/{name}")
    out = hub.load_state_dict_from_url(str(src), file_name="renamed.ember", progress=False)
    assert out["step"] == 4 and os.path.exists(os.path.join(hub.get_dir(), "checkpoints",
                                                            "renamed.ember"))


def test_http_download_progress_and_cache(http_server, capsys):
    base, root, requests = http_server
    _ckpt(root / "resnet-ab12.ember", 3.0)
    url = f"{base}/resnet-ab12.ember"
    sd = hub.load_state_dict_from_url(url, progress=True)
    assert sd["w"].tolist() == [3.0] * 3
    err = capsys.readouterr().err
    assert "Downloading" in err and url in err
    assert ("GET", "/resnet-ab12.ember") in requests
    n = len(requests)
    assert hub.load_state_dict_from_url(url, progress=False)["step"] == 4
    assert len(requests) == n  # the second call did not touch the server


def test_hash_mismatch_removes_download(http_server, _home):
    base, root, requests = http_server
    digest = _ckpt(root / "m.ember")
    url = f"{base}/m.ember"
    wrong = ("0" if digest[0] != "0" else "1") + digest[1:]
    with pytest.raises(hub.HashMismatchError) as ei:
        hub.load_state_dict_from_url(url, sha256=wrong, progress=False)
    msg = str(ei.value)
    assert wrong in msg and digest in msg and url in msg
    folder = _home / "hub" / "checkpoints"
    assert os.listdir(folder) == []  # neither the final file nor a partial one
    bad_name = root / "x-deadbeef.ember"
    os.replace(root / "m.ember", bad_name)
    with pytest.raises(hub.HashMismatchError, match="deadbeef"):
        hub.load_state_dict_from_url(f"{base}/x-deadbeef.ember", check_hash=True,
                                     progress=False)
    assert os.listdir(folder) == []
    dst = folder / "direct.ember"
    hub.download_url_to_file(f"{base}/x-deadbeef.ember", dst, hash_prefix=digest[:10],
                             progress=False)
    assert ember.load(dst)["step"] == 4


def test_offline_mode(http_server, monkeypatch, _home):
    base, root, requests = http_server
    _ckpt(root / "net.pth")
    monkeypatch.setenv("EMBER_OFFLINE", "1")
    expected = _home / "hub" / "checkpoints" / "net.pth"
    with pytest.raises(hub.OfflineError) as ei:
        hub.load_state_dict_from_url(f"{base}/net.pth", progress=False)
    assert str(expected) in str(ei.value) and ei.value.path == str(expected)
    assert isinstance(ei.value, FileNotFoundError)
    assert requests == []  # never touched the network
    with pytest.raises(hub.OfflineError, match="somewhere"):
        hub.download_url_to_file(f"{base}/net.pth", _home / "somewhere.pth", progress=False)
    expected.parent.mkdir(parents=True)  # a user places the file: offline loading works
    os.replace(root / "net.pth", expected)
    assert hub.load_state_dict_from_url(f"{base}/net.pth", progress=False)["step"] == 4
    assert requests == []


def test_torch_pth_through_hub(tmp_path):
    torch = pytest.importorskip("torch")
    lin = torch.nn.Linear(2, 3)
    torch.save(lin.state_dict(), tmp_path / "lin.pth")
    sd = hub.load_state_dict_from_url((tmp_path / "lin.pth").as_uri(), progress=False,
                                      map_location="cpu")
    assert list(sd) == ["weight", "bias"] and sd["weight"].shape == (3, 2)


def test_bad_arguments(tmp_path):
    src = tmp_path / "nohash.ember"
    _ckpt(src)
    with pytest.raises(ValueError, match="holds no hash prefix"):
        hub.load_state_dict_from_url(src.as_uri(), check_hash=True, progress=False)
    with pytest.raises(ValueError, match="64 hex digits"):
        hub.load_state_dict_from_url(src.as_uri(), sha256="abc", progress=False)
    with pytest.raises(ValueError, match="hex digits"):
        hub.download_url_to_file(src.as_uri(), tmp_path / "o", hash_prefix="xyz")
    with pytest.raises(ValueError, match="file_name"):
        hub.load_state_dict_from_url("memory://", progress=False)
    with pytest.raises(FileNotFoundError):
        hub.download_url_to_file((tmp_path / "missing.ember").as_uri(), tmp_path / "o",
                                 progress=False)
    assert not (tmp_path / "o").exists()
    assert [p for p in os.listdir(tmp_path) if p.endswith(".partial")] == []


def test_failed_download_says_why_and_where_to_place_the_file(http_server, _home):
    """No network: the error names the failure, its reason, the URL and the cache path."""
    url = "http://127.0.0.1:9/models/net-0a1b2c3d.pth"   # port 9 (discard): refused
    expected = _home / "hub" / "checkpoints" / "net-0a1b2c3d.pth"
    with pytest.raises(hub.DownloadError) as ei:
        hub.load_state_dict_from_url(url, check_hash=True, progress=False)
    msg = str(ei.value)
    assert msg.startswith(f"download failed: {url} could not be fetched (")
    assert "127.0.0.1:9" in ei.value.reason and ei.value.reason != url
    assert f"place the file at {expected} " in msg and "EMBER_OFFLINE=1" in msg
    assert ei.value.path == str(expected) and ei.value.url == url
    assert isinstance(ei.value, FileNotFoundError)   # what fsspec raised before: still caught
    assert not expected.parent.exists() or os.listdir(expected.parent) == []   # no partial file
    # an HTTP error status is named as such
    base, _, _ = http_server
    with pytest.raises(hub.DownloadError, match=r"could not be fetched \(HTTP 404"):
        hub.download_url_to_file(f"{base}/missing.pth", _home / "m.pth", progress=False)
    # a local file that is missing: the OS's reason, no offline advice
    missing = (_home / "nowhere.ember").as_uri()
    with pytest.raises(hub.DownloadError, match="No such file or directory") as ei:
        hub.download_url_to_file(missing, _home / "o.ember", progress=False)
    assert "EMBER_OFFLINE" not in str(ei.value)
