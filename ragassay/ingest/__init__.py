"""Ingest: files (or a BEIR dataset) into a collection's documents and chunks.

- files: finding files, extracting each one (or rejecting it with a reason), the ingest report.
- extraction: a file's text by the reader of its format, with size and safety limits.
- readers: one reader a format (txt md csv json html docx pdf), each pure, in its own file.
- isolation: extraction in a worker process, with a time bound per file and a memory cap.
- chunking: cutting a text into chunks that are exact spans of it.
- documents: document and chunk rows, staged a part at a time and merged into a collection a row
  group at a time; removing them.
- beir: reading a BEIR dataset folder (its corpus a part at a time, test queries, qrels).
"""
