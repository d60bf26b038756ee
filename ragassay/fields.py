"""Field types and checks that every config shares: the frozen base model (config_model.py),
collection names, configuration labels, and the characters no id may hold."""

from __future__ import annotations

import unicodedata

from ragassay.config_model import ConfigModel
from ragassay.store.names import COLLECTION_NAME

# A configuration's or case's label: it names MLflow runs, table rows and --assert bounds.
LABEL = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


# A config: immutable, an unknown key is an error, and true/false is never a number.
Frozen = ConfigModel


def check_collection(name: str) -> str:
    if not COLLECTION_NAME.match(name):
        raise ValueError(
            f"collection name {name!r} must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
        )
    return name


def check_collections(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(check_collection(name) for name in dict.fromkeys(names))


def unique_labels(configurations) -> list[str]:
    labels = [c.label for c in configurations]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise ValueError(f"configuration labels must be unique; repeated: {', '.join(repeated)}")
    return labels


def document_id(text: str) -> str:
    """A document id as every part of ragassay reads it: in NFC, without outer spaces. Ingest
    stores ids so (a name typed on one system and stored by another, macOS writing NFD, is one id),
    and golden sets, `documents delete` and the ids a system under test returns are read the same
    way, so that one document never has two ids."""
    return unicodedata.normalize("NFC", text.strip())


def shown(text: str) -> str:
    """text as a message may print it: each control or format character (unsafe_characters) written
    as its code point, <U+200B>, instead of raw (a zero-width space prints as nothing, a
    right-to-left override turns the rest of the line around)."""
    return "".join(f"<U+{ord(c):04X}>" if unicodedata.category(c) in ("Cc", "Cf") else c for c in text)


def unsafe_characters(name: str) -> list[str]:
    """Control and format characters (newlines, right-to-left overrides, zero-width marks) in a
    name or id, as code points: an id holding them would print as something it is not (a newline
    in a golden id starts a new line of a report, a table row or a log)."""
    return [f"U+{ord(c):04X}" for c in name if unicodedata.category(c) in ("Cc", "Cf")]
