#!/usr/bin/env bash
# bench/gpu_bench.py and bench/step_profile.py on the lent GPU machine, in as few device calls
# as possible (../shared/gpu/README.md: TensorFlow travels there as a chunked TF-only bundle).
#
#   Here, once:   bash bench/gpu_machine.sh prepare [OUTPUT_ROOT]   (default output/quality)
#     copies what the bench reads (the newest training_run.json and the Transform output's
#     train split, under 1 MB for the taxi data) into .gpu/run/, keeping the layout; fetches
#     CUPTI (libcupti.so.12, 7 MB; not in the bundle, and without it the profiler sees no GPU
#     kernels) into .gpu/cupti; and builds the TF bundle's chunks into .gpu/ with
#     ../shared/gpu/build_bundle.sh when they are not there yet (about 2 minutes, 15 chunks).
#   Then one device call per chunk:  mkdir -p /tmp/stage && mv .gpu/p.NN /tmp/stage/
#     (carry [".gpu/p.NN"]), back to back (the machine forgets /tmp 30 s after a call), and:
#   There:        bash bench/gpu_machine.sh run [gpu_bench.py options]
#     (carry [".gpu/bin", ".gpu/run", ".gpu/cupti"]): unpacks the bundle into /tmp/site once,
#     checks that TensorFlow sees the GPU, and runs the bench: each row is printed and added
#     to $OUT/gpu_bench.json as it is measured, so a call cut off at its limit keeps them.
#     About 4 minutes on this 2-core machine with the GPU rows skipped (2026-11-23).
#                 bash bench/gpu_machine.sh profile [step_profile.py options]
#     (same carry, the next call): bench/step_profile.py, where the step's time goes (kernels
#     per step, host-to-device copies, the GPU's busy fraction, input waits); summaries and
#     JSON go to $OUT, the traces packed into $OUT/profiles.tar.zst (pack_traces: a call
#     returns at most 8 files of 16 MiB, two folders down).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
RUN=.gpu/run

prepare() {
  local output="${1:-output/quality}" info
  info="$(ls -t "$output"/pipeline_root/Trainer/model_run/*/training_run.json 2>/dev/null | head -1 || true)"
  if [[ -z "$info" ]]; then
    echo "error: no finished pipeline run under $output; run 'tfxline run --output $output' first" >&2
    exit 2
  fi
  local exclude
  exclude="$(git rev-parse --git-path info/exclude)"  # .gpu/ must not travel with the tree
  mkdir -p "$(dirname "$exclude")"
  grep -qx "/.gpu/" "$exclude" 2>/dev/null || echo "/.gpu/" >> "$exclude"
  rm -rf "$RUN"
  mkdir -p "$RUN/pipeline_root/Trainer/model_run/1" "$RUN/pipeline_root/Transform/transformed_examples/1"
  cp "$info" "$RUN/pipeline_root/Trainer/model_run/1/"
  # The model's features, computed here: the GPU machine's TensorFlow has no TFT to run the graph.
  .venv/bin/python bench/materialize.py "$output" "$RUN/pipeline_root/Transform/transformed_examples/1/Split-train"
  echo "carry .gpu/run: $(du -sh "$RUN" | cut -f1) (from $output)"
  cupti
  echo "carry .gpu/cupti: $(du -sh .gpu/cupti | cut -f1)"
  nvcc
  echo "carry .gpu/nvcc (XLA's ptxas and libdevice; only for the XLA rows): $(du -sh .gpu/nvcc | cut -f1)"
  local bundle="$REPO/../shared/gpu/build_bundle.sh"
  if ! ls .gpu/p.* >/dev/null 2>&1 && [[ -f "$bundle" ]]; then
    echo "building the TF bundle into .gpu/ (../shared/gpu/build_bundle.sh, about 2 minutes)"
    bash "$bundle" "$REPO/.gpu" >/dev/null  # an absolute folder: the script changes directory
  fi
  if ls .gpu/p.* >/dev/null 2>&1; then
    ls .gpu/p.* | sed 's/^/upload, one call each: /'
  else
    echo "no bundle in .gpu/ and no ../shared/gpu/build_bundle.sh to make one (../shared/gpu/README.md)" >&2
    exit 2
  fi
}

# fetch_wheel SPEC DIR: one wheel for the GPU machine's Python (CPython 3.12, manylinux), without
# its dependencies, into DIR.
fetch_wheel() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$2" "$1"
}

# CUDA 12's profiling library for the TF 2.21 bundle (the newest CUDA 12 CUPTI on the registry).
cupti() {
  [[ -f .gpu/cupti/libcupti.so.12 ]] && return
  local w
  w="$(mktemp -d)"
  fetch_wheel nvidia-cuda-cupti-cu12==12.8.90 "$w"
  mkdir -p .gpu/cupti
  unzip -q -j -o "$w"/nvidia_cuda_cupti_cu12-*.whl 'nvidia/cuda_cupti/lib/libcupti.so.12' -d .gpu/cupti
  rm -rf "$w"
}

# XLA's GPU compiler needs ptxas and libdevice, which the TF bundle leaves out: the CUDA 12.8
# nvcc wheel's, in the layout --xla_gpu_cuda_data_dir expects (bin/ptxas, nvvm/libdevice).
nvcc() {
  [[ -f .gpu/nvcc/bin/ptxas ]] && return
  local w
  w="$(mktemp -d)"
  fetch_wheel nvidia-cuda-nvcc-cu12==12.8.93 "$w"
  mkdir -p .gpu/nvcc
  unzip -q -o "$w"/nvidia_cuda_nvcc_cu12-*.whl 'nvidia/cuda_nvcc/bin/ptxas' 'nvidia/cuda_nvcc/nvvm/libdevice/*' -d "$w"
  cp -r "$w"/nvidia/cuda_nvcc/bin "$w"/nvidia/cuda_nvcc/nvvm .gpu/nvcc/
  chmod +x .gpu/nvcc/bin/ptxas
  rm -rf "$w"
}

tensorflow_env() {
  if ! python3 -c "import tensorflow" >/dev/null 2>&1; then
    if [[ ! -d /tmp/site ]]; then
      if ! ls /tmp/stage/p.* >/dev/null 2>&1; then
        echo "error: no TensorFlow and no bundle in /tmp/stage; upload the chunks first (prepare's list)" >&2
        exit 2
      fi
      cat /tmp/stage/p.* | .gpu/bin/zstd -d -q | tar -x -C /tmp
    fi
    export PYTHONPATH=/tmp/site
    LD_LIBRARY_PATH="$(ls -d /tmp/site/nvidia/*/lib | tr '\n' ':')${LD_LIBRARY_PATH:-}"
  fi
  LD_LIBRARY_PATH="$REPO/.gpu/cupti:${LD_LIBRARY_PATH:-}"
  if [[ -f .gpu/nvcc/bin/ptxas ]]; then  # carried: XLA compiles with ptxas and libdevice
    chmod +x .gpu/nvcc/bin/ptxas
    export PATH="$REPO/.gpu/nvcc/bin:$PATH" XLA_FLAGS="--xla_gpu_cuda_data_dir=$REPO/.gpu/nvcc ${XLA_FLAGS:-}"
    echo "XLA: ptxas and libdevice from .gpu/nvcc"
  else
    echo "XLA: no ptxas or libdevice (.gpu/nvcc not carried)"
  fi
  export LD_LIBRARY_PATH TF_USE_LEGACY_KERAS=1 PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  python3 -c "import tensorflow as tf; print('TensorFlow', tf.__version__, tf.config.list_physical_devices('GPU'))"
}

run() {
  local out="${OUT:-$REPO/.gpu/out}"
  mkdir -p "$out"
  tensorflow_env
  python3 bench/gpu_bench.py --output "$RUN" --results "$out/gpu_bench.json" "$@" 2>&1 | tee "$out/gpu_bench.log"
}

profile() {
  local out="${OUT:-$REPO/.gpu/out}" traces=/tmp/tfxline-profiles rc=0
  mkdir -p "$out"
  rm -rf "$traces"
  tensorflow_env
  python3 bench/step_profile.py --output "$RUN" --results "$out/step_profile.json" --traces "$traces" "$@" \
    2>&1 | tee "$out/step_profile.log" || rc=$?
  pack_traces "$traces" "$out/profiles.tar.zst"
  return "$rc"
}

# What comes back from the GPU machine's $OUT: at most 8 files of 16 MiB, two folders down. A
# trace is five folders down and 1 to 130 MB (a CPU row at batch 4096), so the rows' traces
# travel as one zstd archive under TRACE_CAP_KB (15 MiB): the largest are left out first, each
# named. Unpack here with: zstd -d -c profiles.tar.zst | tar -x
pack_traces() {
  local src="$1" dest="$2" cap=$(( ${TRACE_CAP_KB:-15360} * 1024 )) zstd rows
  zstd="$(command -v zstd || echo "$REPO/.gpu/bin/zstd")"
  rm -f "$dest"
  [[ -d "$src" ]] || return 0
  mapfile -t rows < <(cd "$src" && du -s -- */ 2>/dev/null | sort -n | awk '{print $2}' | tr -d /)
  while ((${#rows[@]})); do
    tar -C "$src" -cf - -- "${rows[@]}" | "$zstd" -T0 -10 -q -c > "$dest"
    if (( $(stat -c %s "$dest") <= cap )); then
      echo "traces: ${rows[*]} in $dest ($(du -h "$dest" | cut -f1))"
      return 0
    fi
    echo "traces: ${rows[-1]} left out (with it the archive is over the $((cap / 1024)) KB a returned file may hold)"
    unset 'rows[-1]'
  done
  rm -f "$dest"
}

case "${1:-}" in
  prepare) shift; prepare "$@" ;;
  run) shift; run "$@" ;;
  profile) shift; profile "$@" ;;
  pack-traces) shift; pack_traces "$@" ;;
  *) echo "usage: bash bench/gpu_machine.sh prepare [OUTPUT_ROOT] | run [gpu_bench.py options]" \
          "| profile [step_profile.py options] | pack-traces TRACES_DIR ARCHIVE" >&2; exit 2 ;;
esac
