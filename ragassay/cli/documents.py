"""`ragassay documents`: list or delete the documents of a collection."""

from __future__ import annotations

import typer
from rich.table import Table

from ragassay.cli.common import emit, fail, out, prefect_defaults, run_flow
from ragassay.cli.options import COLLECTION_OPTION, JSON_OPTION
from ragassay.config import workspace_home
from ragassay.errors import RagassayError

documents_app = typer.Typer(help="List or delete documents of a collection.", no_args_is_help=True)


@documents_app.command("list")
def documents_list(collection: str = COLLECTION_OPTION, as_json: bool = JSON_OPTION) -> None:
    """List the documents of a collection."""
    from ragassay.store.workspace import collection_paths, load_documents

    try:
        documents = load_documents(collection_paths(workspace_home(), collection)).sort("doc_id")
    except RagassayError as error:
        fail(error)

    def render() -> None:
        table = Table(title=f"{documents.height} documents in {collection}")
        for column in ("doc_id", "type", "bytes", "chars", "chunks", "title", "ingested_at"):
            table.add_column(column, overflow="fold")
        for row in documents.iter_rows(named=True):
            table.add_row(
                row["doc_id"],
                row["content_type"],
                str(row["bytes"]),
                str(row["characters"]) + ("*" if row["truncated"] else ""),
                str(row["chunk_count"]),
                row["title"],
                f"{row['ingested_at']:%Y-%m-%d %H:%M}",
            )
        out.print(table)

    emit(as_json, documents.to_dicts(), render)


@documents_app.command("delete")
def documents_delete(
    doc_ids: list[str] = typer.Argument(..., help="Document ids to delete."),
    collection: str = COLLECTION_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Delete documents with their chunks; an indexed collection is re-indexed without them."""
    from ragassay.ingest.documents import delete_documents
    from ragassay.store.workspace import collection_paths, read_manifest

    try:
        paths = collection_paths(workspace_home(), collection)
        deleted = delete_documents(paths, doc_ids)
        manifest = read_manifest(paths)
        if manifest is not None:
            prefect_defaults()
            from flows.index import index_flow
            from ragassay.config import IndexConfig

            run_flow(index_flow, IndexConfig(collection=collection, embedding_model=manifest["embedding_model"]))
    except RagassayError as error:
        fail(error)
    emit(
        as_json,
        {"collection": collection, "deleted": deleted, "reindexed": manifest is not None},
        lambda: out.print(
            f"deleted {len(deleted)} documents from {collection}" + (" and re-indexed" if manifest else "")
        ),
    )
