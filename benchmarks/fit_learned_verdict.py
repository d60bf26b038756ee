"""Fit the learned verdict on people's labels in three collections of different kinds, and measure
each signal alone and combined on collections and languages it never saw.

    .venv/bin/python benchmarks/fit_learned_verdict.py signals            # every statement's inputs (cached)
    .venv/bin/python benchmarks/fit_learned_verdict.py judge     # the judge's on a sample (slow, resumable)
    .venv/bin/python benchmarks/fit_learned_verdict.py report [--write]
    .venv/bin/python benchmarks/fit_learned_verdict.py three-way [--whole]  # the three-way question on a subsample (slow, resumable)
    .venv/bin/python benchmarks/fit_learned_verdict.py three-way-report

The statements (benchmarks/verdict_sets.py): MEMERAG's five languages, SciFact's claims against
their abstracts (support, contradiction, and the evidence taken out), WiCE's development half
(claims against the top windows of the page they cite), the edits written from their supported
statements (a negation, a changed number, another name: unsupported), and 42 hand-written
paraphrases (supported). Nothing is copied into the project; all is read from ../shared/datasets.

Signals (each measured alone, then combined):
- `words`: the word-level support of judge/verdict_features.py (the inputs of learned-verdict/1);
- `alignment`: MiniLM's token-level alignment, BERTScore-style (judge/token_alignment.py);
- `cues`: contradiction cues: a negation, a number or a name the passages do not hold
  (judge/contradiction_cues.py);
- `judge odds`: the default judge's log-odds of "supported" under the support prompt against the
  statement's most similar passage (one call a statement);
- `judge state`: the judge's hidden state at that verdict (llama.cpp's embedding of the prompt's
  last token, read from the same forward pass), through a probe (PCA to PROBE_COMPONENTS, then a
  logistic regression) fitted on people's labels.
- `three-way`: the judge's log-odds under a three-way question (supported / contradicted / not
  mentioned) against the same passage: of "supported" against the other two, and of
  "contradicted" against the other two (the prompt judge/prompts.three_way_messages: one call a
  statement alone, a second beside the support odds; `three-way`, below; what learned-verdict/3
  reads).
The judge's signals are read on a seeded sample (`judge`: every WiCE claim, 60 statements of each
MEMERAG language, 120 SciFact claims, with their edits and paraphrases; about 1,400 statements,
3 hours on 2 cores); a candidate that reads the judge is compared with
the same candidate without it on that sample only.

Each figure is held out: fitted without a whole collection (MEMERAG, SciFact, WiCE), measured on
it; and fitted without one MEMERAG language (the other collections kept), measured on it. In a fit,
each collection weighs the same and, within it, each class; a collection's edits are EDIT_SHARE of
its unsupported weight. Balanced accuracy (supported at P >= 0.5) and AUC are on natural
statements (WiCE: supported against not supported; partially supported ones are unsupported in
the fit, and reported apart), with bootstrap 95% intervals. Edits: of the held-out collection's
supported statements called supported as written, the share whose edit is called unsupported
(`flips`); paraphrases: the share called supported.

The rule (written after exploratory runs on this development data had shown every candidate's
worst held-out balanced accuracy within a few hundredths of the others'; an earlier rule, the
mean of balanced accuracy and flips, chose the contradiction cues alone, near chance on SciFact,
and was replaced before the choice below was made):
1. agreement first: a candidate's agreement is its worst held-out collection's balanced accuracy
   on natural statements; the candidates within AGREEMENT_TIE of the best (about half the width
   of a held-out collection's 95% interval) agree with people equally well;
2. contradictions next: of those, the one whose worst held-out `flips` (the share of edits called
   unsupported, of the statements called supported as written) is highest, for a claim that
   says the opposite of its passage must not stay supported;
3. cost last: within MARGIN of that one on both figures, the cheapest: no model (fewer inputs
   first), then the judge's odds (a call a statement), then its state (the same call and a probe
   of 1,536 weights);
4. the candidates that read the judge are compared with the others on the judged sample, by the
   same steps; one is shipped only if the rule picks it there;
5. the shipped verdict is then fitted on every collection (--write), and its file names its
   inputs, the figures above and the worst held-out collection.
EDIT_SHARE was set to a quarter before any figure was read and not tuned.
The three-way question (issue 70: kept only if it adds), written before its figures were read: it
is read on a seeded subsample of the judged sample (THREE_WAY_WICE WiCE claims, THREE_WAY_PER_LANGUAGE
statements of each MEMERAG language, THREE_WAY_SCIFACT_CLAIMS SciFact claims, with their edits and
paraphrases), and the shipped candidate (judge odds), the three-way odds alone (the same cost: one
call, another prompt) and both together (two calls) are compared there by steps 1-3 above, the
shipped one listed first so that it wins a tie. The three-way question is kept only if the rule
picks a candidate that reads it.
Answer level: per answer, the share of supported statements, the mean and lowest P(supported),
and the MiniLM K-precision of the whole answer against its passages are compared by AUC on
MEMERAG's answers (faithful: every labelled sentence supported) and WiCE's claims as one-sentence
answers; the one with the best worst-collection AUC is shipped as the answer-level score.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections import defaultdict
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import verdict_sets as sets

from ragassay.judge.prompts import SUPPORT_OPTIONS, THREE_WAY_OPTIONS, support_messages, three_way_messages

REPO = Path(__file__).resolve().parent.parent
CACHE = Path.home() / ".cache" / "ragassay"
SIGNALS = CACHE / "verdict-signals.npz"
JUDGED = CACHE / "verdict-judge.jsonl"
THREE_WAY = CACHE / "verdict-three-way.jsonl"
COLLECTIONS = ("memerag", "scifact", "wice")
LANGUAGES = ("de", "en", "es", "fr", "hi")
EDIT_KINDS = ("negation", "number", "name")
EDIT_SHARE = 0.25
MIN_FLIPS = 0.8
MARGIN = 0.01
JUDGED_PER_LANGUAGE = 60
JUDGED_SCIFACT_CLAIMS = 120
THREE_WAY_WICE = 60
THREE_WAY_PER_LANGUAGE = 12
THREE_WAY_SCIFACT_CLAIMS = 30
PROBE_COMPONENTS = 32
BOOTSTRAP = 1000
SEED = 70


def all_items() -> list[sets.Item]:
    natural = sets.natural_items()
    return natural + sets.edited_items(natural) + sets.paraphrase_items(natural)


# --- signals -------------------------------------------------------------------------------


def compute_signals() -> None:
    """Every item's words, cues and alignment inputs, in the order of their passages (an
    answer's passages are encoded once), cached in SIGNALS."""
    from ragassay.judge.learned_verdict import INPUT_FAMILIES, statement_inputs
    from ragassay.judge.token_alignment import default_token_encoder

    items = sorted(all_items(), key=lambda item: (item.passages, item.id))
    encoder = default_token_encoder()
    names = [name for family in INPUT_FAMILIES.values() for name in family]
    rows, started = [], time.perf_counter()
    for number, item in enumerate(items, start=1):
        inputs = statement_inputs(item.statement, list(item.passages), item.question, encoder=encoder)
        rows.append([inputs[name] for name in names])
        if number % 500 == 0:
            print(f"{number}/{len(items)} statements, {time.perf_counter() - started:.0f} s", flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(SIGNALS, x=np.array(rows), names=names, ids=[item.id for item in items])
    print(f"wrote {SIGNALS} ({len(items)} statements, {(time.perf_counter() - started) / len(items):.3f} s each)")


def judged_sample(items: list[sets.Item]) -> list[sets.Item]:
    """The statements the judge is read on (seeded, SEED): every WiCE claim, JUDGED_PER_LANGUAGE
    statements of each MEMERAG language, JUDGED_SCIFACT_CLAIMS SciFact claims (each with its
    abstract whole and without its evidence), with every edit and paraphrase written from them."""
    rng = random.Random(SEED)
    natural = [item for item in items if item.kind == "natural"]
    folds = {item.fold for item in natural if item.collection == "wice"}
    for language in sorted({item.language for item in natural if item.collection == "memerag"}):
        of_language = [item for item in natural if item.collection == "memerag" and item.language == language]
        folds |= {item.fold for item in rng.sample(of_language, JUDGED_PER_LANGUAGE)}
    claims = sorted({item.fold for item in natural if item.collection == "scifact"})
    folds |= set(rng.sample(claims, JUDGED_SCIFACT_CLAIMS))
    return [item for item in items if item.fold in folds]


def capturing(captured: list):
    """A logits processor that keeps the logits it is shown (the first token's: max_tokens 1)."""

    def capture(ids, scores):
        captured.append(np.array(scores, dtype=np.float64))
        return scores

    return capture


def judge_signals() -> None:
    """The default judge's P(supported) and hidden state at its verdict on each sampled statement's
    most similar passage (the learned verdict's one call), appended to JUDGED as they come."""

    def row(item, mass, state):
        p = mass["supported"] / max(mass["supported"] + mass["unsupported"], 1e-12)
        return {"p_supported": p, "coverage": mass["supported"] + mass["unsupported"], "state": state}

    ask_judge(judged_sample(all_items()), JUDGED, support_messages, SUPPORT_OPTIONS, row, read_state=True)


def three_way_sample(items: list[sets.Item]) -> list[sets.Item]:
    """A seeded subsample of the judged sample (module docstring, the three-way question)."""
    rng = random.Random(f"{SEED}:three-way")
    judged = judged_sample(items)
    natural = [item for item in judged if item.kind == "natural"]
    folds = set(rng.sample(sorted({i.fold for i in natural if i.collection == "wice"}), THREE_WAY_WICE))
    for language in sorted({item.language for item in natural if item.collection == "memerag"}):
        of_language = sorted({i.fold for i in natural if i.collection == "memerag" and i.language == language})
        folds |= set(rng.sample(of_language, THREE_WAY_PER_LANGUAGE))
    folds |= set(rng.sample(sorted({i.fold for i in natural if i.collection == "scifact"}), THREE_WAY_SCIFACT_CLAIMS))
    return [item for item in judged if item.fold in folds]


def three_way_signals(whole: bool = False) -> None:
    """The default judge's three-way answer on each statement of the three-way sample (with whole,
    of the whole judged sample: the rule's step 4), against the same passage as its support
    verdict, appended to THREE_WAY as they come."""

    def row(item, mass, state):
        total = max(sum(mass.values()), 1e-12)
        return {"p": {option: mass[option] / total for option in THREE_WAY_OPTIONS}, "coverage": total}

    items = judged_sample(all_items()) if whole else three_way_sample(all_items())
    ask_judge(items, THREE_WAY, three_way_messages, THREE_WAY_OPTIONS, row)


def ask_judge(items: list[sets.Item], out_path: Path, messages_of, options: dict, row_of, read_state: bool = False):
    """Ask the default judge `messages_of(passage, statement, question)` against each item's most
    similar passage, reading the first token's probabilities of `options` (and with read_state its
    hidden state), and append `row_of(item, mass, state)` with the call's cost to out_path
    (resumable: an item already there is not asked again)."""
    import llama_cpp
    from llama_cpp import Llama, LogitsProcessorList

    from ragassay.judge.passage_choice import most_similar_first
    from ragassay.llm.catalog import QWEN_1_5B, model_path
    from ragassay.llm.completion import spelled_options

    done = set(rows_by_id(out_path))
    todo = [item for item in items if item.id not in done]
    first_passage = {item.id: most_similar_first(item.statement, list(item.passages))[0] for item in todo}
    # Statements asked against one passage one after the other: llama.cpp keeps their prefix.
    todo.sort(key=lambda item: (item.question or "", item.passages[first_passage[item.id]], item.id))
    print(f"{len(todo)} statements to judge ({len(done)} judged before) -> {out_path}", flush=True)
    model = Llama(model_path=str(model_path(QWEN_1_5B)), n_ctx=4096, n_threads=2, n_threads_batch=2, verbose=False)
    tokens = {
        option: sorted({model.tokenize(s.encode(), add_bos=False, special=False)[0] for s in spellings})
        for option, spellings in spelled_options(options).items()
    }
    started = time.perf_counter()
    with out_path.open("a") as out:
        for number, item in enumerate(todo, start=1):
            messages = messages_of(item.passages[first_passage[item.id]], item.statement, item.question)
            captured: list[np.ndarray] = []
            asked = time.perf_counter()
            response = model.create_chat_completion(
                messages, max_tokens=1, temperature=0.0, logits_processor=LogitsProcessorList([capturing(captured)])
            )
            p = np.exp(captured[0] - captured[0].max())
            p /= p.sum()
            mass = {option: float(p[ids].sum()) for option, ids in tokens.items()}
            state = None
            if read_state:
                # The hidden state at the prompt's last token: that token evaluated again with
                # embeddings on (what llama_cpp.LlamaCppModel does; the rest of the prompt is kept).
                last = int(model.input_ids[model.n_tokens - 1])
                llama_cpp.llama_set_embeddings(model._ctx.ctx, True)
                model.n_tokens -= 1
                model.eval([last])
                state = np.ctypeslib.as_array(
                    llama_cpp.llama_get_embeddings_ith(model._ctx.ctx, -1), shape=(model.n_embd(),)
                ).copy()
                state = [round(float(v), 4) for v in state]
                llama_cpp.llama_set_embeddings(model._ctx.ctx, False)
            written = {
                "id": item.id,
                **row_of(item, mass, state),
                "prompt_tokens": response["usage"]["prompt_tokens"],
                "seconds": time.perf_counter() - asked,
            }
            out.write(json.dumps({k: v for k, v in written.items() if v is not None}) + "\n")
            out.flush()
            if number % 50 == 0:
                print(f"{number}/{len(todo)}, {time.perf_counter() - started:.0f} s", flush=True)


# --- the comparison ------------------------------------------------------------------------


def rows_by_id(path: Path) -> dict[str, dict]:
    """The rows a judge pass appended to path (JUDGED, THREE_WAY), by statement id; none before it ran."""
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return {row["id"]: row for row in rows}


class Table:
    """Every item with its inputs, labels and groups as arrays, and the judge's signals where read."""

    def __init__(self) -> None:
        stored = np.load(SIGNALS, allow_pickle=False)
        by_id = {item.id: item for item in all_items()}
        self.items = [by_id[i] for i in stored["ids"].tolist()]
        self.x, self.names = stored["x"], stored["names"].tolist()
        self.y = np.array([item.supported for item in self.items], dtype=int)
        self.collection = np.array([item.collection for item in self.items])
        self.language = np.array([item.language if item.collection == "memerag" else "" for item in self.items])
        self.kind = np.array([item.kind for item in self.items])
        self.group = np.array([item.group for item in self.items])
        self.fold = np.array([item.fold for item in self.items])
        self.edit = np.isin(self.kind, EDIT_KINDS)
        judged = rows_by_id(JUDGED)
        self.judged = np.array([item.id in judged for item in self.items])
        self.judge_p = np.array([judged[i.id]["p_supported"] if i.id in judged else 0.5 for i in self.items])
        width = len(next(iter(judged.values()))["state"]) if judged else 0
        self.state = np.array([judged[i.id]["state"] if i.id in judged else [0.0] * width for i in self.items])
        self.judged_rows = judged
        three_way = rows_by_id(THREE_WAY)
        self.three_way = np.array([item.id in three_way for item in self.items])
        self.three_p = np.array(
            [
                [three_way[i.id]["p"][o] for o in THREE_WAY_OPTIONS] if i.id in three_way else [1 / 3] * 3
                for i in self.items
            ]
        )
        self.three_way_rows = three_way

    def columns(self, families: tuple[str, ...]) -> list[int]:
        from ragassay.judge.learned_verdict import INPUT_FAMILIES

        return [self.names.index(name) for family in families for name in INPUT_FAMILIES[family]]

    def natural_test(self, mask: np.ndarray) -> np.ndarray:
        """The natural statements of mask that figures are read on (WiCE: not the partial ones)."""
        return mask & (self.kind == "natural") & (self.group != "partially_supported")

    def weights(self, train: np.ndarray) -> np.ndarray:
        """Each collection the same weight, each class the same within it, its edits EDIT_SHARE of
        its unsupported weight (module docstring)."""
        w = np.zeros(len(self.y))
        present = sorted(set(self.collection[train].tolist()))
        for collection in present:
            for label, edited, share in ((1, False, 1.0), (0, False, 1 - EDIT_SHARE), (0, True, EDIT_SHARE)):
                rows = train & (self.collection == collection) & (self.y == label) & (self.edit == edited)
                if rows.any():
                    w[rows] = share / rows.sum() / len(present) / 2
        return w * train.sum()


class Candidate:
    """A set of signals: input families, and whether the judge's odds, state and three-way odds are
    read."""

    def __init__(
        self, name: str, families: tuple[str, ...], odds: bool = False, state: bool = False, three_way: bool = False
    ):
        self.name, self.families, self.odds, self.state, self.three_way = name, families, odds, state, three_way

    @property
    def reads_judge(self) -> bool:
        return self.odds or self.state or self.three_way

    @property
    def cost_rank(self) -> int:
        """Judge calls first (the support call, the three-way call), then a probe above a call."""
        return 2 * (int(self.odds or self.state) + int(self.three_way)) + int(self.state)

    def matrix(self, table: Table, train: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The inputs of the train rows and of `rows`, the probe's score fitted on train only (its
        score of a train row cross-fitted, so the regression above it never reads a fitted one)."""
        from ragassay.judge.learned_verdict import logit

        parts_train, parts_rows = (
            [table.x[train][:, table.columns(self.families)]],
            [table.x[rows][:, table.columns(self.families)]],
        )
        if self.odds:
            parts_train.append(np.array([[logit(p)] for p in table.judge_p[train]]))
            parts_rows.append(np.array([[logit(p)] for p in table.judge_p[rows]]))
        if self.three_way:
            for option in (0, 1):  # supported, contradicted: each against the other two
                parts_train.append(np.array([[logit(p)] for p in table.three_p[train][:, option]]))
                parts_rows.append(np.array([[logit(p)] for p in table.three_p[rows][:, option]]))
        if self.state:
            probe_train, probe_rows = probe_scores(table, train, rows)
            parts_train.append(probe_train[:, None])
            parts_rows.append(probe_rows[:, None])
        parts_train = [p for p in parts_train if p.size] or [np.zeros((train.sum(), 1))]
        parts_rows = [p for p in parts_rows if p.size] or [np.zeros((rows.sum(), 1))]
        return np.column_stack(parts_train), np.column_stack(parts_rows)


def probe(table: Table, train: np.ndarray):
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(
        StandardScaler(), PCA(PROBE_COMPONENTS, random_state=SEED), LogisticRegression(C=0.1, max_iter=5000)
    )
    return model.fit(table.state[train], table.y[train], logisticregression__sample_weight=table.weights(train)[train])


def probe_scores(table: Table, train: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The probe's log-odds of the train rows (5 folds by statement) and of `rows` (fitted on train)."""
    from sklearn.model_selection import GroupKFold

    from ragassay.judge.learned_verdict import logit

    index = np.flatnonzero(train)
    on_train = np.zeros(len(index))
    for fitted, held in GroupKFold(5).split(index, groups=table.fold[index]):
        mask = np.zeros(len(table.y), bool)
        mask[index[fitted]] = True
        on_train[held] = probe(table, mask).predict_proba(table.state[index[held]])[:, 1]
    on_rows = probe(table, train).predict_proba(table.state[rows])[:, 1]
    return np.array([logit(p) for p in on_train]), np.array([logit(p) for p in on_rows])


def predicted(candidate: Candidate, table: Table, train: np.ndarray, rows: np.ndarray) -> np.ndarray:
    from ragassay.judge.learned_verdict import fitted_model

    x_train, x_rows = candidate.matrix(table, train, rows)
    model = fitted_model(x_train, table.y[train], table.weights(train)[train])
    return model.predict_proba(x_rows)[:, 1]


def with_interval(y: np.ndarray, score: np.ndarray, metric, seed: int = SEED) -> dict:
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(BOOTSTRAP):
        pick = rng.integers(0, len(y), len(y))
        if len(set(y[pick].tolist())) == 2:
            draws.append(metric(y[pick], score[pick]))
    low, high = np.percentile(draws, [2.5, 97.5])
    return {"value": round(float(metric(y, score)), 4), "low": round(float(low), 4), "high": round(float(high), 4)}


def figures(table: Table, held: np.ndarray, p: np.ndarray) -> dict:
    """Balanced accuracy and AUC with intervals on held's natural statements, their (label,
    verdict) counts, the held-out edits' flips by kind, and the paraphrases called supported."""
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    test = table.natural_test(held)
    y, score = table.y[test], p[test]
    verdict = (score >= 0.5).astype(int)
    result = {
        "balanced_accuracy": with_interval(y, verdict, balanced_accuracy_score),
        "auc": with_interval(y, score, roc_auc_score),
        "sentences": int(test.sum()),
        "unsupported": int((y == 0).sum()),
        "supported_judged_supported": int(((y == 1) & (verdict == 1)).sum()),
        "supported_judged_unsupported": int(((y == 1) & (verdict == 0)).sum()),
        "unsupported_judged_supported": int(((y == 0) & (verdict == 1)).sum()),
        "unsupported_judged_unsupported": int(((y == 0) & (verdict == 0)).sum()),
    }
    partial = held & (table.group == "partially_supported")
    if partial.any():
        result["partially_supported_called_unsupported"] = round(float(np.mean(p[partial] < 0.5)), 4)
    called = {table.fold[i] for i in np.flatnonzero(test & (table.y == 1) & (p >= 0.5))}
    for kind in EDIT_KINDS:
        edits = [i for i in np.flatnonzero(held & (table.kind == kind)) if table.items[i].source in called]
        result[f"{kind}_flips"] = [int(sum(p[i] < 0.5 for i in edits)), len(edits)]
    paraphrases = np.flatnonzero(held & (table.kind == "paraphrase"))
    result["paraphrases_supported"] = [int(sum(p[i] >= 0.5 for i in paraphrases)), len(paraphrases)]
    return result


def flip_share(result: dict) -> float:
    flipped = sum(result[f"{kind}_flips"][0] for kind in EDIT_KINDS)
    asked = sum(result[f"{kind}_flips"][1] for kind in EDIT_KINDS)
    return flipped / asked if asked else float("nan")


def held_out(candidate: Candidate, table: Table, within: np.ndarray) -> tuple[dict, np.ndarray]:
    """Each collection and each MEMERAG language held out, within the rows `within` (every
    statement, or the judged sample), and every row's P(supported) from the fit that held its
    collection out."""
    results, p_held = {}, np.full(len(table.y), np.nan)
    for collection in COLLECTIONS:
        held = within & (table.collection == collection)
        if len(set(table.y[table.natural_test(held)].tolist())) < 2:
            continue  # not judged (yet): nothing to measure on
        p = predicted(candidate, table, within & ~held, held)
        p_held[held] = p
        full = np.full(len(table.y), np.nan)
        full[held] = p
        results[collection] = figures(table, held, full)
    for language in LANGUAGES:
        held = within & (table.collection == "memerag") & (table.language == language)
        if len(set(table.y[table.natural_test(held)].tolist())) < 2:
            continue
        full = np.full(len(table.y), np.nan)
        full[held] = predicted(candidate, table, within & ~held, held)
        results[f"memerag-{language}"] = figures(table, held, full)
    return results, p_held


def line(name: str, result: dict) -> str:
    def cell(metric):
        f = result[metric]
        return f"{f['value']:.3f} [{f['low']:.3f}, {f['high']:.3f}]"

    flips = " ".join(f"{kind} {result[f'{kind}_flips'][0]}/{result[f'{kind}_flips'][1]}" for kind in EDIT_KINDS)
    para = "{}/{}".format(*result["paraphrases_supported"])
    partial = result.get("partially_supported_called_unsupported")
    return (
        f"  {name:<13} BA {cell('balanced_accuracy')}  AUC {cell('auc')}  n={result['sentences']:<5} flips: {flips}  "
        f"paraphrases supported {para}" + (f"  partial->unsupported {partial:.2f}" if partial is not None else "")
    )


CANDIDATES = (
    Candidate("words", ("words",)),
    Candidate("alignment", ("alignment",)),
    Candidate("cues", ("cues",)),
    Candidate("words+alignment", ("words", "alignment")),
    Candidate("words+alignment+cues", ("words", "alignment", "cues")),
    Candidate("judge odds", (), odds=True),
    Candidate("judge state", (), state=True),
    Candidate("words+alignment+cues+odds", ("words", "alignment", "cues"), odds=True),
    Candidate("words+alignment+cues+state", ("words", "alignment", "cues"), state=True),
    Candidate("words+alignment+cues+odds+state", ("words", "alignment", "cues"), odds=True, state=True),
)


AGREEMENT_TIE = 0.03


def agreement(results: dict) -> float:
    """The worst held-out collection's balanced accuracy (the rule, 1)."""
    return min(results[c]["balanced_accuracy"]["value"] for c in COLLECTIONS if c in results)


def contradictions(results: dict) -> float:
    """The worst held-out collection's flips (the rule, 2)."""
    shares = [flip_share(results[c]) for c in COLLECTIONS if c in results]
    return min((0.0 if math.isnan(share) else share) for share in shares)


def chosen(scored: dict[str, tuple[Candidate, dict]]) -> Candidate:
    """The rule of the module docstring (steps 1-3) over the candidates given."""
    entries = list(scored.values())
    best = max(agreement(results) for _, results in entries)
    agreeing = [(c, r) for c, r in entries if agreement(r) >= best - AGREEMENT_TIE]
    most = max(contradictions(r) for _, r in agreeing)
    top = max(agreement(r) for c, r in agreeing if contradictions(r) >= most - MARGIN)
    close = [
        candidate
        for candidate, results in agreeing
        if contradictions(results) >= most - MARGIN and agreement(results) >= top - MARGIN
    ]
    return min(close, key=lambda candidate: (candidate.cost_rank, len(candidate.families)))


def answer_level(table: Table, p: np.ndarray) -> dict:
    """Per answer (MEMERAG: a question's labelled sentences, faithful when all are supported; WiCE:
    a claim, faithful when supported, against not supported), each score's AUC with its interval:
    the share of statements called supported, the mean and lowest P(supported), and the answer's
    K-precision (the mean over its tokens of their best cosine in its passages: its statements'
    alignment precision over every passage, weighed by their words)."""
    from sklearn.metrics import roc_auc_score

    precision, words = table.names.index("align_precision_all"), table.names.index("log_tokens")
    answers: dict[str, list[int]] = defaultdict(list)
    for index, item in enumerate(table.items):
        if item.kind != "natural" or np.isnan(p[index]) or item.group == "partially_supported":
            continue
        if item.collection == "memerag":
            answers[item.id.rsplit("-", 1)[0]].append(index)
        elif item.collection == "wice":
            answers[item.id].append(index)
    results, pooled = {}, defaultdict(list)
    for collection in ("memerag", "wice"):
        faithful, scores = [], defaultdict(list)
        for indexes in answers.values():
            if table.items[indexes[0]].collection != collection:
                continue
            ps = p[indexes]
            faithful.append(int(all(table.y[i] for i in indexes)))
            scores["share supported"].append(float(np.mean(ps >= 0.5)))
            scores["mean P"].append(float(ps.mean()))
            scores["lowest P"].append(float(ps.min()))
            weights = np.expm1(table.x[indexes, words])
            scores["K-precision"].append(float(np.average(table.x[indexes, precision], weights=weights + 1e-9)))
        y = np.array(faithful)
        results[collection] = {
            "answers": len(y),
            "unfaithful": int((y == 0).sum()),
            **{name: with_interval(y, np.array(v), roc_auc_score) for name, v in scores.items()},
        }
        for name, values in scores.items():
            pooled[name].append((y, np.array(values)))
    # The rule (module docstring): the score whose worst collection's AUC is highest, and the
    # bound below which an answer is listed among the least faithful, on that score.
    chosen = max(pooled, key=lambda name: min(results[c][name]["value"] for c in ("memerag", "wice")))
    results["score"] = chosen
    results["threshold"] = answer_threshold(pooled[chosen])
    return results


def answer_threshold(pooled: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """The answer-level score below which an answer is listed among the least faithful: the
    threshold of the best balanced accuracy over the collections' answers, each collection and
    each class weighed the same."""
    candidates = np.unique(np.concatenate([scores for _, scores in pooled]).round(3))

    def balanced(threshold: float) -> float:
        return float(
            np.mean([((s >= threshold)[y == 1].mean() + (s < threshold)[y == 0].mean()) / 2 for y, s in pooled])
        )

    return float(max(candidates, key=balanced))


def cost(table: Table) -> dict:
    """What a verdict costs on this machine: seconds of its no-model inputs a statement (MiniLM
    encoding its passages, 200 MEMERAG statements of 5 passages each, the passages new to the
    encoder), and the judge's seconds a statement where it was read (its most similar passage)."""
    from ragassay.judge.learned_verdict import statement_inputs
    from ragassay.judge.token_alignment import TokenEncoder, default_token_encoder

    sample = [item for item in table.items if item.collection == "memerag" and item.kind == "natural"][:200]
    encoder = TokenEncoder(default_token_encoder().folder)
    started = time.perf_counter()
    for item in sample:
        statement_inputs(item.statement, list(item.passages), item.question, encoder=encoder)
    judged = list(table.judged_rows.values())
    return {
        "inputs_seconds_per_statement": round((time.perf_counter() - started) / len(sample), 4),
        "judge_seconds_per_statement": round(float(np.mean([r["seconds"] for r in judged])), 2) if judged else None,
        "judge_prompt_tokens_per_statement": round(float(np.mean([r["prompt_tokens"] for r in judged])), 1)
        if judged
        else None,
    }


def cross_fitted(candidate: Candidate, table: Table, within: np.ndarray) -> dict:
    """The candidate on statements of the collections it was fitted on but not on these statements:
    5 folds by statement (a statement and its edits in one fold), every collection in each fit;
    figures per collection and per MEMERAG language. What a team's documents of a kind fitted here
    (Wikipedia-like pages, RAG answers, scientific abstracts) may expect; a new kind, the held-out
    collections' figures."""
    from sklearn.model_selection import GroupKFold

    from ragassay.judge.learned_verdict import fitted_model

    p = np.full(len(table.y), np.nan)
    index = np.flatnonzero(within)
    for fitted, held in GroupKFold(5).split(index, groups=table.fold[index]):
        train, rows = np.zeros(len(table.y), bool), np.zeros(len(table.y), bool)
        train[index[fitted]], rows[index[held]] = True, True
        x_train, x_rows = candidate.matrix(table, train, rows)
        p[rows] = fitted_model(x_train, table.y[train], table.weights(train)[train]).predict_proba(x_rows)[:, 1]
    groups = {c: within & (table.collection == c) for c in COLLECTIONS}
    groups |= {f"memerag-{lang}": within & (table.language == lang) for lang in LANGUAGES}
    return {
        name: figures(table, rows, p)
        for name, rows in groups.items()
        if len(set(table.y[table.natural_test(rows)].tolist())) == 2
    }


def report(write: bool) -> None:
    table = Table()
    everything = np.ones(len(table.y), bool)
    print(
        f"{len(table.y)} statements: "
        + ", ".join(f"{c} {int(((table.collection == c) & (table.kind == 'natural')).sum())}" for c in COLLECTIONS)
        + f"; edits {int(table.edit.sum())}, paraphrases {int((table.kind == 'paraphrase').sum())}; "
        f"judged {int(table.judged.sum())}"
    )
    scored: dict[str, tuple[Candidate, dict]] = {}
    on_sample: dict[str, tuple[Candidate, dict]] = {}
    held_p: dict[str, np.ndarray] = {}
    # The three-way question is a candidate of the whole comparison once it has been read on every
    # judged statement (`three-way --whole`): the rule's step 4 (module docstring).
    three_way_read = bool(table.judged.sum()) and bool(table.three_way[table.judged].all())
    for candidate in CANDIDATES + (THREE_WAY_CANDIDATES[1:] if three_way_read else ()):
        if not candidate.reads_judge:
            results, held_p[candidate.name] = held_out(candidate, table, everything)
            scored[candidate.name] = (candidate, results)
            print(
                f"{candidate.name}: worst held-out BA {agreement(results):.3f}, worst flips {contradictions(results):.2f}"
            )
            for name, result in results.items():
                print(line(name, result))
        if table.judged.sum() and candidate.families != ("cues",):
            results, _ = held_out(candidate, table, table.judged)
            on_sample[candidate.name] = (candidate, results)
            print(
                f"{candidate.name} (judged sample): worst held-out BA {agreement(results):.3f}, "
                f"worst flips {contradictions(results):.2f}"
            )
            for name, result in results.items():
                print(line(name, result))
    shipped = chosen(scored)
    print(f"rule, every statement: {shipped.name}")
    if on_sample:
        on_judged = chosen(on_sample)
        print(
            f"rule, judged sample: {on_judged.name} ("
            + ", ".join(
                f"{name} {agreement(results):.3f}/{contradictions(results):.2f}"
                for name, (_, results) in on_sample.items()
            )
            + ": worst held-out balanced accuracy / flips)"
        )
        if on_judged.reads_judge:
            shipped = on_judged
    print(f"rule: ship {shipped.name}")
    source = on_sample if shipped.reads_judge else scored
    results = source[shipped.name][1]
    p = held_out(shipped, table, table.judged if shipped.reads_judge else everything)[1]
    answers = answer_level(table, p)
    print(
        f"answer level: {answers['score']} (best worst-collection AUC); below {answers['threshold']:.3f} an answer "
        "is listed among the least faithful"
    )
    for collection, figures_of in ((c, answers[c]) for c in ("memerag", "wice")):
        print(
            f"answer level, {collection} ({figures_of['answers']} answers, {figures_of['unfaithful']} unfaithful): "
            + ", ".join(
                f"{k} AUC {v['value']:.3f} [{v['low']:.3f}, {v['high']:.3f}]"
                for k, v in figures_of.items()
                if isinstance(v, dict)
            )
        )
    fitted_kinds = cross_fitted(shipped, table, table.judged if shipped.reads_judge else everything)
    print("new documents of the kinds fitted (5 folds by statement, every collection in each fit):")
    for name, result in fitted_kinds.items():
        print(line(name, result))
    spent = cost(table)
    print(f"cost: {json.dumps(spent)}")
    if write:
        write_shipped(table, shipped, results, answers, spent, scored, on_sample, fitted_kinds)


THREE_WAY_CANDIDATES = (
    Candidate("judge odds", (), odds=True),
    Candidate("three-way odds", (), three_way=True),
    Candidate("judge odds+three-way", (), odds=True, three_way=True),
)


def three_way_report() -> None:
    """The three-way question against the shipped judge odds on the three-way sample (module
    docstring): each held out by collection and MEMERAG language, the rule, and the call's cost."""
    table = Table()
    # The subsample's statements only: once `three-way --whole` has read more, `report` compares them.
    sample = {item.id for item in three_way_sample(all_items())}
    within = table.three_way & table.judged & np.array([item.id in sample for item in table.items])
    natural = within & (table.kind == "natural")
    print(
        f"three-way sample: {int(within.sum())} statements ("
        + ", ".join(f"{c} {int((natural & (table.collection == c)).sum())}" for c in COLLECTIONS)
        + f" natural; edits {int((within & table.edit).sum())}, paraphrases {int((within & (table.kind == 'paraphrase')).sum())})"
    )
    scored = {}
    for candidate in THREE_WAY_CANDIDATES:
        results, _ = held_out(candidate, table, within)
        scored[candidate.name] = (candidate, results)
        print(
            f"{candidate.name}: worst held-out BA {agreement(results):.3f}, worst flips {contradictions(results):.2f}"
        )
        for name, result in results.items():
            print(line(name, result))
    picked = chosen(scored)
    print(f"rule: {picked.name} ({'keep' if picked.three_way else 'drop'} the three-way question)")
    rows = [table.three_way_rows[table.items[i].id] for i in np.flatnonzero(within)]
    judged = [table.judged_rows[table.items[i].id] for i in np.flatnonzero(within)]
    verdicts = np.argmax(table.three_p[within], axis=1)
    print(
        "three-way answers (supported / contradicted / not mentioned): "
        + " / ".join(str(int((verdicts == k).sum())) for k in range(3))
        + f"; coverage {np.mean([r['coverage'] for r in rows]):.3f}"
    )
    print(
        f"cost a statement: three-way {np.mean([r['seconds'] for r in rows]):.2f} s, "
        f"{np.mean([r['prompt_tokens'] for r in rows]):.0f} prompt tokens; support call "
        f"{np.mean([r['seconds'] for r in judged]):.2f} s, {np.mean([r['prompt_tokens'] for r in judged]):.0f} prompt tokens"
    )


def write_shipped(
    table: Table, shipped: Candidate, results: dict, answers: dict, spent: dict, scored, on_sample, fitted_kinds
) -> None:
    """The shipped learned verdict fitted on every collection (the judged sample where it reads the
    judge), with its provenance, into the package."""
    from ragassay.judge.learned_verdict import (
        INPUT_FAMILIES,
        JUDGE_INPUTS,
        LEARNED_VERDICT_FILE,
        LEARNED_VERDICT_VERSION,
        fit_coefficients,
    )
    from ragassay.judge.prompts import PROMPT_VERSIONS

    if shipped.state:
        raise SystemExit("a verdict that reads the judge's state would need its probe in the file: not written")
    rows = table.judged if shipped.reads_judge else np.ones(len(table.y), bool)
    names = [name for family in shipped.families for name in INPUT_FAMILIES[family]]
    x, _ = shipped.matrix(table, rows, rows)
    # The judge's inputs in the order Candidate.matrix stacks them.
    judge_inputs = ["judge_log_odds"] * shipped.odds + [
        "three_way_supported_log_odds",
        "three_way_contradicted_log_odds",
    ] * shipped.three_way
    names += judge_inputs
    worst = min(COLLECTIONS, key=lambda c: results[c]["balanced_accuracy"]["value"])
    natural = (table.kind == "natural") & rows
    shipped_file = {
        "version": LEARNED_VERDICT_VERSION,
        "inputs": names,
        "judge_inputs": judge_inputs,
        "prompt_versions": {JUDGE_INPUTS[name][0]: PROMPT_VERSIONS[JUDGE_INPUTS[name][0]] for name in judge_inputs},
        **fit_coefficients(x, table.y[rows], names, table.weights(rows)[rows]),
        "provenance": {
            "labels": "MEMERAG multilingual pool (amazon-science/MEMERAG, CC BY-NC 4.0: de/es/fr/hi base and ext, en "
            "ext; MEMERAG's English base set not used), SciFact claims against their abstracts (CC BY-NC 2.0), "
            "WiCE development half (ODC-BY 1.0), and edits and paraphrases written from their supported statements "
            "(benchmarks/verdict_sets.py)",
            "collections": list(COLLECTIONS),
            "languages": list(LANGUAGES),
            "sentences": int(natural.sum()),
            "unsupported": int((natural & (table.y == 0)).sum()),
            "edits": int((table.edit & rows).sum()),
            "fitted": date.today().isoformat(),
            "method": "logistic regression on standardized inputs, each collection weighed the same and each class "
            f"within it, edits {EDIT_SHARE} of a collection's unsupported weight, C=1; supported when P >= 0.5",
            "candidate": shipped.name,
            "held_out": results,
            "worst_held_out": {"collection": worst, **{k: results[worst][k] for k in ("balanced_accuracy", "auc")}},
            "fitted_kinds": fitted_kinds,
            "mean_held_out_balanced_accuracy": round(
                float(np.mean([results[c]["balanced_accuracy"]["value"] for c in COLLECTIONS])), 4
            ),
            "answer_level": answers,
            "cost": spent,
            "compared": {
                name: {c: entry[1][c]["balanced_accuracy"]["value"] for c in COLLECTIONS}
                for name, entry in {**scored, **{f"{k} (judged sample)": v for k, v in on_sample.items()}}.items()
            },
            "rule": " ".join(__doc__.split("\nThe rule ")[1].split("\nAnswer level")[0].split()),
            "command": "benchmarks/fit_learned_verdict.py signals && benchmarks/fit_learned_verdict.py judge && "
            "benchmarks/fit_learned_verdict.py three-way --whole && benchmarks/fit_learned_verdict.py report --write",
        },
    }
    LEARNED_VERDICT_FILE.write_text(json.dumps(shipped_file, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {LEARNED_VERDICT_FILE.relative_to(REPO)}")
    assert not math.isnan(shipped_file["intercept"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("signals", help="every statement's no-model inputs, cached")
    commands.add_parser("judge", help="the judge's odds and state on a seeded sample (slow, resumable)")
    reporting = commands.add_parser("report", help="the comparison, the rule, and with --write the shipped file")
    reporting.add_argument("--write", action="store_true")
    asking = commands.add_parser("three-way", help="the judge's three-way answer on a subsample (slow, resumable)")
    asking.add_argument("--whole", action="store_true", help="on the whole judged sample (the rule's step 4)")
    commands.add_parser("three-way-report", help="the three-way question against the shipped judge odds")
    arguments = parser.parse_args()
    if arguments.command == "signals":
        compute_signals()
    elif arguments.command == "judge":
        judge_signals()
    elif arguments.command == "three-way":
        three_way_signals(arguments.whole)
    elif arguments.command == "three-way-report":
        three_way_report()
    else:
        report(arguments.write)


if __name__ == "__main__":
    main()
