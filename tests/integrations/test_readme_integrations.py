"""The README's integration snippets run as written, one after the other."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_integration_snippets_run(tmp_path, monkeypatch, embedder, capsys):
    text = README.read_text()
    section = text[text.index("## Integrations"):text.index("## Sandbox")]
    code = "\n".join(re.findall(r"```python\n(.*?)```", section, re.S))
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 (our own documentation)
    namespace["library"].close()
    out = capsys.readouterr().out
    assert "- greet(name: str)\n  when: greet a person by their name" in out
    assert "Error: greet has no parameter(s) who; it takes name" in out
    assert 'greet "hello Ada"' in out and "draft draft" in out
    assert (tmp_path / "skills-out" / "greet" / "scripts" / "greet.py").is_file()
