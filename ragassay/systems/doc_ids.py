"""A system's document ids made the collection's: the configuration's `doc_ids:` rule, then
chunk ids (`doc#ordinal`) collapsed to their document at its best rank. An id that is no
document of the collection stays in the ranking where the system put it, as a document that is
not relevant (trec_eval's reading of an id its judgements do not know), and is counted, so a
mis-mapped id shows as a count and a warning, never as documents below it moving up."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

from ragassay.errors import ConfigError
from ragassay.fields import document_id
from ragassay.systems.settings import DocIdRule
from ragassay.user_files import read_user_text


@dataclass
class DocIdMapper:
    """Maps ranked system ids to collection doc ids (known: the collection's ids, or None when the
    collection holds no documents and ids cannot be checked)."""

    rule: DocIdRule | None
    known: set[str] | None
    unknown: dict[str, int] = field(default_factory=dict)  # system id -> times returned
    _mapping: dict[str, str] | None = None

    def __post_init__(self):
        if self.rule is not None and self.rule.mapping is not None:
            self._mapping = _read_mapping(self.rule)

    def one(self, system_id: str) -> str:
        """The collection's id for one system id, by the rule (unchecked), read as ingest and golden
        sets read ids (fields.document_id: NFC, no outer spaces)."""
        doc_id = document_id(system_id)
        if self.rule is not None:
            if self.rule.strip_prefix and doc_id.startswith(self.rule.strip_prefix):
                doc_id = doc_id[len(self.rule.strip_prefix) :]
            if self.rule.pattern:
                doc_id = re.sub(self.rule.pattern, self.rule.replacement, doc_id)
            if self._mapping is not None:
                doc_id = self._mapping.get(doc_id, doc_id)
        return doc_id

    def ranking(self, ranked: list[tuple[str, float | None]]) -> list[tuple[str, float | None]]:
        """The ranked (document id, score) pairs of ranked (system id, score) pairs: mapped, chunk
        ids collapsed to their document at its best rank (with that rank's score), each document
        once; an unknown id kept in its place as its mapped self (counted), which no judgement
        names, so it scores as a non-relevant document."""
        documents: list[tuple[str, float | None]] = []
        seen: set[str] = set()
        for system_id, score in ranked:
            mapped = self.one(system_id)
            doc_id = self._known_document(mapped)
            if doc_id is None:
                self.unknown[system_id] = self.unknown.get(system_id, 0) + 1
                doc_id = mapped
            if doc_id not in seen:
                seen.add(doc_id)
                documents.append((doc_id, score))
        return documents

    def _known_document(self, doc_id: str) -> str | None:
        if self.known is None or doc_id in self.known:
            return doc_id
        document, separator, ordinal = doc_id.rpartition("#")
        if separator and ordinal.isdigit() and document in self.known:
            return document  # a chunk id: its document
        return None


def _read_mapping(rule: DocIdRule) -> dict[str, str]:
    text = read_user_text(rule.mapping, "doc_ids mapping file")
    rows = list(csv.DictReader(text.splitlines()))
    if not rows or not {"system_id", "doc_id"} <= set(rows[0]):
        raise ConfigError(f"doc_ids mapping file {rule.mapping} must have the columns system_id,doc_id")
    mapping: dict[str, str] = {}
    for number, row in enumerate(rows, start=2):
        if row["system_id"] in mapping and mapping[row["system_id"]] != row["doc_id"]:
            raise ConfigError(f"{rule.mapping}:{number}: {row['system_id']} is mapped twice, to different documents")
        mapping[row["system_id"]] = row["doc_id"]
    return mapping
