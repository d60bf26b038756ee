"""Golden files people write: JSON Lines or CSV rows of golden entries (a question with the
documents that answer it), and in JSON Lines also dialogues (a row with `turns`). A row that
cannot be read is refused alone, naming its file:line; the other rows go on."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from ragassay.golden.dialogues import DialogueCandidate, dialogue_from_record
from ragassay.golden.entries import GoldenCandidate, GoldenProblem, candidate_from_record
from ragassay.user_files import read_jsonl, read_user_text


@dataclass(frozen=True)
class GoldenFile:
    """What a golden file holds: its entries, its dialogues, and its rows that could not be read."""

    candidates: list[GoldenCandidate]
    dialogues: list[DialogueCandidate]
    problems: list[GoldenProblem]


def read_candidate_file(path: Path) -> GoldenFile:
    """Entries and dialogues from a .jsonl or .csv file, and its malformed rows.

    Entry fields: question, expected_document_ids (a list; in CSV separated by ';'), optional
    reference_answer, id and relevance (list of grades, in CSV ';'-separated). A JSON Lines row
    with `turns` is a dialogue (golden/dialogues.py): optional id, and per turn question,
    expected_document_ids, optional reference_answer, relevance and answerable (default true).
    """
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".json"):
        raise ValueError(f"{path}: golden set files must be .jsonl or .csv")
    problems: list[GoldenProblem] = []
    if suffix == ".csv":
        try:
            records = list(_csv_rows(read_user_text(path, "question file")))
        except csv.Error as error:
            raise ValueError(f"{path}: unreadable CSV: {error}") from None
    else:
        records = []
        for where, value in read_jsonl(path, "question file"):
            if isinstance(value, ValueError):
                problems.append(GoldenProblem(where, "malformed_row", str(value)))
            else:
                records.append((int(where.rsplit(":", 1)[1]), value))
    candidates, dialogues = [], []
    for number, record in records:
        source = f"{path}:{number}"
        try:
            if isinstance(record, dict) and "turns" in record:
                dialogues.append(dialogue_from_record(record, source))
            else:
                candidates.append(candidate_from_record(record, source))
        except ValueError as error:
            problems.append(GoldenProblem(source, "malformed_row", str(error)))
    # In file order, so a user reads them from the top of the file.
    return GoldenFile(
        candidates, dialogues, sorted(problems, key=lambda problem: int(problem.source.rsplit(":", 1)[1]))
    )


def _csv_rows(text: str):
    reader = csv.DictReader(io.StringIO(text))
    for row in reader:
        record = {
            key: (value.split(";") if key in ("expected_document_ids", "relevance") and value else value)
            for key, value in row.items()
            if key is not None
        }
        if isinstance(record.get("relevance"), list):
            # CSV grades are text; whole numbers become integers, anything else stays text and is refused.
            record["relevance"] = [int(g) if g.strip().isdigit() else g for g in record["relevance"]]
        yield reader.line_num, record
