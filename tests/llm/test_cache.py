"""The completion cache with a real model (SmolLM2) and a real SQLite file: a repeated request is
served without the model, anything that differs is asked again, and costs say which is which."""

from __future__ import annotations

import logging
import os

from ragassay.llm.cache import CompletionCache
from ragassay.llm.registry import ChatModels
from ragassay.llm.settings import ChatModelConfig, cache_identity
from ragassay.llm.structured import Usage

MESSAGES = [{"role": "user", "content": "Name one colour of the sky. One word."}]
OPTIONS = {"yes": ("yes", "Yes"), "no": ("no", "No")}


def test_a_repeated_call_is_served_from_the_cache_and_a_different_one_is_asked(tmp_path, caplog):
    path = tmp_path / "completions.sqlite"
    config = ChatModelConfig()
    models = ChatModels()
    model = models.get(config, CompletionCache(path))
    asked = model.complete(MESSAGES, None, 8, 0.0, 1)
    again = model.complete(MESSAGES, None, 8, 0.0, 1)
    assert not asked.cached and again.cached and again.text == asked.text and again.seconds == 0.0
    assert again.saved_seconds == asked.seconds
    other_seed = model.complete(MESSAGES, None, 8, 0.7, 2)
    assert not other_seed.cached, "seed and temperature are part of the key"
    assert Usage.of([asked, again]) == Usage(
        calls=1,
        prompt_tokens=asked.prompt_tokens,
        completion_tokens=asked.completion_tokens,
        seconds=asked.seconds,
        cached_calls=1,
        saved_seconds=asked.seconds,
    )
    probabilities = model.option_probabilities(MESSAGES, OPTIONS)
    assert model.option_probabilities(MESSAGES, OPTIONS).probabilities == probabilities.probabilities
    tokens = model.count_tokens("Bees make honey.")

    # A new owner with the same cache file never loads the model for what is remembered (a load
    # logs "loaded <file> on N threads").
    caplog.set_level(logging.INFO, logger="ragassay")
    caplog.clear()
    remembered = ChatModels().get(config, CompletionCache(path))
    assert remembered.complete(MESSAGES, None, 8, 0.0, 1).text == asked.text
    assert remembered.option_probabilities(MESSAGES, OPTIONS).completion.cached
    assert remembered.count_tokens("Bees make honey.") == tokens
    assert not [r for r in caplog.records if r.getMessage().startswith("loaded ")], "nothing was loaded"

    uncached = ChatModels().get(config.model_copy(update={"cache": False}), CompletionCache(path))
    assert not uncached.complete(MESSAGES, None, 8, 0.0, 1).cached, "cache: false asks the model"


def test_a_gguf_file_replaced_in_place_is_a_different_model(tmp_path):
    from ragassay.llm.llama_cpp import smollm2_path

    copy = tmp_path / "model.gguf"
    copy.write_bytes(smollm2_path().read_bytes())
    config = ChatModelConfig(backend="gguf", path=copy)
    before = cache_identity(config)
    os.utime(copy, ns=(copy.stat().st_atime_ns, copy.stat().st_mtime_ns + 1_000_000_000))
    assert cache_identity(config) != before
