"""Chat models behind one small interface (answers, reranking, generation, judging).

- models: model configs, the backends (SmolLM2, any GGUF, OpenAI-compatible), ChatModels cache.
- structured: JSON-schema constrained, validated output with one retry, and its Usage (cost).
- prompts: building chat messages from an instruction and worked examples.
"""
