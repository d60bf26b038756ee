"""Chat models behind one small interface (answers, reranking, generation, judging).

Every output that code reads is either asked for under a JSON schema (a llama.cpp grammar
in-process, `response_format` over HTTP) and validated with pydantic (one that still fails after
one retry comes back as an explicit unparseable result with its raw text, for the caller to
count), or read as the probabilities the model gives a closed set of one-word answers
(`option_probabilities`), which a verdict needs: a threshold on a probability can be calibrated,
a sampled word cannot.

- settings: ChatModelConfig (which model, how), the named backends, the model id known without
  loading it.
- completion: the ChatModel interface, Completion (text and cost, one way to build it from a chat
  response), option probabilities for one-word answers.
- llama_cpp: GGUF models in-process (SmolLM2 from its package, Qwen2.5 1.5B, any local file).
- openai_server: an OpenAI-compatible endpoint, with bounded retries.
- threads: how many threads an in-process model runs on.
- registry: load_chat_model (the backend a config names) and ChatModels (loaded models kept for
  one owner, wrapped in the completion cache).
- cache: the completion cache: model calls remembered on disk by exactly what was asked.
- catalog: chat models known by name, assembled from pinned part wheels and sha256-verified.
- structured: JSON-schema constrained, validated output with one retry, and its Usage (cost).
- messages: building chat messages from an instruction and worked examples.
"""
