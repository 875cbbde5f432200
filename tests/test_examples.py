"""The README's runnable example keeps working: run it as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_quickstart_example_runs_offline():
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "learn: saved -> cancel_every_order v1" in out
    assert ("when:  Cancel a pending order, for every one that list orders returns "
            "(after: find user, list orders). Needs the email.") in out
    assert "run:   ok=True calls=['find_user', 'list_orders', 'cancel_order', 'cancel_order', 'cancel_order'] cancelled=['W7', 'W8', 'W9']" in out
    assert "feedback: 2 ok / 0 failed, reliability 0.75" in out
