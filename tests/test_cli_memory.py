"""`skills procedures add|list|show|outcome`, `skills prompt`, `skills plot confidence` (issue 11)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from skill_library.cli import app
from skill_library.governance.actors import os_user

runner = CliRunner()


def test_procedures_prompt_and_plot(tmp_path, embedder):
    folder = tmp_path / "lib"

    def invoke(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, list(args), env={"SKILLS_DIR": str(folder)})
        return result.exit_code, result.output

    assert invoke("init")[0] == 0
    code, out = invoke("procedures", "add", "Quantify the worst case", "--trigger",
                       "When the user asks about an investment", "--description",
                       "State the worst plausible loss first.", "--json")
    assert code == 0, out
    assert json.loads(out)["name"] == "quantify_the_worst_case" and json.loads(out)["actor"] == os_user()
    for flag in ("--success", "--success", "--failure"):
        code, out = invoke("procedures", "outcome", "quantify_the_worst_case", flag)
        assert code == 0, out
    assert "confidence 0.61" in out
    code, out = invoke("procedures", "list")
    assert code == 0 and "quantify_the_worst_case  v1  active  confidence 0.61  (2 ok / 1 failed)" in out
    code, out = invoke("procedures", "show", "quantify_the_worst_case")
    assert code == 0 and "Trigger: When the user asks about an investment" in out
    base = tmp_path / "base.txt"
    base.write_text("You are careful.\n")
    code, out = invoke("prompt", "--base", str(base))
    assert code == 0 and out.startswith("You are careful.\n\nLEARNED OPERATIONAL PROCEDURES")
    code, out = invoke("prompt", "--base", str(base), "--task", "What's the weather in Paris?")
    assert code == 0 and out == "You are careful.\n"
    png = tmp_path / "c.png"
    code, out = invoke("plot", "confidence", "quantify_the_worst_case", "-o", str(png))
    assert code == 0, out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, out = invoke("procedures", "outcome", "nope", "--success")
    assert code == 1 and "no skill named 'nope'" in out
