"""mkdocs hooks (mkdocs.yml, `hooks:`): the generated references put into their pages as the site
builds, where a page says `<!-- generated: cli -->` or `<!-- generated: configuration -->`."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reference_docs

GENERATED = {
    "<!-- generated: cli -->": reference_docs.cli_reference,
    "<!-- generated: configuration -->": reference_docs.config_reference,
}


def on_page_markdown(markdown: str, page, config, files) -> str:
    for marker, generate in GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown
