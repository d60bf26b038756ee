"""Chat models behind one small interface (answers, reranking, generation, judging).

- models: model configs, the backends (SmolLM2, Qwen2.5 1.5B, any GGUF, OpenAI-compatible),
  option probabilities, thread default, ChatModels cache.
- cache: the completion cache: model calls remembered on disk by exactly what was asked.
- catalog: chat models known by name, assembled from pinned part wheels and sha256-verified.
- structured: JSON-schema constrained, validated output with one retry, and its Usage (cost).
- prompts: building chat messages from an instruction and worked examples.
"""
