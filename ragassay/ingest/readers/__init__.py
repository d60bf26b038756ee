"""One reader a format, each pure (bytes in; text, title and page starts out) and failing with an
ExtractionError whose reason the ingest report names (ingest/extraction.py chooses the reader by
the file name and bounds what comes back).

- errors: the reject reasons and ExtractionError.
- text: plain text, Markdown, CSV and JSON (UTF-8), and the decoding the others share.
- html: the visible text of a page.
- docx: a Word document's paragraphs and tables.
- pdf: each page's text layer.
"""
