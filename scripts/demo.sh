#!/usr/bin/env bash
# Sets ragassay up, then runs the main job on the bundled sample corpus (data/sample).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"

echo "== ingest the sample corpus"
ragassay ingest --collection sample data/sample/corpus
echo "== index it (BM25 + all-MiniLM-L6-v2 int8)"
ragassay index --collection sample
for mode in fulltext semantic hybrid; do
    echo "== $mode search"
    ragassay search --collection sample --mode "$mode" --k 3 "How do I check a colony for varroa mites?"
done
echo "== hybrid search, PDFs only"
ragassay search --collection sample --content-type pdf --k 2 "which disease makes larvae ropy?"

echo "== grounded answers (SmolLM2, in-process): one the corpus supports, one it does not"
ragassay answer --collection sample "What temperature does beeswax melt at?"
ragassay answer --collection sample "What is the capital of Mongolia?"

echo "== golden set: hand-written questions and the documents that answer them"
golden_size=$(ragassay golden list --collection sample --json | python -c 'import json, sys; print(len(json.load(sys.stdin)))')
if [ "$golden_size" = 0 ]; then
    ragassay golden add --collection sample --file data/sample/golden.jsonl
else
    echo "already holds $golden_size entries"
fi
echo "== retrieval evaluation: fulltext, semantic and hybrid, logged as one MLflow batch"
ragassay eval retrieval --collection sample --assert "hybrid:recall@5>=0.8" --assert "fulltext:mrr>=0.5"

echo "== how far to trust the judge: its verdicts against 52 statements labelled by the team (MEMERAG-EXT figures: BENCHMARKS.md)"
ragassay judge calibrate --labels data/judge/labelled_statements.jsonl

echo "== golden questions written by Qwen2.5 1.5B from the corpus, through the quality gate (rules, then the judge checks each answer against its page)"
ragassay golden generate --collection sample --count 3 --seed 7

echo "== answer evaluation: fulltext and hybrid retrieval feeding SmolLM2, judged by Qwen2.5 1.5B (the default judge)"
answer_eval=(--collection sample --configs data/sample/answer_configs.yaml --unanswerable data/sample/unanswerable.jsonl --max-questions 5)
ragassay eval answers "${answer_eval[@]}" --estimate
ragassay eval answers "${answer_eval[@]}"

echo
echo "Workspace: ${RAGASSAY_HOME:-$HOME/.ragassay}. Try: .venv/bin/ragassay search --collection sample \"your question\""
