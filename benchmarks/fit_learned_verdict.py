"""Fit the learned verdict on people's labels and measure it on languages it never saw.

    .venv/bin/python benchmarks/fit_learned_verdict.py [--judge-pool ~/.cache/ragassay/judge-pool.json] [--write]

Reads ../shared/datasets/memerag-multilingual/labelled_statements.jsonl (3,171 sentences of real
RAG answers in de, es, fr, hi and en; CC BY-NC 4.0, never copied into the project) and, when
given, the default judge's P(supported) on a stratified sample of it
(benchmarks/judge_pool_verdicts.py). Prints, per held-out language, balanced accuracy, AUC and
kappa with bootstrap 95% intervals of:

- `threshold`: today's rule, the judge's P(supported) >= 0.85 (judged sample only);
- `features`: a logistic regression on the statement's word-level support in its passages
  (judge/verdict_features.py), no model;
- `features+judge`: the same with the judge's log-odds as one more input (judged sample only).

Each figure is leave-one-language-out: fitted on the other four languages, measured on the one
held out (the languages' questions are native, so each is a collection of documents of its own).

The rule, written before the last language was looked at: the development languages are de, es,
fr and hi; a candidate is chosen by its mean balanced accuracy over those four held-out folds;
`features+judge` is shipped only when it is ahead of `features` there by at least 0.01 (the judge
costs a model call a verdict; the features cost none); English (the ext part) is held out last and
reported once. The shipped file is then fitted on all five languages (--write).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from datetime import date
from pathlib import Path

import numpy as np

from ragassay.judge.learned_verdict import fitted_model, logit

REPO = Path(__file__).resolve().parent.parent
POOL = REPO.parent / "shared" / "datasets" / "memerag-multilingual" / "labelled_statements.jsonl"
DEVELOPMENT = ("de", "es", "fr", "hi")
LAST = "en"
BOOTSTRAP = 1000
MARGIN = 0.01


def load_rows() -> list[dict]:
    return [json.loads(line) for line in POOL.read_text().splitlines() if line.strip()]


def feature_matrix(rows: list[dict]) -> np.ndarray:
    from ragassay.judge.prompts import passages_of
    from ragassay.judge.verdict_features import FEATURE_NAMES, verdict_features

    return np.array(
        [
            [verdict_features(r["statement"], passages_of(r["context"]), r.get("question"))[n] for n in FEATURE_NAMES]
            for r in rows
        ]
    )


def figures(y: np.ndarray, p: np.ndarray, verdict: np.ndarray, seed: int = 0) -> dict:
    """Balanced accuracy, AUC and kappa with bootstrap 95% intervals (BOOTSTRAP resamples)."""
    from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, roc_auc_score

    def all_three(index):
        yy, pp, vv = y[index], p[index], verdict[index]
        if len(set(yy)) < 2:
            return None
        return balanced_accuracy_score(yy, vv), roc_auc_score(yy, pp), cohen_kappa_score(yy, vv)

    point = all_three(np.arange(len(y)))
    rng = np.random.default_rng(seed)
    draws = [d for d in (all_three(rng.integers(0, len(y), len(y))) for _ in range(BOOTSTRAP)) if d is not None]
    low, high = np.percentile(np.array(draws), [2.5, 97.5], axis=0)
    return {
        name: {"value": round(float(point[i]), 4), "low": round(float(low[i]), 4), "high": round(float(high[i]), 4)}
        for i, name in enumerate(("balanced_accuracy", "auc", "kappa"))
    } | {
        "sentences": len(y),
        "unsupported": int((y == 0).sum()),
        # The (label, verdict) counts, as judge/measured_rates.py reads them.
        "supported_judged_supported": int(((y == 1) & (verdict == 1)).sum()),
        "supported_judged_unsupported": int(((y == 1) & (verdict == 0)).sum()),
        "unsupported_judged_supported": int(((y == 0) & (verdict == 1)).sum()),
        "unsupported_judged_unsupported": int(((y == 0) & (verdict == 0)).sum()),
    }


def held_out(languages: np.ndarray, x: np.ndarray, y: np.ndarray, language: str) -> dict:
    train, test = languages != language, languages == language
    model = fitted_model(x[train], y[train])
    p = model.predict_proba(x[test])[:, 1]
    return figures(y[test], p, (p >= 0.5).astype(int))


def line(name: str, result: dict) -> str:
    def cell(metric):
        f = result[metric]
        return f"{f['value']:.3f} [{f['low']:.3f}, {f['high']:.3f}]"

    return f"  {name:<15} BA {cell('balanced_accuracy')}  AUC {cell('auc')}  kappa {cell('kappa')}  n={result['sentences']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge-pool", type=Path, help="judge_pool_verdicts.py's output")
    parser.add_argument("--include-last", action="store_true", help=f"also report held-out {LAST} (once)")
    parser.add_argument("--write", action="store_true", help="fit on all languages and write the shipped file")
    arguments = parser.parse_args()

    from ragassay.judge.judge import support_threshold_for
    from ragassay.judge.learned_verdict import LEARNED_VERDICT_FILE, LEARNED_VERDICT_VERSION
    from ragassay.judge.prompts import SUPPORT_PROMPT_VERSION
    from ragassay.judge.verdict_features import FEATURE_NAMES

    rows = load_rows()
    started = time.perf_counter()
    x = feature_matrix(rows)
    per_statement = (time.perf_counter() - started) / len(rows)
    print(
        f"features: {per_statement * 1000:.1f} ms a statement ({len(rows)} statements; the verdict adds this to the "
        "judge's seconds a verdict, 4.4-5.0 s on 2 cores: BENCHMARKS.md, 'Cheaper verdicts')"
    )
    y = np.array([r["label"] == "supported" for r in rows], dtype=int)
    languages = np.array([r["language"] for r in rows])
    judged = None
    if arguments.judge_pool:
        pool = json.loads(arguments.judge_pool.expanduser().read_text())
        judged = np.array([pool["p_supported"].get(r["id"]) is not None for r in rows])
        p_judge = np.array([pool["p_supported"].get(r["id"]) or 0.0 for r in rows])
        threshold = support_threshold_for(pool["model"])
    shown = [*DEVELOPMENT, LAST] if arguments.include_last else list(DEVELOPMENT)
    table: dict[str, dict] = {}
    for language in shown:
        print(f"held out: {language}")
        table[language] = {"features": held_out(languages, x, y, language)}
        print(line("features", table[language]["features"]))
        if judged is not None:
            mask = judged
            xj = np.column_stack([x[mask], [logit(p) for p in p_judge[mask]]])
            yj, lj = y[mask], languages[mask]
            test = lj == language
            table[language]["threshold"] = figures(
                yj[test], p_judge[mask][test], (p_judge[mask][test] >= threshold).astype(int)
            )
            table[language]["features (judged sample)"] = held_out(lj, x[mask], yj, language)
            table[language]["features+judge"] = held_out(lj, xj, yj, language)
            for name in ("threshold", "features (judged sample)", "features+judge"):
                print(line(name, table[language][name]))
    development = {
        name: float(np.mean([table[lang][name]["balanced_accuracy"]["value"] for lang in DEVELOPMENT]))
        for name in table[DEVELOPMENT[0]]
    }
    print(
        "mean balanced accuracy over the development folds: "
        + json.dumps({k: round(v, 4) for k, v in development.items()})
    )
    with_judge = judged is not None and (
        development["features+judge"] >= development["features (judged sample)"] + MARGIN
    )
    print(f"rule: {'features+judge' if with_judge else 'features'} is shipped")
    if not arguments.write:
        return
    from ragassay.judge.learned_verdict import fit_coefficients

    shipped = {
        "version": LEARNED_VERDICT_VERSION,
        "inputs": list(FEATURE_NAMES),
        "judge_input": False,
        "support_prompt_version": SUPPORT_PROMPT_VERSION,
        **fit_coefficients(x, y, list(FEATURE_NAMES)),
        "provenance": {
            "labels": "MEMERAG multilingual pool (amazon-science/MEMERAG, CC BY-NC 4.0): base de/es/fr/hi and "
            "ext de/es/fr/hi/en with majority votes; MEMERAG's English base set not used",
            "sentences": len(y),
            "unsupported": int((y == 0).sum()),
            "languages": sorted(set(languages.tolist())),
            "fitted": date.today().isoformat(),
            "method": "logistic regression, classes balanced, C=1, standardized features; "
            "verdict supported when P >= 0.5",
            "held_out": table,
            "development_languages": list(DEVELOPMENT),
            "rule": __doc__.split("The rule, ")[1].split("\n\n")[0].replace("\n", " "),
            "command": "benchmarks/fit_learned_verdict.py --judge-pool ~/.cache/ragassay/judge-pool.json "
            "--include-last --write",
        },
    }
    LEARNED_VERDICT_FILE.write_text(json.dumps(shipped, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {LEARNED_VERDICT_FILE.relative_to(REPO)}")
    assert not math.isnan(shipped["intercept"])


if __name__ == "__main__":
    main()
