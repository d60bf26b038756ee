"""An evaluation's outcome as Markdown, for the Prefect UI's artifact view (and anywhere else
Markdown renders): the significance of every paired difference, warnings, discards, and the link
to the MLflow run. Pure: numbers in, text out."""

from __future__ import annotations

from ragassay.evaluation.answer_summary import ANSWER_INTERVAL_METRICS
from ragassay.evaluation.outcomes import AnswerEvalReport, RetrievalEvalReport
from ragassay.gates.assertions import measured
from ragassay.run_warnings import RunWarning

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


def _gate_lines(assertions: list[dict]) -> list[str]:
    if not assertions:
        return []
    return ["", "## Gates", ""] + [
        f"- `{a['assertion']}`: {'passed' if a['passed'] else '**FAILED**'} ({measured(a)})" for a in assertions
    ]


def retrieval_markdown(report: RetrievalEvalReport, headline: list[str]) -> str:
    """Means of the headline metrics, paired differences with their significance, gates, warnings."""
    means, comparisons, assertions, warnings = report.means, report.comparisons, report.assertions, report.warnings
    lines = [
        f"# Retrieval evaluation, {report.questions} golden questions",
        "",
        _link(report.mlflow_url, report.batch_id, report.ui_command),
        "",
    ]
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
    lines += _warning_lines(warnings)
    return "\n".join(lines) + "\n"


def _warning_lines(warnings: list[RunWarning]) -> list[str]:
    return ["", f"## Warnings ({len(warnings)})", ""] + ([f"- {w.text()}" for w in warnings] or ["none"])


def answers_markdown(report: AnswerEvalReport) -> str:
    """Answer metrics with their counts, refusal both ways, pairwise tallies, gates, warnings."""
    metrics, pairwise, assertions = report.metrics, report.pairwise, report.assertions
    names = ANSWER_INTERVAL_METRICS
    counts = {"refusal_recall": "unanswerable_questions", "false_refusal_rate": "answerable_questions"}
    lines = [
        f"# Answer evaluation, {report.questions} answerable + {report.unanswerable} unanswerable questions",
        "",
        f"Judge: `{report.judge_model}`. " + _link(report.mlflow_url, report.batch_id, report.ui_command),
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
    lines += _warning_lines(report.warnings)
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
