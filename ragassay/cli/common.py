"""What every `ragassay` subcommand shares: exit codes, consoles, --json output, error handling."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any, NoReturn

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.text import Text

from ragassay.errors import ConfigError

# 1 also covers "the job ran but some of it failed" (rejected files or rows, failed assertions);
# 3 is a crash (an error ragassay did not expect), so CI can tell it from a partial success.
EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, EXIT_CRASH = 0, 1, 2, 3

# Markup off: what is printed is text as it is. A document id, an answer or a warning from a team's
# system may hold `[/bold]` (which crashed a summary after the batch was logged) or
# `[link=http://x]install.md[/link]` (which printed as install.md); ragassay's own styles are
# given as styles (styled), never written into the text.
out = Console(soft_wrap=True, markup=False)
err = Console(stderr=True, soft_wrap=True, markup=False)


# Off a terminal (piped into a file or a CI log) nobody's window bounds a line: tables are as wide
# as their content (at 80 columns a label printed as "haysta…"). COLUMNS, when set, still rules.
PIPED_WIDTH = 1000


def widen_when_piped() -> None:
    """Each console that does not write to a terminal, with COLUMNS unset, lays lines out
    PIPED_WIDTH columns wide, so no label or number is cut."""
    if os.environ.get("COLUMNS"):
        return
    for console in (out, err):
        if not console.is_terminal:
            console.width = PIPED_WIDTH


# A section rule's width off a terminal: a rule has no content to fit, so PIPED_WIDTH would make
# each one 1,000 characters (about 3 kB of box-drawing bytes) in a CI log.
PIPED_RULE_WIDTH = 80


def section_rule(title: str) -> None:
    """A rule naming a section (`── summary ───…`), as wide as the terminal, or PIPED_RULE_WIDTH
    when piped."""
    from rich.rule import Rule

    out.print(Rule(title, align="left"), width=out.width if out.is_terminal else PIPED_RULE_WIDTH)


def styled(*parts: str | tuple[str, str]) -> Text:
    """A line of text with some words styled: each part is plain text (never read as markup), or
    (text, style) such as ("warning", "yellow")."""
    return Text.assemble(*parts)


def prefect_defaults() -> None:
    """Quiet, offline-friendly Prefect settings unless the user chose otherwise, and a temporary
    Prefect server that stops with this process when no Prefect server is configured."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # The client's side of it: ragassay runs offline, and Prefect's first-run telemetry notice
    # would print over the command's own first lines.
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    if sys.stderr.isatty():
        # On a terminal the progress bars show the work; Prefect's INFO lines would print onto the
        # bar's line. The run's log (what the Prefect UI shows) still receives every line, and
        # off a terminal (CI logs) the console keeps them, since no bar is drawn there.
        # Failures come back as one line from the command, so Prefect's own error tracebacks stay
        # in the run log too (--debug shows them here).
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
    # Prefect prints every failed task and flow with its traceback on the console; for an error
    # ragassay expected, one line from the command says it all (cli/console_log.py).
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_CLASS", "ragassay.cli.console_log.ConsoleHandler")
    # Prefect's own temporary server outlives a killed CLI; ours dies with it (cli/temporary_server.py).
    from ragassay.cli.temporary_server import start_for_this_process

    start_for_this_process()


def run_flow(flow_object, *args: Any) -> Any:
    """The flow's report, also when its flow run ended Failed on a failed assertion. When Prefect
    fails after the flow's work finished (its server lost, so the
    final state cannot be recorded), the report the work produced, with a warning: every table is
    written and MLflow holds the batch, so the command prints its results and exits with the code
    the work earned (flows/finished.py)."""
    from flows.finished import take
    from flows.run_names import tagged

    take(flow_object.name)
    for argument in args:
        check_parameter_size(argument)
    from prefect.exceptions import FailedRun

    from ragassay.cli.temporary_server import flow_run_settings

    try:
        with tagged(args[0] if args else None), flow_run_settings():
            return flow_object(*args)
    except Exception as error:
        report = take(flow_object.name)
        if report is None:
            raise
        if isinstance(error, FailedRun) and (
            any(not a.passed for a in getattr(report, "assertions", [])) or getattr(report, "not_logged", None)
        ):
            # The flow run ended Failed on its verdict or on a batch MLflow did not take
            # (flows/finished.with_verdict); the command prints the report and exits as before.
            return report
        from ragassay.redaction import redact

        err.print(
            styled(
                ("warning:", "yellow"),
                " the work finished, but Prefect could not record the flow run's end "
                f"({type(error).__name__}: {redact(str(error))[:300]}; PREFECT_API_URL="
                f"{redact(os.environ.get('PREFECT_API_URL', 'unset'))}); the results below are this "
                "process's, and MLflow holds the batch",
            ),
            highlight=False,
        )
        return report


def check_parameter_size(config: Any) -> None:
    """ConfigError (exit 2) for a configuration larger than Prefect keeps as a flow run's
    parameters (PREFECT_SERVER_API_MAX_PARAMETER_SIZE, 512 KiB), naming its largest value, before
    any work starts: Prefect itself refuses it only when the flow run is created, as a crash."""
    from prefect.settings import get_current_settings

    limit = get_current_settings().server.api.max_parameter_size
    if not limit or not isinstance(config, BaseModel):
        return
    dumped = config.model_dump(mode="json")
    size = len(json.dumps(dumped))
    if size < limit:
        return
    path, value = "", dumped
    # Down the largest value while it is most of what holds it: that is the one to move out.
    while isinstance(value, dict | list) and value:
        items = value.items() if isinstance(value, dict) else enumerate(value)
        key, child = max(items, key=lambda item: len(json.dumps(item[1])))
        if len(json.dumps(child)) * 2 < len(json.dumps(value)):
            break
        path, value = f"{path}.{key}" if isinstance(key, str) else f"{path}[{key}]", child
    raise ConfigError(
        f"the configuration is {size:,} bytes as Prefect flow-run parameters, more than the {limit:,} Prefect "
        f"keeps (PREFECT_SERVER_API_MAX_PARAMETER_SIZE); most of it is {path.lstrip('.') or 'its values'} "
        f"({len(json.dumps(value)):,} bytes): make that smaller"
    )


def emit(as_json: bool, payload: Any, render) -> None:
    """Print payload as JSON on stdout with --json, else call render() for the human view."""
    if as_json:
        from ragassay.redaction import redact

        sys.stdout.write(redact(json.dumps(payload, indent=2, default=str)) + "\n")
    else:
        render()


def dumped(rows, **options) -> list[dict]:
    """Typed rows (pydantic models) as JSON-ready dicts for --json output."""
    return [row.model_dump(mode="json", **options) for row in rows]


def exit_unless_logged(report) -> None:
    """Exit 2 when the report's batch is not in MLflow (its tracking server did not answer),
    naming the server's error, where the results are kept, and how to log them; else return."""
    if not getattr(report, "not_logged", None):
        return
    from ragassay.redaction import redact

    err.print(
        styled(
            ("error:", "red"),
            f" not logged: {redact(report.not_logged)}. The results above are kept in {report.kept_in} "
            "(report.md, each configuration's tables as Parquet). Once the server is back, run the same "
            "command again to log them: answers, verdicts and systems' replies come from the workspace's "
            "cache, so no model or system is asked again.",
        ),
        highlight=False,
    )
    raise typer.Exit(EXIT_USAGE)


def exit_on_failed_assertions(assertions: list) -> NoReturn:
    """Exit 1 naming each failed --assert bound, else 0."""
    from ragassay.gates.assertions import measured

    failed = [r for r in assertions if not r.passed]
    if failed:
        err.print("assertion failed: " + "; ".join(f"{r.assertion} ({measured(r)})" for r in failed), highlight=False)
        raise typer.Exit(EXIT_PARTIAL)
    raise typer.Exit(EXIT_OK)


def fail(error: Exception) -> NoReturn:
    """One line naming what is wrong, exit 2; under --debug the error's traceback first."""
    from ragassay.environment import environment
    from ragassay.redaction import redact

    if environment().debug:
        import traceback

        sys.stderr.write(redact("".join(traceback.format_exception(error))))
    err.print(styled(("error:", "red"), " " + redact(str(error))), highlight=False)
    raise typer.Exit(EXIT_USAGE)


def read_yaml(text: str):
    """YAML as people write it: only true/false are booleans (YAML 1.2), so `groundedness: off` or
    `rerank: no` stay the words written, where YAML 1.1 readers turn them into false; and a key
    given twice in one mapping is refused (readers keep the last silently: a second `collection:`
    once evaluated another collection)."""
    import re

    import yaml

    class Yaml12Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                lines: dict = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=deep)
                    if not isinstance(key, str | int | float | bool):
                        continue  # an unhashable key is PyYAML's own error below
                    line = key_node.start_mark.line + 1
                    if key in lines:
                        raise ConfigError(f"duplicate key {key!r} on lines {lines[key]} and {line}")
                    lines[key] = line
            return super().construct_mapping(node, deep)

    Yaml12Loader.yaml_implicit_resolvers = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Yaml12Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    loader = Yaml12Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded = expanded_size(node)
        if expanded > MAX_YAML_VALUES:
            raise ConfigError(
                f"expands to {expanded:,} values through its aliases (*name repeats &name's value), more than "
                f"{MAX_YAML_VALUES:,}: write the values out, or repeat fewer"
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()


# The most values (scalars, lists and mappings, each alias counted as what it repeats) one YAML
# file may stand for: far above any configuration people write (the sample pipeline is ~60),
# far below an alias bomb's (9 levels of 9 aliases: about 490 million from under 1 kB).
MAX_YAML_VALUES = 100_000


def expanded_size(node) -> int:
    """How many values a YAML node stands for once its aliases are expanded, counted without
    expanding them: an alias is the node it names, whose count is remembered. ConfigError for a
    node that contains itself."""
    import yaml

    counted: dict[int, int] = {}
    open_nodes: set[int] = set()

    def count(current) -> int:
        key = id(current)
        if key in counted:
            return counted[key]
        if key in open_nodes:
            raise ConfigError("holds a value that contains itself through an alias (&name inside it, *name)")
        open_nodes.add(key)
        if isinstance(current, yaml.SequenceNode):
            total = 1 + sum(count(child) for child in current.value)
        elif isinstance(current, yaml.MappingNode):
            total = 1 + sum(count(k) + count(v) for k, v in current.value)
        else:
            total = 1
        open_nodes.discard(key)
        counted[key] = total
        return total

    return count(node)


def _object_without_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    """json.loads' object_pairs_hook: a key given twice in one object is refused."""
    counts = Counter(key for key, _ in pairs)
    repeated = [key for key, count in counts.items() if count > 1]
    if repeated:
        raise ConfigError(f"duplicate key {repeated[0]!r} in one object")
    return dict(pairs)


def load_config_file(path: Path, pipeline: bool = False) -> dict:
    """A YAML or JSON file holding a list of configurations, or a mapping of evaluation settings;
    a pipeline file (`pipeline`) only the mapping."""
    import yaml

    from ragassay.user_files import read_user_text

    text = read_user_text(path, "configuration file", configuration=True)
    kind = "JSON" if path.suffix == ".json" else "YAML"
    try:
        loaded = (
            json.loads(text, object_pairs_hook=_object_without_duplicate_keys) if kind == "JSON" else read_yaml(text)
        )
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise ConfigError(f"{path} is not valid {kind}: {error}") from error
    except RecursionError:
        raise ConfigError(f"{path} is nested too deeply to be a configuration file") from None
    if pipeline and not isinstance(loaded, dict):
        found = (
            "a list"
            if isinstance(loaded, list)
            else "empty"
            if loaded is None
            else f"the {type(loaded).__name__} {loaded!r:.40}"
        )
        raise ConfigError(
            f"{path} must be a mapping of the pipeline's settings (collection:, ingest:, index:, golden:, "
            f"retrieval:, answers:, as in data/sample/pipeline.yaml); its top level is {found}"
        )
    if isinstance(loaded, list):
        return {"configurations": loaded}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path} must hold a list of configurations or a mapping with 'configurations'")
    return loaded
