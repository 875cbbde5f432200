"""Chroma's HNSW files hold no uncleared memory past their last element (issue 21, forget).

Chroma 1.5 rewrites a collection's HNSW files at full capacity on the first call after a
client opens it, the slots past the last element copied from memory it never cleared; freed
texts of the process (an erased email) then reach the disk: seen in 4 of 15 reopens of a
collection whose documents named an address. The index scrubs those slots under the write
lock after every open and reload (``VectorIndex.scrub_unused_slots``), and erasure after its
compaction. These tests read the real files Chroma wrote.
"""

from __future__ import annotations

import struct
from pathlib import Path

from skill_library.governance import Policy
from skill_library.library import SkillLibrary
from skill_library.storage.chroma_file import HNSW_HEADER, HNSW_HEADER_FORMAT, zero_unused_hnsw_slots
from tests.test_tenant_views import skill

EMAIL = "zoe.quill@example.com"


def segments(index_folder: Path) -> list[Path]:
    return [p for p in index_folder.iterdir() if (p / "header.bin").exists()]


def tails(segment: Path) -> dict[str, bytes]:
    """The bytes past the element count of each slot file, as the header describes them."""
    _fmt, _off, capacity, count, per_element, _label = HNSW_HEADER.unpack(
        (segment / "header.bin").read_bytes()[:HNSW_HEADER.size])
    out = {}
    for name, width in (("data_level0.bin", per_element), ("length.bin", 4)):
        data = (segment / name).read_bytes()
        assert len(data) == capacity * width  # the format this scrub relies on (Chroma 1.5)
        out[name] = data[count * width:]
    return out


def test_reopened_index_files_hold_zeros_past_their_last_element(tmp_path, embedder):
    folder = tmp_path / "lib"
    for round_ in range(4):  # each round: the texts go in, out, and the folder is reopened
        library = SkillLibrary(folder, embedder=embedder, policy=Policy(auto_approve="all"))
        try:
            names = []
            for i, topic in enumerate(("the unpaid invoice", "the summer garden party", "a laptop that will not boot")):
                name = f"note_{round_}_{i}"
                added = library.add(skill(name, f"write to {EMAIL} about {topic}", name), verified=True)
                assert added.added, added
                names.append(name)
            assert library.fetch(f"write to {EMAIL} about the invoice", k=1)
            for name in names:
                library.delete(name)  # its texts leave the index: freed memory of this process
        finally:
            library.close()
        reopened = SkillLibrary(folder, embedder=embedder, policy=Policy(auto_approve="all"))
        try:
            reopened.fetch("the invoice", k=1)  # the first call after the open: Chroma writes now
            found = segments(reopened.index_path)
            assert found, "no HNSW segment was written"
            for segment in found:
                for name, tail in tails(segment).items():
                    assert tail.count(0) == len(tail), f"round {round_}: {name} holds uncleared bytes"
        finally:
            reopened.close()


def write_segment(folder: Path, *, fmt: int, capacity: int, count: int, per_element: int,
                  data_size: int | None = None) -> Path:
    folder.mkdir()
    head = HNSW_HEADER.pack(fmt, 0, capacity, count, per_element, per_element - 8) + bytes(52)
    (folder / "header.bin").write_bytes(head)
    size = capacity * per_element if data_size is None else data_size
    (folder / "data_level0.bin").write_bytes(b"\x01" * size)
    (folder / "length.bin").write_bytes(b"\x02" * capacity * 4)
    return folder


def test_zeroing_keeps_every_element_and_clears_only_the_tail(tmp_path):
    seg = write_segment(tmp_path / "s", fmt=HNSW_HEADER_FORMAT, capacity=10, count=4, per_element=16)
    assert zero_unused_hnsw_slots(seg) == 6 * 16 + 6 * 4
    data, lengths = (seg / "data_level0.bin").read_bytes(), (seg / "length.bin").read_bytes()
    assert data[:64] == b"\x01" * 64 and data[64:] == bytes(96)
    assert lengths[:16] == b"\x02" * 16 and lengths[16:] == bytes(24)
    assert zero_unused_hnsw_slots(seg) == 0  # nothing left to clear: nothing written


def test_files_of_another_shape_are_left_as_they_are(tmp_path):
    other_format = write_segment(tmp_path / "a", fmt=HNSW_HEADER_FORMAT + 1, capacity=10, count=4, per_element=16)
    wrong_size = write_segment(tmp_path / "b", fmt=HNSW_HEADER_FORMAT, capacity=10, count=4, per_element=16,
                               data_size=100)
    torn = tmp_path / "c"
    torn.mkdir()
    (torn / "header.bin").write_bytes(struct.pack("<i", HNSW_HEADER_FORMAT))
    assert zero_unused_hnsw_slots(other_format) == 0  # a format it does not know: untouched
    assert (other_format / "data_level0.bin").read_bytes() == b"\x01" * 160
    assert (other_format / "length.bin").read_bytes() == b"\x02" * 40
    assert zero_unused_hnsw_slots(wrong_size) == 6 * 4  # only the file whose size the header explains
    assert (wrong_size / "data_level0.bin").read_bytes() == b"\x01" * 100
    assert zero_unused_hnsw_slots(torn) == 0
    assert zero_unused_hnsw_slots(tmp_path / "missing") == 0
