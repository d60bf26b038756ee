"""`ragassay collections`: list or delete collections."""

from __future__ import annotations

import typer

from ragassay.cli.common import JSON_OPTION, emit, fail, out
from ragassay.config import workspace_home
from ragassay.errors import RagassayError

collections_app = typer.Typer(help="List or delete collections.", no_args_is_help=True)


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
