"""The labelling loop in a terminal: one statement a screen (cli/judge/screens.py), one key each,
with undo, paging, quit and resume, and the review of labels that disagree with the judge."""

from __future__ import annotations

from rich.table import Table

from ragassay.cli.common import (
    out,
)

LABEL_KEYS = {"s": "supported", "u": "unsupported", "k": "skipped"}
PAGE_KEYS = {" ": 1, "b": -1}


def _show(screen) -> None:
    """One screen of cli/judge/screens, from the top of a cleared terminal."""
    from rich.text import Text

    out.clear()
    for line in screen.lines:
        out.print(Text(line.text, style=line.style), highlight=False)


def _paged(screen, key: str) -> tuple[int, str | None]:
    """(page, note) after a paging key: the page moved to, or a note that there is none."""
    page = screen.page + PAGE_KEYS[key]
    if 0 <= page < screen.pages:
        return page, None
    return screen.page, ("the context's last page" if PAGE_KEYS[key] > 0 else "the context's first page")


def _cut_statement(text: str, most: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= most else flat[: most - 1] + "…"


def _shown_key(screen) -> tuple[str, int | None, str | None]:
    """Show one screen and read one key: a paging key comes back with the page it moves to and
    its note (the loop shows the same item again), any other key with no page and no note."""
    import click

    _show(screen)
    key = click.getchar().lower()
    if key in PAGE_KEYS:
        page, note = _paged(screen, key)
        return key, page, note
    return key, None, None


def label_in_terminal(session) -> dict:
    """The labelling loop: one statement a screen (cli/judge/screens), one key each. Returns the
    command's --json payload (a JSON object: counts and where the labels went)."""

    from ragassay.cli.judge.screens import item_screen

    already = session.done
    note = (
        f"{already} of {session.total} statements already labelled; {len(session.pending)} to go" if already else None
    )
    page = 0
    while session.current is not None:
        item = session.current
        screen = item_screen(item, session.done + 1, session.total, tuple(out.size), page, note)
        key, paged, note = _shown_key(screen)
        if paged is not None:
            page = paged
            continue
        page = 0
        if key in LABEL_KEYS:
            session.label(LABEL_KEYS[key])
            note = f"{LABEL_KEYS[key]}: {_cut_statement(item.statement)}"
        elif key == "z":
            undone = session.undo()
            note = (
                "nothing to undo in this session (earlier sessions' labels: --review)"
                if undone is None
                else f"undone: {_cut_statement(undone.statement)}"
            )
        elif key == "q":
            break
        else:
            note = "keys: s supported, u unsupported, k skip, z undo, q quit, space/b page the context"
    counts = {label: sum(1 for _, given in session.given if given == label) for label in LABEL_KEYS.values()}
    labelled = len(session.given)
    collections = sorted({item.query_collection for item, _ in session.given})
    remaining = len(session.pending)
    if note:
        out.print(note, style="yellow", highlight=False)
    out.print(
        f"{labelled} labelled this session ({counts['supported']} supported, {counts['unsupported']} unsupported, "
        f"{counts['skipped']} skipped); {remaining} of {session.total} left"
        + (" (run the same command to resume)" if remaining else ""),
        highlight=False,
    )
    if collections:
        out.print(
            f"labels stored in collection {', '.join(collections)}; "
            f"see the judge against them: ragassay judge calibrate --collection {collections[0]}",
            highlight=False,
        )
    return {"labelled": counts, "remaining": remaining, "total": session.total, "collections": collections}


def review_in_terminal(review) -> dict:
    """The review loop: the person's labels of the sample listed, then one a screen, each
    changeable (s, u, k), n and p to move, q to stop. Returns the command's --json payload."""
    import click

    from ragassay.cli.judge.screens import REVIEW_KEYS_LINE, item_screen

    entries = review.entries
    table = Table(title=f"your {len(entries)} labels of this sample ({review.who})")
    for column in ("#", "label", "metric", "statement"):
        table.add_column(column, overflow="ellipsis", no_wrap=True)
    for number, (item, label) in enumerate(entries, start=1):
        table.add_row(str(number), label, item.metric.replace("_", " "), " ".join(item.statement.split()))
    out.print(table)
    index, page, note = 0, 0, None
    if entries:
        out.print("any key goes through them one by one (s/u/k relabel, n next, p previous, q quit)", highlight=False)
        if click.getchar().lower() == "q":
            index = len(entries)
    while 0 <= index < len(entries):
        item, label = entries[index]
        screen = item_screen(
            item, index + 1, len(entries), tuple(out.size), page, note, REVIEW_KEYS_LINE, current_label=label
        )
        key, paged, note = _shown_key(screen)
        if paged is not None:
            page = paged
            continue
        page = 0
        if key in LABEL_KEYS:
            before = review.relabel(index, LABEL_KEYS[key])
            note = f"#{index + 1}: {before} -> {LABEL_KEYS[key]}" if before != LABEL_KEYS[key] else f"#{index + 1} kept"
            index += 1
        elif key == "n":
            index += 1
        elif key == "p":
            index, note = (index - 1, None) if index else (index, "the first label")
        elif key == "q":
            break
        else:
            note = f"keys: {REVIEW_KEYS_LINE}, space/b page the context"
    if note:
        out.print(note, style="yellow", highlight=False)
    collections = sorted({item.query_collection for item, _ in entries})
    out.print(f"{len(entries)} labels reviewed, {review.changed} changed", highlight=False)
    return {"reviewed": len(entries), "changed": review.changed, "collections": collections}
