"""Shared fixtures: one embedding model per test session, a fresh library per test."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest


@pytest.fixture(scope="session")
def embedder():
    """The real all-MiniLM-L6-v2 embedder, loaded once for the whole session, one thread."""
    from skill_library.embeddings import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder(threads=1)
    model.embed(["warm up"])
    return model


@pytest.fixture
def library(tmp_path, embedder):
    """A new, empty SkillLibrary in a temporary folder (closed after the test)."""
    from skill_library.library import SkillLibrary

    lib = SkillLibrary(tmp_path / "lib", embedder=embedder)
    yield lib
    lib.close()
