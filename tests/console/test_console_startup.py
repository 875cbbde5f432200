"""`skills ui` as a person starts it: a real process prints its login URL, which then logs
in, while the embedding model loads in the background (skill_library/cli/console.py)."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit

from typer.testing import CliRunner

from skill_library.cli import app as cli_app


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_console_prints_a_login_url_that_logs_in(tmp_path):
    folder = tmp_path / "lib"
    assert CliRunner().invoke(cli_app, ["init", "--dir", str(folder)]).exit_code == 0
    port = _free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    server = subprocess.Popen([sys.executable, "-m", "skill_library.cli", "ui", "--dir", str(folder),
                               "--port", str(port)], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(server.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 180
        while not any("/login?token=" in line for line in lines) and time.monotonic() < deadline:
            assert server.poll() is None, server.stderr.read()
            time.sleep(0.05)
        url = next(line for line in lines if "/login?token=" in line).split()[-1]
        parts = urlsplit(url)
        for _ in range(200):  # the URL is printed just before uvicorn listens
            try:
                connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
                connection.request("GET", f"{parts.path}?{parts.query}")
                break
            except ConnectionRefusedError:
                time.sleep(0.05)
        answer = connection.getresponse()
        assert answer.status in (302, 303, 307), answer.status
        assert "set-cookie" in {k.lower() for k in answer.headers}
        connection.close()
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert "Traceback" not in server.stderr.read()
