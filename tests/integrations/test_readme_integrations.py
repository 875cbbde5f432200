"""The integration snippets of docs/integrations.md run as written, one after the other."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"


def test_integration_snippets_run(tmp_path, monkeypatch, embedder, capsys):
    section = PAGE.read_text()
    code = "\n".join(re.findall(r"```python\n(.*?)```", section, re.S))
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, "docs/integrations.md", "exec"), namespace)  # noqa: S102 (our own documentation)
    namespace["library"].close()
    out = capsys.readouterr().out
    assert "- greet(name: str)\n  when: greet a person by their name" in out
    assert "Error: greet has no parameter(s) who; it takes name" in out
    assert 'greet "hello Ada"' in out and "draft draft" in out
    assert (tmp_path / "skills-out" / "greet" / "scripts" / "greet.py").is_file()
