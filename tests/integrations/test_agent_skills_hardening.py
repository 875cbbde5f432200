"""Agent Skills import hardening (issue 23, item 10): no symbolic link is followed (each
refused with its path), sizes are checked before anything is parsed, and one folder's
failure is reported while the other folders are imported."""

from __future__ import annotations

import time

import pytest
from test_agent_skills import FOREIGN, SCRIPT, _foreign

from skill_library.integrations.agent_skills import (
    MAX_SKILL_MD_BYTES,
    SkillFolderError,
    import_folders,
    read_skill_folder,
)


def test_a_symlinked_script_is_refused_with_its_path(tmp_path, library):
    secret = tmp_path / "settings.py"
    secret.write_text("def main(user_id: str) -> str:\n    return 'API_KEY=hunter2'\n")
    path = _foreign(tmp_path, script=None)
    (path / "scripts" / "total.py").symlink_to(secret)
    with pytest.raises(SkillFolderError) as raised:
        read_skill_folder(path)
    assert raised.value.problems == [f"scripts/total.py: is a symbolic link (refused: {path / 'scripts' / 'total.py'})"]
    [result] = import_folders(library, path.parent)
    assert result.status == "invalid" and library.list() == []


def test_a_symlinked_skill_md_scripts_folder_or_skill_folder_is_refused(tmp_path):
    real = _foreign(tmp_path)
    linked_md = _foreign(tmp_path / "a", script=SCRIPT)
    (linked_md / "SKILL.md").unlink()
    (linked_md / "SKILL.md").symlink_to(real / "SKILL.md")
    with pytest.raises(SkillFolderError, match="SKILL.md: is a symbolic link"):
        read_skill_folder(linked_md)
    linked_scripts = tmp_path / "b" / "order-total"
    linked_scripts.mkdir(parents=True)
    (linked_scripts / "SKILL.md").write_text(FOREIGN)
    (linked_scripts / "scripts").symlink_to(real / "scripts")
    with pytest.raises(SkillFolderError, match="scripts/: is a symbolic link"):
        read_skill_folder(linked_scripts)
    root = tmp_path / "c"
    root.mkdir()
    (root / "order-total").symlink_to(real)
    with pytest.raises(SkillFolderError, match="is a symbolic link"):
        read_skill_folder(root / "order-total")


def test_sizes_are_checked_before_parsing(tmp_path):
    path = _foreign(tmp_path, skill_md=FOREIGN + "x" * MAX_SKILL_MD_BYTES)
    with pytest.raises(SkillFolderError, match=f"SKILL.md: is {MAX_SKILL_MD_BYTES + len(FOREIGN)} bytes, more than"):
        read_skill_folder(path)
    body = "    x = [" + ", ".join(["1"] * 2000) + "]\n"
    big = _foreign(tmp_path / "big", script="def main(user_id: str) -> int:\n" + body * 4000 + "    return 1\n")
    start = time.process_time()
    with pytest.raises(SkillFolderError, match="scripts/total.py: is [0-9]+ bytes, more than the 524288 bytes read"):
        read_skill_folder(big)
    assert time.process_time() - start < 1


def test_one_bad_folder_is_reported_and_the_rest_imported(tmp_path, library):
    good = _foreign(tmp_path)
    bad = good.parent / "broken"
    (bad / "scripts").mkdir(parents=True)
    (bad / "SKILL.md").write_bytes(b"---\nname: broken\ndescription: \xff\xfe\n---\n")
    results = {r.folder.name: r for r in import_folders(library, good.parent)}
    assert results["broken"].status == "invalid"
    assert results["broken"].problems == ["SKILL.md: is not UTF-8 text (byte 30)"]
    assert results["order-total"].status == "draft"
    assert [s.name for s in library.list(status="draft")] == ["order_total"]
