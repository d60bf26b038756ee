"""`ragassay collections`: list, check (and repair) or delete collections."""

from __future__ import annotations

import typer

from ragassay.cli.common import EXIT_PARTIAL, emit, err, fail, out, styled
from ragassay.cli.options import JSON_OPTION
from ragassay.config import workspace_home
from ragassay.errors import RagassayError

collections_app = typer.Typer(help="List, check (and repair) or delete collections.", no_args_is_help=True)


@collections_app.command("list")
def collections_list(as_json: bool = JSON_OPTION) -> None:
    """List the collections of the workspace."""
    from ragassay.store.workspace import collection_paths, list_collections, load_documents, read_manifest

    home = workspace_home()
    rows = []
    for name in list_collections(home):
        paths = collection_paths(home, name)
        manifest = read_manifest(paths) or {}
        rows.append(
            {
                "collection": name,
                "documents": load_documents(paths).height,
                "index_digest": manifest.get("index_digest"),
            }
        )

    def render() -> None:
        out.print(f"workspace {home}")
        for row in rows:
            out.print(
                f"  {row['collection']}: {row['documents']} documents, index {row['index_digest'] or 'not built'}"
            )

    emit(as_json, {"workspace": str(home), "collections": rows}, render)


@collections_app.command("check")
def collections_check(
    name: str = typer.Argument(..., help="Collection to check."),
    repair: bool = typer.Option(
        False,
        "--repair",
        help="Rebuild what can be rebuilt: chunks from the documents' stored text, the embedding cache and the "
        "index from the chunks. Damaged files are moved into the collection's damaged/ folder, never deleted.",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Read every table of a collection in full (each page checksum verified) and check the documents,
    chunks and index against each other. Exit 0 when nothing is wrong (after --repair: nothing is
    left), 1 when findings remain, each with its repair."""
    from ragassay.config import DEFAULT_EMBEDDING_MODEL
    from ragassay.index.health import check_collection, repair_collection
    from ragassay.search.dense import Embedders

    home = workspace_home()
    try:
        if repair:
            report = repair_collection(
                home,
                name,
                Embedders().get,
                DEFAULT_EMBEDDING_MODEL,
                progress=lambda step: err.print(step, style="dim", highlight=False),
            )
            health, payload = report.after, report.model_dump()
        else:
            health = check_collection(home, name)
            report, payload = None, health.model_dump()
    except RagassayError as error:
        fail(error)

    def render() -> None:
        if report is not None:
            for action in report.actions or ["nothing to repair"]:
                out.print(f"repaired: {action}", highlight=False)
            for path in report.moved_aside:
                out.print(f"  kept the damaged file as {path}", highlight=False)
        counts = ", ".join(
            f"{value} {label}"
            for label, value in (
                ("documents", health.documents),
                ("chunks", health.chunks),
                ("golden entries", health.golden_entries),
                ("golden dialogues", health.golden_dialogues),
            )
            if value is not None
        )
        out.print(f"collection {name}: {counts}; index {health.index}", highlight=False)
        for finding in health.findings:
            out.print(styled("  ", (finding.table, "red"), f": {finding.problem}"), highlight=False)
            out.print(f"    repair: {finding.repair}", highlight=False)
        if health.healthy:
            out.print("  every table verified, and they agree with each other and the index", highlight=False)

    emit(as_json, payload, render)
    if not health.healthy:
        raise typer.Exit(EXIT_PARTIAL)


@collections_app.command("delete")
def collections_delete(
    name: str = typer.Argument(..., help="Collection to delete."), as_json: bool = JSON_OPTION
) -> None:
    """Delete a collection with all its documents, chunks, embeddings and indexes."""
    from ragassay.store.workspace import delete_collection

    try:
        delete_collection(workspace_home(), name)
    except RagassayError as error:
        fail(error)
    emit(as_json, {"deleted": name}, lambda: out.print(f"deleted collection {name}"))
