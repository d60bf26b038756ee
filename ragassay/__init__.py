"""ragassay: exact, reproducible, offline evaluation of retrieval-augmented generation."""

__version__ = "0.1.0"
