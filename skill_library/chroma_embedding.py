"""The Chroma embedding function backed by the library's :class:`Embedder`.

Its own module so that only code that opens an index imports chromadb. Importing it
registers the function with Chroma, which a reopened collection needs to find it.
"""

from __future__ import annotations

from typing import Any

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from skill_library.embeddings import Embedder, SentenceTransformerEmbedder


@register_embedding_function
class SkillEmbeddingFunction(EmbeddingFunction[Documents]):
    """Chroma embedding function backed by an :class:`Embedder` (never Chroma's default)."""

    def __init__(self, embedder: Embedder | None = None, model: str | None = None) -> None:
        self._embedder = embedder or SentenceTransformerEmbedder(model)

    def __call__(self, input: Documents) -> Embeddings:
        import numpy as np

        return [np.asarray(v, dtype=np.float32) for v in self._embedder.embed(list(input))]

    @staticmethod
    def name() -> str:
        return "skill_library_sentence_transformer"

    def get_config(self) -> dict[str, Any]:
        return {"model": self._embedder.model_name}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> "SkillEmbeddingFunction":
        # The config holds the model's identity, not a path (an install-specific path made
        # the same index look foreign from another install). The library passes its own
        # function and its own vectors everywhere; this one only serves Chroma's bookkeeping.
        return SkillEmbeddingFunction()

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def supported_spaces(self) -> list[str]:  # type: ignore[override]
        return ["cosine"]

    def is_legacy(self) -> bool:
        return False
