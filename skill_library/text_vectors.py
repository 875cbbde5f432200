"""Vectors of the library's own texts, kept with the records: the index needs no model.

Every text the library embeds for its index (a ``when``, a masked example task) is embedded
once per model; its vector is stored in the records under the model's identity and the
text's digest. Rebuilding, repairing or moving the index then reads vectors instead of
loading a model; only new text loads it. Task texts of queries are never stored (they may
hold personal data); only the library's masked texts are.

The rows are the tenant's own: the store keys each under :func:`tenant_key` (the text's
digest salted with the tenant), so no tenant can ask whether another embedded a text (an
exact ``when``) by its digest, whatever digest it passes.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skill_library.embeddings import Embedder
    from skill_library.record_store import RecordStore


def text_digest(text: str) -> str:
    """The key of a text's vector."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def tenant_key(tenant: str, digest: str) -> str:
    """The key of ``tenant``'s vector of the text with ``digest``: what the store keeps."""
    return hashlib.sha256(f"{tenant}\0{digest}".encode("utf-8", "surrogatepass")).hexdigest()


def embedded_forms(text: str, params: "Mapping[str, Any] | None" = None) -> set[str]:
    """Every form of a stored text (a ``when``, a masked example) the index may have
    embedded: the text as it is, its index form with and without ``params``
    (``index_text``), and the phrase of each (:func:`skill_library.phrases.phrase_text`)."""
    from skill_library.phrases import phrase_text
    from skill_library.shapes import index_text

    forms = {text, index_text(text), index_text(text, params)}
    return forms | {p for f in forms if (p := phrase_text(f)) is not None}


def embedded_keys(tenant: str, texts: "Iterable[tuple[str, Mapping[str, Any] | None]]") -> list[str]:
    """Every stored key of the vectors embedded for ``texts`` (text, params) of ``tenant``:
    each of its :func:`embedded_forms`, under the tenant's key and under the unsalted key of
    libraries from before tenant keys."""
    digests: set[str] = set()
    for text, params in texts:
        for form in embedded_forms(text, params):
            digests.add(text_digest(form))
    return sorted(digests | {tenant_key(tenant, d) for d in digests})


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
