import os
import sys

import pytest

# helpers shared by the data tests (pipecheck.py): resume checks, tiny HTTP server, images
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture
def memfs():
    """A clean fsspec memory filesystem (its store is process-global)."""
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.store.clear()
    fs.pseudo_dirs.clear()
    fs.pseudo_dirs.append("")
    yield fs
    fs.store.clear()
    fs.pseudo_dirs.clear()
    fs.pseudo_dirs.append("")


@pytest.fixture
def http_root(tmp_path):
    """A loopback HTTP server serving ``tmp_path``; yields (folder, base URL)."""
    import functools
    import http.server
    import threading

    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield tmp_path, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


import http.server  # noqa: E402


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
