"""Answer-level check of the learned verdict: does faithfulness rank whole answers as people do?

    .venv/bin/python benchmarks/answer_level_check.py

MTRAG-style: people rate whole answers faithful or not, and a faithfulness score is measured by how
well it separates the two (AUC). The answers here are MEMERAG's (../shared/datasets/
memerag-multilingual/, CC BY-NC 4.0, never copied into the project): an answer is its labelled
sentences (the id without its last `-N`), and it is faithful when people marked every sentence
supported (sentences marked 'Challenging to determine' are not in the pool, so some answers are
partial).

Each statement's P(supported) comes from a learned verdict fitted on the other four languages
(leave-one-language-out, as fit_learned_verdict.py fits it), so every answer is scored by a verdict
that never saw its language. Scores compared, each an answer's number:

- `faithfulness`: the share of its statements the learned verdict calls supported (what ragassay
  reports);
- `mean P`, `lowest P`: the mean and lowest learned P(supported) of its statements;
- `token precision`: the share of the answer's word tokens found in its passages, no model (the
  lexical cousin of MTRAG's BERTScore K-Precision).

Prints AUC with bootstrap 95% intervals per held-out language and over every answer.
"""

from __future__ import annotations

import collections

import numpy as np
from fit_learned_verdict import BOOTSTRAP, feature_matrix, load_rows

from ragassay.judge.learned_verdict import fitted_model
from ragassay.judge.prompts import passages_of
from ragassay.judge.verdict_features import tokens

SCORES = ("faithfulness", "mean P", "lowest P", "token precision")


def answer_of(statement_id: str) -> str:
    return statement_id.rsplit("-", 1)[0]


def held_out_p(rows: list[dict], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each statement's learned P(supported) from a verdict fitted without its language."""
    languages = np.array([r["language"] for r in rows])
    p = np.zeros(len(rows))
    for language in sorted(set(languages.tolist())):
        test = languages == language
        p[test] = fitted_model(x[~test], y[~test]).predict_proba(x[test])[:, 1]
    return p


def answer_scores(rows: list[dict], p: np.ndarray, threshold: float) -> tuple[list[str], np.ndarray, dict]:
    """Per answer: its language, whether people called it faithful, and each score of SCORES."""
    by_answer: dict[str, list[int]] = collections.defaultdict(list)
    for index, row in enumerate(rows):
        by_answer[answer_of(row["id"])].append(index)
    languages, faithful, scores = [], [], {name: [] for name in SCORES}
    for indexes in by_answer.values():
        first = rows[indexes[0]]
        ps = p[indexes]
        said = set().union(*(tokens(rows[i]["statement"]) for i in indexes))
        found = set().union(*(tokens(passage) for passage in passages_of(first["context"])))
        languages.append(first["language"])
        faithful.append(all(rows[i]["label"] == "supported" for i in indexes))
        scores["faithfulness"].append(float(np.mean(ps >= threshold)))
        scores["mean P"].append(float(ps.mean()))
        scores["lowest P"].append(float(ps.min()))
        scores["token precision"].append(len(said & found) / len(said) if said else 1.0)
    return languages, np.array(faithful, dtype=int), {name: np.array(v) for name, v in scores.items()}


def auc_with_interval(y: np.ndarray, score: np.ndarray, seed: int = 0) -> str:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(BOOTSTRAP):
        index = rng.integers(0, len(y), len(y))
        if len(set(y[index].tolist())) == 2:
            draws.append(roc_auc_score(y[index], score[index]))
    low, high = np.percentile(draws, [2.5, 97.5])
    return f"{roc_auc_score(y, score):.3f} [{low:.3f}, {high:.3f}]"


def main() -> None:
    from ragassay.judge.learned_verdict import LEARNED_THRESHOLD

    rows = load_rows()
    x = feature_matrix(rows)
    y = np.array([r["label"] == "supported" for r in rows], dtype=int)
    languages, faithful, scores = answer_scores(rows, held_out_p(rows, x, y), LEARNED_THRESHOLD)
    languages = np.array(languages)
    print(f"{len(faithful)} answers, {int((faithful == 0).sum())} of them with a sentence people marked unsupported")
    print(f"{'held out':<10}" + "".join(f"{name:>26}" for name in SCORES))
    for language in [*sorted(set(languages.tolist())), "all"]:
        mask = np.ones(len(languages), bool) if language == "all" else languages == language
        cells = "".join(f"{auc_with_interval(faithful[mask], scores[name][mask]):>26}" for name in SCORES)
        print(f"{language:<10}{cells}   n={int(mask.sum())}")


if __name__ == "__main__":
    main()
