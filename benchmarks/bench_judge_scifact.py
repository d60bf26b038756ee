"""The aligned judge (issue 36) on a second collection of people's labels nobody here had used for
judging: SciFact's claims against the abstracts its annotators marked as supporting or
contradicting them (../shared/datasets/scifact/queries.jsonl, `metadata`; the BEIR copy the
retrieval benchmarks read). Nothing was chosen or tuned on it: the judge, its threshold, the
aligned judge's features and its use rule are what ships, as MEMERAG-EXT's development half set
them.

    .venv/bin/python benchmarks/bench_judge_scifact.py judge --pairs 300 --out /tmp/scifact.json
    .venv/bin/python benchmarks/bench_judge_scifact.py align /tmp/scifact.json
    .venv/bin/python benchmarks/bench_judge_scifact.py few-shot /tmp/scifact.json --out /tmp/later.json
    .venv/bin/python benchmarks/bench_judge_scifact.py align /tmp/scifact.json --held-out /tmp/later.json
    .venv/bin/python benchmarks/bench_judge_scifact.py judge --pairs 1000 --exclude /tmp/scifact.json \
        /tmp/later.json --out /tmp/rest.json    # every labelled claim neither file read
    .venv/bin/python benchmarks/bench_judge_scifact.py without-evidence --claims 200 --out /tmp/without.json
    .venv/bin/python benchmarks/bench_judge_scifact.py align /tmp/without.json
    .venv/bin/python benchmarks/bench_judge_scifact.py learned

`judge`: a seeded sample of claims, one labelled abstract each (SUPPORT -> supported, CONTRADICT
-> unsupported; SciFact's "not enough info" claims name no abstract in this copy), each judged by
calibrate_statements (what `ragassay judge calibrate` runs: the default judge, support-probability/5,
no question: a claim is a statement on its own). The context is the abstract's title and text as
one passage. Writes each pair's P(supported) with its label.

`align`: the issue's goal, "with 60 labels of a collection, balanced accuracy >= 0.65 on that
collection's other statements", and the same at 30 and 100 labels. For each of SAMPLES seeded
draws of n labelled pairs: align_judge on them (what `judge calibrate --collection` runs: fit,
cross-validate by claim, the use rule), then the verdicts an evaluation of the collection would
use (the aligned judge's where its rule lets it be used, the plain threshold's otherwise) on every
pair not drawn; balanced accuracy and AUC there, against the plain judge's on the same pairs. Then
the corrected supported rate of the pairs not drawn (metrics/judge_error.corrected_mean, error
rates from the drawn labels) against people's rate: coverage and width, beside the interval
MEMERAG-EXT's rates give (the bundled prior that corrected every collection without labels until
this benchmark showed it does not carry over; out of sample here). Nothing is judged again.

`few-shot`: the issue's other candidate, demonstrations drawn from the labels into the prompt,
judged on claims outside the judged file (a later batch of the collection), beside the plain
judge on the same claims (`few_shot`). `align --held-out` reads the same draws' aligned judges
on that later batch instead of on the judged file's other claims: labels and batch are then no
longer two halves of one fixed set. `judge --exclude` judges claims outside earlier files (a
further batch).

`without-evidence`: a third collection from the same annotations, where the judge is weaker: each
supported claim against its whole abstract (supported) and against the abstract with the
sentences the annotators marked as its evidence taken out (unsupported; `evidence_pairs`). That
is how a RAG answer goes wrong most often: the passage is on the topic and lacks the fact. `align`
reads it as it reads the first file.

`learned`: the shipped learned verdict (judge/learned_verdict.json, fitted on MEMERAG only) on
every labelled pair and every evidence pair: SciFact held out as a collection of its own. No model
is asked; balanced accuracy, AUC and kappa with bootstrap intervals (fit_learned_verdict.figures).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "datasets" / "scifact"
SEED = 2026
SAMPLES = 50
LABEL_COUNTS = (30, 60, 100)
GOAL_BALANCED_ACCURACY = 0.65
# alignment.AHEAD_SHARE until 2026-12-06 (BENCHMARKS.md, "A collection where the evidence is missing").
AHEAD_SHARE_BEFORE = 0.9
# The labels a team has when few-shot examples are drawn: the 60 (align's 60-label draws).
FEW_SHOT_LABELS = 60


def scifact_abstracts() -> dict[str, dict]:
    """SciFact's abstracts by id (`title`, `text`), as the BEIR copy holds them."""
    rows = (json.loads(line) for line in (SCIFACT / "corpus.jsonl").read_text().splitlines())
    return {row["_id"]: row for row in rows}


def annotated_claims():
    """Each claim whose annotators labelled an abstract (SciFact's "not enough info" claims name
    none in this copy): the query row, its first labelled abstract in id order and their marks
    on it (a claim with two abstracts is one judgement, not two correlated ones)."""
    for line in (SCIFACT / "queries.jsonl").read_text().splitlines():
        query = json.loads(line)
        evidence = sorted(query["metadata"].items())
        if evidence:
            yield query, *evidence[0]


def labelled_pairs() -> list[dict]:
    """Every (claim, abstract) pair SciFact's annotators labelled, one per claim: the claim's first
    labelled abstract in id order (a claim with two is one judgement, not two correlated ones)."""
    corpus = {key: f"{row['title']}. {row['text']}".strip() for key, row in scifact_abstracts().items()}
    pairs = []
    for query, document, marks in annotated_claims():
        labels = {annotation["label"] for annotation in marks}
        if len(labels) != 1 or document not in corpus:
            continue  # a pair its annotators labelled both ways is no one's verdict
        pairs.append(
            {
                "id": f"scifact-{query['_id']}-{document}",
                "claim": query["_id"],
                "statement": query["text"],
                "context": corpus[document],
                "label": "supported" if labels == {"SUPPORT"} else "unsupported",
            }
        )
    return pairs


# Sentence boundaries of the BEIR copy: its text is SciFact's sentence list joined by spaces, so a
# boundary is end punctuation, space, then a capital, digit or bracket. An abstract holding an
# abbreviation or an initial (where that rule would cut a sentence in two) is left out, so the
# annotators' sentence numbers name the sentences this split gives.
SENTENCE_BOUNDARY = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[\"])")
SPLIT_RISK = re.compile(
    r"\b(et al|e\.g|i\.e|vs|figs?|approx|ca|no|dr|st|cf|resp|ref|eq|inc|co|ltd|spp?)\.\s|(?:^|\s)[A-Z]\.\s", re.I
)
# Fewest sentences left once the evidence is removed: a passage still about the claim's topic.
FEWEST_LEFT = 3


def evidence_pairs() -> list[dict]:
    """A harder collection from the same annotations, the case RAG answers fail in: a passage on the
    claim's topic that lacks its evidence. For each claim SciFact's annotators marked as supported
    by an abstract, two items grouped by the claim: the whole abstract (supported), and the
    abstract without every sentence they marked as its evidence, nor the sentences either side
    of those (unsupported: by their marks no evidence is left, and a split one sentence off
    still removes it). No title: titles often state the finding and were not annotated."""
    corpus = {key: row["text"] for key, row in scifact_abstracts().items()}
    pairs = []
    for query, document, marks in annotated_claims():
        if {annotation["label"] for annotation in marks} != {"SUPPORT"} or document not in corpus:
            continue
        text = corpus[document]
        if SPLIT_RISK.search(text):
            continue
        sentences = SENTENCE_BOUNDARY.split(text)
        marked = {index for annotation in marks for index in annotation["sentences"]}
        if max(marked) >= len(sentences):
            continue  # the split does not match the annotators' numbering
        removed = {index + offset for index in marked for offset in (-1, 0, 1)}
        left = [sentence for index, sentence in enumerate(sentences) if index not in removed]
        if len(left) < FEWEST_LEFT:
            continue
        for suffix, context, label in (("whole", text, "supported"), ("without", " ".join(left), "unsupported")):
            pairs.append(
                {
                    "id": f"scifact-{query['_id']}-{document}-{suffix}",
                    "claim": query["_id"],
                    "statement": query["text"],
                    "context": context,
                    "label": label,
                }
            )
    return pairs


def judge_without_evidence(claims: int, out: Path, exclude: list[Path] | None = None) -> None:
    """A seeded sample of `claims` claims of evidence_pairs, both items of each judged plain,
    leaving out the claims of the judged files in `exclude` (a later batch)."""
    excluded = {pair["claim"] for path in exclude or [] for pair in json.loads(path.read_text())["pairs"]}
    by_claim: dict[str, list[dict]] = {}
    for pair in evidence_pairs():
        if pair["claim"] not in excluded:
            by_claim.setdefault(pair["claim"], []).append(pair)
    chosen_claims = random.Random(SEED + 2_000).sample(sorted(by_claim), min(claims, len(by_claim)))
    chosen = [pair for claim in chosen_claims for pair in by_claim[claim]]
    print(
        f"{len(by_claim)} claims with evidence to remove; judging {len(chosen_claims)} claims, {len(chosen)} items",
        flush=True,
    )
    write_judged(chosen, out)


def default_judge_model(models):
    """The default judge's model (no completion cache: every verdict is asked and timed)."""
    from ragassay.llm.settings import ChatModelConfig

    return models.get(ChatModelConfig(backend="qwen2.5-1.5b"))


def plain_judged(pairs: list[dict], models) -> tuple[dict[str, float | None], str, float, float]:
    """Each pair's P(supported) from the plain judge through calibrate_statements (what `ragassay
    judge calibrate` runs), with the judge's model id, threshold and the seconds it took."""
    from ragassay.judge.calibration.labelled_statements import LabelledStatement
    from ragassay.judge.calibration.support import calibrate_statements
    from ragassay.judge.judge import Judge

    labelled = [LabelledStatement(p["id"], p["context"], p["statement"], p["label"] == "supported") for p in pairs]
    support_judge = Judge(default_judge_model(models))
    started = time.perf_counter()
    report = calibrate_statements(support_judge, labelled)
    seconds = time.perf_counter() - started
    p_by_id = {row.source: row.p_supported for row in report.rows}
    return p_by_id, support_judge.model_id, support_judge.support_threshold, seconds


def judge(count: int, out: Path, exclude: list[Path] | None = None) -> None:
    """A seeded sample of `count` labelled pairs judged plain, leaving out the pairs of the judged
    files in `exclude` (a later batch: claims no earlier file read)."""
    excluded = {pair["id"] for path in exclude or [] for pair in json.loads(path.read_text())["pairs"]}
    pairs = [pair for pair in labelled_pairs() if pair["id"] not in excluded]
    chosen = random.Random(SEED).sample(pairs, min(count, len(pairs)))
    count = len(chosen)
    print(
        f"{len(pairs)} labelled pairs"
        + (f" outside {', '.join(p.name for p in exclude)}" if exclude else "")
        + f"; judging {count}: "
        f"{sum(p['label'] == 'supported' for p in chosen)} supported, "
        f"{sum(p['label'] == 'unsupported' for p in chosen)} unsupported",
        flush=True,
    )
    write_judged(chosen, out)


def write_judged(pairs: list[dict], out: Path) -> None:
    """The pairs judged plain (plain_judged), each with its P(supported), written to `out` with
    the judge's model id, threshold and seconds: the judged file `align` and `few-shot` read."""
    from ragassay.llm.registry import ChatModels

    models = ChatModels()
    p_by_id, model, threshold, seconds = plain_judged(pairs, models)
    models.close()
    for pair in pairs:
        pair["p"] = p_by_id[pair["id"]]
    out.write_text(
        json.dumps({"model": model, "support_threshold": threshold, "seconds": seconds, "pairs": pairs}, indent=1)
    )
    print(f"{len(pairs)} pairs in {seconds:.0f} s ({seconds / len(pairs):.1f} s a pair); {out}")


def judged_items(path: Path) -> tuple[list, str, float]:
    """The judged pairs as LabelledJudgements (group: the claim), unreadable ones left out as
    calibrate_statements leaves them out of agreement."""
    from ragassay.judge.calibration.alignment import LabelledJudgement

    judged = json.loads(path.read_text())
    items = [
        LabelledJudgement(p["id"], p["claim"], p["statement"], p["context"], p["p"], p["label"] == "supported")
        for p in judged["pairs"]
        if p["p"] is not None
    ]
    return items, judged["model"], judged["support_threshold"]


def _figures(items: list, verdicts: list[bool], scores: list[float]) -> tuple[float, float]:
    from ragassay.judge.calibration.alignment import auc, balanced_accuracy

    labels = np.array([item.supported for item in items])
    return balanced_accuracy(labels, np.array(verdicts)), auc(labels, np.array(scores))


def whole_set(items: list, threshold: float) -> None:
    from ragassay.judge.calibration.alignment import FEATURES, auc, balanced_accuracy, statement_features

    labels = np.array([item.supported for item in items])
    p = np.array([item.p_supported for item in items])
    features = np.array([statement_features(i.statement, i.context, i.p_supported) for i in items])
    print(
        f"{len(items)} readable pairs ({labels.sum()} supported, {(~labels).sum()} unsupported); plain judge: "
        f"balanced accuracy {balanced_accuracy(labels, p >= threshold):.3f} at P >= {threshold}, AUC {auc(labels, p):.3f}"
    )
    cuts = sorted(set(p.tolist()))
    best = max(cuts, key=lambda cut: balanced_accuracy(labels, p >= cut))
    print(
        f"  the best cut on all of them (in-sample, what no team can pick): P >= {best:.3f}, "
        f"balanced accuracy {balanced_accuracy(labels, p >= best):.3f}"
    )
    print(
        "  each feature's AUC alone: "
        + ", ".join(f"{n} {auc(labels, features[:, i]):.3f}" for i, n in enumerate(FEATURES))
    )


def _gain_lower_bounds(evaluated: list, scores: list[float], threshold: float, seed: int) -> tuple[float, float]:
    """Lower ends of the paired 95% intervals of the fitted aligned judge's balanced accuracy and AUC
    minus the plain judge's on the evaluated pairs: alignment.group_replicates of their groups
    (claims), both judges read on the same replicate."""
    from ragassay.judge.calibration.alignment import auc, balanced_accuracy, group_replicates

    labels = np.array([item.supported for item in evaluated])
    plain_p = np.array([item.p_supported for item in evaluated])
    aligned_p = np.array(scores)
    gains = [
        (
            balanced_accuracy(labels[rows], aligned_p[rows] >= 0.5)
            - balanced_accuracy(labels[rows], plain_p[rows] >= threshold),
            auc(labels[rows], aligned_p[rows]) - auc(labels[rows], plain_p[rows]),
        )
        for rows in group_replicates(labels, [item.group for item in evaluated], seed)
    ]
    low_ba, low_auc = np.percentile(np.array(gains), 2.5, axis=0)
    return float(low_ba), float(low_auc)


def _on_evaluated(aligned, labelled: list, evaluated: list, threshold: float, seed: int) -> dict:
    """One draw's figures on the evaluated pairs: balanced accuracy and AUC of the plain judge, of
    the fitted aligned judge (used or not) and of what an evaluation uses; the supported rate of
    the evaluated pairs as the judge says it, corrected with the drawn labels' error rates
    (cross-fitted verdicts where the aligned judge is used), against people's."""
    from ragassay.metrics.judge_error import corrected_mean, simple_strata

    plain_verdicts = [item.p_supported >= threshold for item in evaluated]
    plain = _figures(evaluated, plain_verdicts, [item.p_supported for item in evaluated])
    if aligned.mean:  # fitted (enough labels of each class), used or not
        scores = [aligned.probability(i.statement, i.context, i.p_supported) for i in evaluated]
        fitted_verdicts = [s >= 0.5 for s in scores]
        fitted = _figures(evaluated, fitted_verdicts, scores)
        gain_low = _gain_lower_bounds(evaluated, scores, threshold, seed)
    else:
        fitted, fitted_verdicts, gain_low = plain, plain_verdicts, None
    used = aligned.used
    # The use rule until 2026-12-06 wanted the fit ahead in >= 90% of replicates, not 50%.
    used_before = used and aligned.comparison.ahead_share >= AHEAD_SHARE_BEFORE
    label_strata = simple_strata(
        [item.supported for item in labelled],
        [aligned.cross_fitted[i.item_id] if used else i.p_supported >= threshold for i in labelled],
    )
    people = float(np.mean([item.supported for item in evaluated]))
    verdicts = fitted_verdicts if used else plain_verdicts
    corrected = corrected_mean([float(v) for v in verdicts], label_strata, seed=seed)
    return {
        "used": used,
        "fitted": bool(aligned.mean),
        "plain": plain,
        "fitted_figures": fitted,
        "evaluation": fitted if used else plain,
        "gain_low": gain_low,
        "used_before": used_before,
        "evaluation_before": fitted if used_before else plain,
        "covered": corrected.low <= people <= corrected.high,
        "width": corrected.high - corrected.low,
        "no_estimate": corrected.estimate is None,
        "plain_verdicts": plain_verdicts,
        "people": people,
    }


def align(path: Path, held_out: Path | None = None) -> None:
    """The table of "A second collection"; with held_out (plain verdicts of claims outside `path`,
    as `few-shot --out` and `judge --exclude` write them), the same draws' aligned judges read on
    those claims instead: a later batch of the collection that no label was drawn from."""
    from ragassay.judge.calibration.alignment import align_judge
    from ragassay.judge.calibration.measured_rates import measured_on
    from ragassay.judge.prompts import SUPPORT_PROMPT_VERSION
    from ragassay.metrics.judge_error import corrected_mean

    items, model, threshold = judged_items(path)
    whole_set(items, threshold)
    later = None
    if held_out is not None:
        later, later_model, later_threshold = judged_items(held_out)
        assert (later_model, later_threshold) == (model, threshold), f"{held_out} is of another judge"
        print(f"\nread on {held_out.name}, a later batch no label is drawn from:")
        whole_set(later, threshold)
    # The bundled prior until 2026-12-05: the judge's counts on MEMERAG-EXT's development half.
    prior = measured_on("MEMERAG-EXT's development half", model, SUPPORT_PROMPT_VERSION, threshold)
    assert prior is not None, f"no counts of {model} {SUPPORT_PROMPT_VERSION} at {threshold} on MEMERAG-EXT"
    for count in LABEL_COUNTS:
        rows = []
        for sample in range(SAMPLES):
            rng = random.Random(SEED + sample)
            drawn = set(rng.sample(range(len(items)), count))
            labelled = [items[i] for i in sorted(drawn)]
            evaluated = later if later is not None else [item for i, item in enumerate(items) if i not in drawn]
            aligned = align_judge("scifact", labelled, model, SUPPORT_PROMPT_VERSION, threshold, SEED + sample)
            row = _on_evaluated(aligned, labelled, evaluated, threshold, SEED + sample)
            from_prior = corrected_mean(
                [float(v) for v in row["plain_verdicts"]], [prior.stratum()], seed=SEED + sample
            )
            row["prior_covered"] = from_prior.low <= row["people"] <= from_prior.high
            row["prior_width"] = from_prior.high - from_prior.low
            rows.append(row)
        _report(count, rows, "the later batch" if later is not None else "the pairs not drawn")


def _report(count: int, rows: list[dict], where: str) -> None:
    def mean(key: str, index: int, keep=lambda row: True) -> str:
        chosen = [row[key][index] for row in rows if keep(row)]
        return f"{np.mean(chosen):.3f}" if chosen else "-"

    evaluation_ba = np.array([row["evaluation"][0] for row in rows])
    fitted_ba = np.array([row["fitted_figures"][0] for row in rows if row["fitted"]])
    print(
        f"\n{count} labels, {len(rows)} seeded draws: aligned judge fitted in {sum(r['fitted'] for r in rows)}, "
        f"used in {sum(r['used'] for r in rows)}"
    )
    print(
        f"  on {where}, mean balanced accuracy / AUC: plain {mean('plain', 0)} / {mean('plain', 1)}; "
        f"fitted aligned judge (used or not) {mean('fitted_figures', 0, lambda r: r['fitted'])} / "
        f"{mean('fitted_figures', 1, lambda r: r['fitted'])}; what the evaluation uses {mean('evaluation', 0)} / "
        f"{mean('evaluation', 1)}"
    )
    print(
        f"  evaluation's balanced accuracy >= {GOAL_BALANCED_ACCURACY}: {np.mean(evaluation_ba >= GOAL_BALANCED_ACCURACY):.0%} "
        f"of draws (quartiles {np.percentile(evaluation_ba, 25):.3f} / {np.median(evaluation_ba):.3f} / "
        f"{np.percentile(evaluation_ba, 75):.3f}); the fitted aligned judge's (used or not): "
        + (
            f"{np.mean(fitted_ba >= GOAL_BALANCED_ACCURACY):.0%} of the draws it was fitted in"
            if fitted_ba.size
            else "-"
        )
    )
    for index, name in ((0, "balanced accuracy"), (1, "AUC")):
        gains = np.array([r["fitted_figures"][index] - r["plain"][index] for r in rows if r["fitted"]])
        if gains.size:
            low, high = np.percentile(gains, [2.5, 97.5])
            clearly = np.mean([r["gain_low"][index] > 0 for r in rows if r["fitted"]])
            print(
                f"  fitted aligned judge minus plain, {name}: mean {gains.mean():+.3f}, 95% of draws in "
                f"[{low:+.3f}, {high:+.3f}], ahead in {np.mean(gains > 0):.0%}; its paired 95% interval "
                f"(claims resampled) above 0 in {clearly:.0%}"
            )
    before_ba = np.array([row["evaluation_before"][0] for row in rows])
    print(
        f"  under the use rule before 2026-12-06 (ahead in >= {AHEAD_SHARE_BEFORE:.0%} of replicates): used in "
        f"{sum(r['used_before'] for r in rows)}, what the evaluation uses {before_ba.mean():.3f}, "
        f">= {GOAL_BALANCED_ACCURACY} in {np.mean(before_ba >= GOAL_BALANCED_ACCURACY):.0%} of draws"
    )
    covered = np.array([r["covered"] for r in rows])
    widths = np.array([r["width"] for r in rows])
    none = np.array([r["no_estimate"] for r in rows])
    print(
        f"  corrected supported rate of {where}, error rates from the labels: holds people's rate in "
        f"{covered.mean():.0%}, median width {np.median(widths):.3f}, no estimate {none.mean():.0%}; "
        f"from MEMERAG-EXT's rates (the bundled prior until 2026-12-05): holds {np.mean([r['prior_covered'] for r in rows]):.0%}, "
        f"median width {np.median([r['prior_width'] for r in rows]):.3f}"
    )


def demonstrations(labelled: list, shots: int, rng: random.Random) -> list:
    """The worked examples of a few-shot prompt, drawn from a team's labels: shots / 2 of each class
    at random among the labelled pairs whose context is no longer than the labels' median (so that
    shots examples and the longest statement to judge fit the judge's 4,096 tokens), in random
    order."""
    median = float(np.median([len(item.context) for item in labelled]))
    short = [item for item in labelled if len(item.context) <= median]
    chosen = [
        example
        for supported in (True, False)
        for example in rng.sample([item for item in short if item.supported == supported], shots // 2)
    ]
    rng.shuffle(chosen)
    return chosen


def few_shot_support_messages(examples: list, context: str, statement: str) -> list[dict]:
    """The support prompt with worked examples: its guidelines, then each example's request as the
    plain prompt writes it with people's label as the judge's answer, then the statement to judge.
    Every statement shares the guidelines and examples as a prompt prefix, which llama.cpp keeps."""
    from ragassay.judge.prompts import support_messages

    guidelines, request = support_messages(context, statement)
    turns = []
    for example in examples:
        turns += [
            support_messages(example.context, example.statement)[1],
            {"role": "assistant", "content": "supported" if example.supported else "unsupported"},
        ]
    return [guidelines, *turns, request]


def few_shot(judged: Path, count: int, draws: int, shots: int, out: Path) -> None:
    """Few-shot demonstrations, the issue's other candidate, on claims nobody here has read: for each
    of `draws` seeded draws of 60 labels from the judged pairs (the align command's 60-label draws),
    `shots` demonstrations from them (`demonstrations`); then `count` SciFact pairs outside the
    judged file, each judged plain (calibrate_statements) and with each draw's demonstrations.
    Compared as alignment.compare compares an aligned judge: the plain verdict at the judge's
    threshold, the few-shot one at P >= 0.5 (its examples show the collection's classes; a
    threshold chosen for the plain prompt belongs to that prompt), AUC of each P."""
    from ragassay.judge.calibration.alignment import auc, balanced_accuracy, compare
    from ragassay.judge.prompts import SUPPORT_OPTIONS, support_messages
    from ragassay.llm.completion import spelled_options
    from ragassay.llm.registry import ChatModels

    items, model_id, threshold = judged_items(judged)
    judged_ids = {item.item_id for item in items}
    unread = [pair for pair in labelled_pairs() if pair["id"] not in judged_ids]
    chosen = random.Random(SEED + 1_000).sample(unread, count)
    print(
        f"{len(unread)} labelled pairs outside {judged.name}; judging {count} "
        f"({sum(p['label'] == 'supported' for p in chosen)} supported): plain first",
        flush=True,
    )
    models = ChatModels()
    plain_p, plain_model, _, seconds = plain_judged(chosen, models)
    assert plain_model == model_id, f"{judged} was judged by {model_id}, not {plain_model}"
    print(f"  plain: {seconds:.0f} s ({seconds / count:.1f} s a pair)", flush=True)
    readable = [pair for pair in chosen if plain_p[pair["id"]] is not None]
    labels = np.array([pair["label"] == "supported" for pair in readable])
    plain = np.array([plain_p[pair["id"]] for pair in readable])
    for pair in readable:
        pair["p"] = plain_p[pair["id"]]
    spelled = spelled_options(SUPPORT_OPTIONS)
    llm = default_judge_model(models)  # the model plain_judged loaded
    # The direct call below reads the plain prompt as calibrate_statements did (same P): checked on one pair.
    first = readable[0]
    direct = llm.option_probabilities(support_messages(first["context"], first["statement"]), spelled)
    assert abs(direct.probabilities["supported"] - plain_p[first["id"]]) < 1e-3, (
        direct.probabilities,
        plain_p[first["id"]],
    )
    results = {"model": model_id, "support_threshold": threshold, "shots": shots, "pairs": readable, "draws": []}
    print(
        f"plain judge on {len(readable)} readable pairs: balanced accuracy {balanced_accuracy(labels, plain >= threshold):.3f} "
        f"at P >= {threshold}, AUC {auc(labels, plain):.3f}",
        flush=True,
    )
    for draw in range(draws):
        rng = random.Random(SEED + draw)
        labelled = [items[i] for i in sorted(rng.sample(range(len(items)), FEW_SHOT_LABELS))]
        examples = demonstrations(labelled, shots, random.Random(SEED + draw))
        started = time.perf_counter()
        few = []
        for pair in readable:
            answer = llm.option_probabilities(
                few_shot_support_messages(examples, pair["context"], pair["statement"]), spelled
            )
            few.append(answer.probabilities["supported"])
        seconds = time.perf_counter() - started
        few_p = np.array(few)
        comparison = compare(labels, plain, threshold, few_p, [p["id"] for p in readable], folds=0, seed=SEED + draw)
        results["draws"].append({"examples": [e.item_id for e in examples], "p": few, "seconds": seconds})
        print(
            f"draw {draw} ({', '.join(('S' if e.supported else 'U') + e.item_id for e in examples)}; "
            f"{seconds / len(readable):.1f} s a pair):\n"
            f"  balanced accuracy plain {comparison.plain_balanced_accuracy:.3f} "
            f"[{comparison.plain_balanced_accuracy_low:.3f}, {comparison.plain_balanced_accuracy_high:.3f}], "
            f"few-shot at P >= 0.5 {comparison.aligned_balanced_accuracy:.3f} "
            f"[{comparison.aligned_balanced_accuracy_low:.3f}, {comparison.aligned_balanced_accuracy_high:.3f}] "
            f"(ahead in {comparison.ahead_share:.0%} of replicates; at P >= {threshold}: "
            f"{balanced_accuracy(labels, few_p >= threshold):.3f})\n"
            f"  AUC plain {comparison.plain_auc:.3f} [{comparison.plain_auc_low:.3f}, {comparison.plain_auc_high:.3f}], "
            f"few-shot {comparison.aligned_auc:.3f} [{comparison.aligned_auc_low:.3f}, {comparison.aligned_auc_high:.3f}] "
            f"(below in {comparison.auc_behind_share:.0%} of replicates); "
            f"sensitivity / specificity few-shot {(few_p >= 0.5)[labels].mean():.2f} / {(few_p < 0.5)[~labels].mean():.2f}, "
            f"plain {(plain >= threshold)[labels].mean():.2f} / {(plain < threshold)[~labels].mean():.2f}",
            flush=True,
        )
        out.write_text(json.dumps(results, indent=1))
    models.close()


def learned() -> None:
    """The shipped learned verdict on both SciFact collections, neither of them seen by its fit."""
    from fit_learned_verdict import figures, line

    from ragassay.judge.learned_verdict import LEARNED_THRESHOLD, shipped_learned_verdict

    verdict = shipped_learned_verdict()
    for name, pairs in (("labelled pairs", labelled_pairs()), ("with and without evidence", evidence_pairs())):
        p = np.array([verdict.p_supported(pair["statement"], [pair["context"]], None, None) for pair in pairs])
        y = np.array([pair["label"] == "supported" for pair in pairs], dtype=int)
        print(f"SciFact, {name}: {len(pairs)} pairs, {int((y == 0).sum())} unsupported")
        print(line("learned", figures(y, p, (p >= LEARNED_THRESHOLD).astype(int))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    judging = commands.add_parser("judge")
    judging.add_argument("--pairs", type=int, default=300)
    judging.add_argument("--out", type=Path, required=True)
    judging.add_argument("--exclude", type=Path, nargs="*", help="judged files whose pairs are left out")
    aligning = commands.add_parser("align")
    aligning.add_argument("judged", type=Path)
    aligning.add_argument(
        "--held-out", type=Path, help="plain verdicts of later claims (`few-shot --out`, `judge --exclude`)"
    )
    removing = commands.add_parser("without-evidence")
    removing.add_argument("--claims", type=int, default=200)
    removing.add_argument("--out", type=Path, required=True)
    removing.add_argument("--exclude", type=Path, nargs="*", help="judged files whose claims are left out")
    shooting = commands.add_parser("few-shot")
    shooting.add_argument("judged", type=Path)
    shooting.add_argument("--pairs", type=int, default=120)
    shooting.add_argument("--draws", type=int, default=2)
    shooting.add_argument("--shots", type=int, default=4)
    shooting.add_argument("--out", type=Path, required=True)
    commands.add_parser("learned")
    args = parser.parse_args()
    if args.command == "learned":
        learned()
    elif args.command == "judge":
        judge(args.pairs, args.out, args.exclude)
    elif args.command == "without-evidence":
        judge_without_evidence(args.claims, args.out, args.exclude)
    elif args.command == "align":
        align(args.judged, args.held_out)
    else:
        few_shot(args.judged, args.pairs, args.draws, args.shots, args.out)


if __name__ == "__main__":
    main()
