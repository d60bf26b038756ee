"""An evaluation's outcome as Markdown, for the Prefect UI's artifact view (and anywhere else
Markdown renders): the significance of every paired difference, warnings, discards, and the link
to the MLflow run. Pure: numbers in, text out."""

from __future__ import annotations

from ragassay.gates.assertions import measured

ALPHA = 0.05


def _link(mlflow_url: str | None, batch_id: str, ui_command: str) -> str:
    if mlflow_url:
        return f"MLflow batch [`{batch_id}`]({mlflow_url})"
    return f"MLflow batch `{batch_id}` (open it with `{ui_command}`)"


def _comparison_lines(comparisons: list[dict], metrics: list[str]) -> list[str]:
    shown = [c for c in comparisons if c["metric"] in metrics]
    if not shown:
        return []
    lines = ["| a | b | metric | b - a | 95% CI | p | |", "|---|---|---|---:|---|---:|---|"]
    for c in shown:
        verdict = "significant" if c["p_value"] < ALPHA else "not significant"
        lines.append(
            f"| {c['configuration_a']} | {c['configuration_b']} | {c['metric']} | {c['mean_difference']:+.4f} "
            f"| [{c['ci_low']:+.4f}, {c['ci_high']:+.4f}] | {c['p_value']:.4f} | {verdict} |"
        )
    return lines


def warning_text(warning: dict) -> str:
    """An answer-evaluation warning as one line: where (configuration, metric, question), then why."""
    where = " ".join(part for part in (warning["configuration"], warning["metric"], warning["question"]) if part)
    return f"{where}: {warning['reason']}"


def _gate_lines(assertions: list[dict]) -> list[str]:
    if not assertions:
        return []
    return ["", "## Gates", ""] + [
        f"- `{a['assertion']}`: {'passed' if a['passed'] else '**FAILED**'} ({measured(a)})" for a in assertions
    ]


def retrieval_markdown(
    batch_id: str,
    questions: int,
    means: dict[str, dict[str, float]],
    headline: list[str],
    comparisons: list[dict],
    assertions: list[dict],
    warnings: list[str],
    mlflow_url: str | None,
    ui_command: str,
) -> str:
    """Means of the headline metrics, paired differences with their significance, gates, warnings."""
    lines = [f"# Retrieval evaluation, {questions} golden questions", "", _link(mlflow_url, batch_id, ui_command), ""]
    lines += ["| configuration | " + " | ".join(headline) + " |", "|---|" + "---:|" * len(headline)]
    lines += [
        f"| {label} | " + " | ".join(f"{values.get(m, float('nan')):.4f}" for m in headline) + " |"
        for label, values in means.items()
    ]
    comparison_lines = _comparison_lines(comparisons, headline)
    if comparison_lines:
        lines += [
            "",
            f"## Paired differences (bootstrap 95% CI, randomization p; significant when p < {ALPHA})",
            "",
            *comparison_lines,
        ]
    lines += _gate_lines(assertions)
    lines += ["", f"## Warnings ({len(warnings)})", ""] + ([f"- {w}" for w in warnings] or ["none"])
    return "\n".join(lines) + "\n"


def answers_markdown(
    batch_id: str,
    questions: int,
    unanswerable: int,
    judge_model: str,
    metrics: dict[str, dict[str, float]],
    pairwise: list[dict],
    assertions: list[dict],
    warnings: list[dict],
    mlflow_url: str | None,
    ui_command: str,
) -> str:
    """Answer metrics with their counts, refusal both ways, pairwise tallies, gates, warnings."""
    names = (
        "faithfulness",
        "context_recall",
        "answer_relevancy",
        "citation_precision",
        "refusal_recall",
        "false_refusal_rate",
    )
    counts = {"refusal_recall": "unanswerable_questions", "false_refusal_rate": "answerable_questions"}
    lines = [
        f"# Answer evaluation, {questions} answerable + {unanswerable} unanswerable questions",
        "",
        f"Judge: `{judge_model}`. " + _link(mlflow_url, batch_id, ui_command),
        "",
    ]
    lines += ["| metric | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
    for name in names:
        count = counts.get(name, f"{name}_scored")
        cells = [
            f"{v[name]:.3f} ({int(v.get(count, 0))})" if name in v else f"- ({int(v.get(count, 0))})"
            for v in metrics.values()
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Each cell: value (questions it scored)."]
    if pairwise:
        lines += ["", "## Pairwise (the judge's preference, asked in both orders)", ""]
        lines += [
            f"- {p['configuration_a']} vs {p['configuration_b']}: {p['wins_a']} / {p['ties']} ties / {p['wins_b']}, "
            f"inconsistent {p['inconsistent']}, unreadable {p['unreadable']}"
            for p in pairwise
        ]
    lines += _gate_lines(assertions)
    lines += ["", f"## Warnings ({len(warnings)})", ""]
    lines += [f"- {warning_text(w)}" for w in warnings] or ["none"]
    return "\n".join(lines) + "\n"


def generation_markdown(
    collection: str, seed: int, accepted: int, attempted: int, discarded: dict[str, int], golden_size: int
) -> str:
    """What golden-set generation kept and threw away, by reason."""
    lines = [
        f"# Golden-set generation, collection `{collection}`, seed {seed}",
        "",
        f"{accepted} questions accepted of {attempted} candidates; the golden set holds {golden_size} entries.",
        "",
        "| discarded because | candidates |",
        "|---|---:|",
    ]
    lines += [f"| {reason} | {count} |" for reason, count in discarded.items() if count] or ["| (none) | 0 |"]
    return "\n".join(lines) + "\n"
