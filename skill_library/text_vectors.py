"""Vectors of the library's own texts, kept with the records: the index needs no model.

Every text the library embeds for its index (a ``when``, a masked example task) is embedded
once per model; its vector is stored in the records under the model's identity and the
text's digest. Rebuilding, repairing or moving the index then reads vectors instead of
loading a model; only new text loads it. Task texts of queries are never stored (they may
hold personal data); only the library's masked texts are.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skill_library.embeddings import Embedder
    from skill_library.record_store import RecordStore


def text_digest(text: str) -> str:
    """The key of a text's vector."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def pack(vector: Sequence[float]) -> bytes:
    """A vector as little-endian float32 bytes."""
    return array("f", vector).tobytes()


def unpack(data: bytes) -> list[float]:
    """The vector :func:`pack` made."""
    values = array("f")
    values.frombytes(data)
    return values.tolist()


class StoredVectors:
    """An :class:`~skill_library.embeddings.Embedder` that reads vectors from the records
    and embeds (and stores) only the texts it has not seen with this model."""

    def __init__(self, embedder: "Embedder", store: "RecordStore") -> None:
        self.embedder = embedder
        self.store = store

    @property
    def model_name(self) -> str:
        return self.embedder.model_name

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, the stored one where there is one."""
        if not texts:
            return []
        model = self.model_name
        digests = [text_digest(t) for t in texts]
        stored = self.store.load_vectors(model, list(dict.fromkeys(digests)))
        missing = list(dict.fromkeys(t for t, d in zip(texts, digests) if d not in stored))
        if missing:
            fresh = self.embedder.embed(missing)
            new = {text_digest(t): pack(v) for t, v in zip(missing, fresh)}
            self.store.save_vectors(model, new)
            stored.update(new)
        return [unpack(stored[d]) for d in digests]
