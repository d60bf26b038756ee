"""Resources shared by threads (a thread runner's tasks): each model and collection loads once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from ragassay.config import DEFAULT_EMBEDDING_MODEL
from ragassay.environment import models_dir
from ragassay.llm.settings import ChatModelConfig
from ragassay.resources import Resources
from ragassay.search.dense import resolve_model

THREADS = 4


def _at_once(load):
    """Call load from THREADS threads released together; what each got."""
    barrier = threading.Barrier(THREADS)

    def one(_):
        barrier.wait()
        return load()

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(one, range(THREADS)))


def test_threads_asking_for_one_chat_model_at_once_get_one_instance():
    resources = Resources()
    try:
        loaded = _at_once(lambda: resources.chat_models.get(ChatModelConfig()))
        assert all(model is loaded[0] for model in loaded)
        assert loaded[0].count_tokens("wax") > 0
    finally:
        resources.close()


def test_threads_asking_for_one_embedder_or_one_cached_chat_model_at_once_share_one(home):
    resources = Resources()
    spec = resolve_model(DEFAULT_EMBEDDING_MODEL, models_dir())
    embedders = _at_once(lambda: resources.embedders.get(spec))
    assert all(embedder is embedders[0] for embedder in embedders)
    # Through the workspace's completion cache (opened once), the model behind it is loaded once.
    models = _at_once(lambda: resources.chat_model(ChatModelConfig(), home).model)
    assert all(model is models[0] for model in models)
    resources.close()


def test_the_tasks_of_one_evaluation_share_one_judge_and_a_new_evaluation_gets_a_fresh_one(home):
    from ragassay.judge.evaluation_judges import EvaluationJudges

    resources = Resources()
    try:
        judges = EvaluationJudges(resources)
        smollm2 = ChatModelConfig(backend="smollm2")
        first = _at_once(lambda: judges.get(smollm2, home, "evaluation-1"))
        assert all(judge is first[0] for judge in first)
        verdict = first[0].support("Beeswax melts at 62 to 64 degrees.", "Beeswax melts at 63 degrees.")
        assert first[0].support("Beeswax melts at 62 to 64 degrees.", "Beeswax melts at 63 degrees.").reused
        # The next evaluation judges afresh (its judge remembers nothing), on the same loaded model.
        second = judges.get(smollm2, home, "evaluation-2")
        assert second is not first[0] and second.model.model is first[0].model.model
        again = second.support("Beeswax melts at 62 to 64 degrees.", "Beeswax melts at 63 degrees.")
        assert not again.reused and again.value == verdict.value
    finally:
        resources.close()
