#!/usr/bin/env bash
# `make demo`: the end-to-end story of spmd-check on one machine (after
# `make build`).
#
#   1. compile the annotated tensor-parallel training loop with the plugin
#      (the blocks with and without sequence parallelism in global mode,
#      strict, as their build does; the local-mode twin of the
#      tp block too): 0 SPMD diagnostics;
#   2. compile one classic bug (the missing copy-to-tensor-parallel region)
#      with the plugin: the compiler rejects it, as a user would see it;
#   3. train the example on 4 ranks (dp=2 x tp=2) over real Gloo process
#      groups, launched with torchrun: loss curve and the equivalence table
#      against the unsharded one-device program; then the verdict of the
#      same run with sequence parallelism;
#   4. run the same bug compiled WITHOUT the plugin: the wrong gradients the
#      plugin prevented;
#   5. the GPT of examples/gpt: 0 diagnostics in strict global mode, a bug
#      rejected, dp=2 x tp=2 training on text (loss, validation loss, the
#      equivalence table), dp=1 x tp=4, and the bug trained without the plugin;
#   6. a one-line verdict.
#
# The nine plugin compiles of sections 1, 2 and 5 (syntax-only, the demo's
# slowest part on a small machine) start at once in the background, two at a
# time; each section prints their results when it needs them. Every section
# ends with its wall time and the load average.
#
# Environment: SPMD_BUILD_DIR (default build/, the preset's), DEMO_STEPS
# (default 20), DEMO_GPT_STEPS (default 20). Exit status 0 only if every
# step behaved as expected.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${SPMD_BUILD_DIR:-$ROOT/build}
STEPS=${DEMO_STEPS:-20}
PLUGIN=$BUILD/lib/spmd-check.so
TOOLS=$ROOT/examples/tools
EXAMPLE=$BUILD/bin/tp_transformer_block
BUG=missing_copy_to_tp
cd "$ROOT"

start=$(date +%s)
bold=""; off=""
if [ -t 1 ]; then bold=$'\e[1m'; off=$'\e[0m'; fi
last=$start
# The wall time and load average of the section that ends.
took() {
  local now; now=$(date +%s)
  echo "  [$((now - last)) s, load average $(cut -d' ' -f1 /proc/loadavg)]"
  last=$now
}
section() {
  if [ -n "${started:-}" ]; then took; fi
  started=1; echo; echo "${bold}== $*${off}"
}
fail() { echo "demo: $*" >&2; echo; echo "${bold}demo verdict: FAIL - $*${off}"; exit 1; }

GPT=$BUILD/bin/gpt_train
GPT_BUG=bias_before_reduce
for f in "$PLUGIN" "$EXAMPLE" "$BUILD/bin/tp_bug_$BUG" "$GPT"; do
  [ -e "$f" ] || fail "$f is missing; run 'make build' first (or set SPMD_BUILD_DIR)"
done

# -- the plugin compiles, in the background ------------------------------
JOBS=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$JOBS"' EXIT
# compile NAME CMD...: runs CMD, output in $JOBS/NAME.out, status in .rc.
compile() {
  local name=$1; shift
  "$@" >"$JOBS/$name.out" 2>&1
  echo $? >"$JOBS/$name.rc"
}
# await NAME: waits for the job, then sets out and rc.
await() {
  while [ ! -e "$JOBS/$1.rc" ]; do sleep 0.2; done
  out=$(cat "$JOBS/$1.out"); rc=$(cat "$JOBS/$1.rc")
}
clean() { compile "$1" "$TOOLS/plugin_compile.py" --build-dir "$BUILD" --plugin "$PLUGIN" --expect-clean "$2"; }
# Two workers, the heaviest compiles (the GPT, real torch headers) first.
(
  clean gpt_model examples/gpt/model.cpp
  compile gpt_bug "$ROOT/test/examples/gpt_bug_compile.py" "$BUILD" "$PLUGIN" "$GPT_BUG"
  clean tp_tensor_parallel examples/tp_transformer_block/tensor_parallel.cpp
  clean tp_optimizer examples/tp_transformer_block/optimizer.cpp
  clean tp_tensor_parallel_local examples/tp_transformer_block/tensor_parallel_local.cpp
) &
(
  clean gpt_train examples/gpt/train.cpp
  clean tp_train examples/tp_transformer_block/train.cpp
  clean tp_sequence_parallel examples/tp_transformer_block/sequence_parallel.cpp
  compile tp_bug "$TOOLS/plugin_compile.py" --build-dir "$BUILD" --plugin "$PLUGIN" \
    --expect "error: .*\[spmd:" --expect-at "// BUG" "examples/bugs/$BUG.cpp"
) &

# -- 1 ------------------------------------------------------------------
section "1. The annotated example, compiled with the plugin"
echo "\$ clang++-19 -fplugin=${PLUGIN#"$ROOT"/} -fsyntax-only ... examples/tp_transformer_block/*.cpp"
sources=(tensor_parallel sequence_parallel optimizer train tensor_parallel_local)
total=0
for s in "${sources[@]}"; do
  await "tp_$s"
  n=$(sed -n 's/^\([0-9]*\) SPMD diagnostics.*/\1/p' <<<"$out")
  mode=""
  case $s in
    tensor_parallel | sequence_parallel) mode=" (strict global mode: the build's flags)" ;;
    tensor_parallel_local) mode=" (the same block for local mode)" ;;
  esac
  printf '  %-26s %s SPMD diagnostics%s\n' "$s.cpp" "${n:-?}" "$mode"
  if [ $rc -ne 0 ]; then echo "$out"; fail "the example does not compile cleanly with the plugin"; fi
  total=$((total + n))
done
echo "${bold}$total SPMD diagnostics${off} in ${#sources[@]} files"

# -- 2 ------------------------------------------------------------------
section "2. A classic bug: the copy-to-tensor-parallel region is missing"
sed -n '/^SPMD_TYPE(dp = V, tp = I)$/,/^}/p' "examples/bugs/$BUG.cpp" | sed 's/^/  | /'
echo
echo "\$ clang++-19 -fplugin=${PLUGIN#"$ROOT"/} -fsyntax-only ... examples/bugs/$BUG.cpp"
await tp_bug
grep -v ' SPMD diagnostics$' <<<"$out"
[ "$rc" -eq 0 ] || fail "the plugin did not reject examples/bugs/$BUG.cpp"

# -- 3 ------------------------------------------------------------------
section "3. Training on 4 ranks (dp=2 x tp=2, Gloo), launched with torchrun"
echo "\$ torchrun --no_python --nproc_per_node 4 --master_addr 127.0.0.1 --master_port <free> \\"
echo "    --redirects 1 --tee 1 ${EXAMPLE#"$ROOT"/} --steps $STEPS"
train=$("$TOOLS/run_ranks.sh" --launcher torchrun --nproc 4 -- "$EXAMPLE" --steps "$STEPS" 2>&1)
train_rc=$?
echo "$train"
[ $train_rc -eq 0 ] || fail "the 4-rank training did not match the one-device program (exit $train_rc)"
echo
echo "\$ examples/tools/run_ranks.sh --launcher direct --nproc 4 -- ${EXAMPLE#"$ROOT"/} --steps $STEPS --sp --quiet    # with sequence parallelism"
sp=$("$TOOLS/run_ranks.sh" --launcher direct --nproc 4 -- "$EXAMPLE" --steps "$STEPS" --sp --quiet 2>&1)
sp_rc=$?
grep -E '^  (mesh|verdict)|^verdict' <<<"$sp" || echo "$sp"
[ $sp_rc -eq 0 ] || fail "the sequence-parallel training did not match the one-device program (exit $sp_rc)"

# -- 4 ------------------------------------------------------------------
section "4. The same bug compiled WITHOUT the plugin: what it would have cost"
bug=$("$TOOLS/run_ranks.sh" --launcher direct --nproc 4 -- \
        "$BUILD/bin/tp_bug_$BUG" --steps 1 --quiet 2>&1)
bug_rc=$?
sed -n '/equivalence/,$p' <<<"$bug" | sed 's/^verdict:/bug variant verdict:/'
[ $bug_rc -eq 1 ] || fail "the bug variant was expected to give wrong gradients (exit $bug_rc)"

# -- 5: the GPT (examples/gpt) ------------------------------------------
GPT_STEPS=${DEMO_GPT_STEPS:-20}
section "5. A whole GPT: vocab-parallel embedding, 2 blocks (fused-QKV attention, MLP), sequence parallelism, vocab-parallel loss, AdamW, clipping"
echo "\$ clang++-19 -fplugin=${PLUGIN#"$ROOT"/} -fplugin-arg-spmd-check-strict -fplugin-arg-spmd-check-global -fsyntax-only ... examples/gpt/{model,train}.cpp"
gtotal=0
for s in model train; do
  await "gpt_$s"
  n=$(sed -n 's/^\([0-9]*\) SPMD diagnostics.*/\1/p' <<<"$out")
  printf '  %-22s %s SPMD diagnostics (strict global mode: unknowns and lost shard dims included)\n' "$s.cpp" "${n:-?}"
  if [ $rc -ne 0 ]; then echo "$out"; fail "the GPT does not compile cleanly with the plugin"; fi
  gtotal=$((gtotal + n))
done
echo
echo "A classic bug: the row-parallel bias added inside the partial sum (model.cpp, -DGPT_BUG=GPT_BUG_$GPT_BUG)"
grep -n "BUG($GPT_BUG)" examples/gpt/model.cpp | sed 's/^/  | model.cpp:/'
await gpt_bug
grep -E "error:|rejected at" <<<"$out" | sed 's/^/  /'
[ "$rc" -eq 0 ] || fail "the plugin did not reject the GPT bug $GPT_BUG"
echo
echo "\$ torchrun --no_python --nproc_per_node 4 ... ${GPT#"$ROOT"/} --tp 2 --steps $GPT_STEPS    # dp=2 x tp=2, text: GPL-3 of base-files"
gtrain=$("$TOOLS/run_ranks.sh" --launcher torchrun --nproc 4 --timeout 150 -- "$GPT" --tp 2 --steps "$GPT_STEPS" 2>&1)
gtrain_rc=$?
echo "$gtrain"
[ $gtrain_rc -eq 0 ] || fail "the 4-rank GPT training did not match the one-device program (exit $gtrain_rc)"
echo
echo "\$ examples/tools/run_ranks.sh --launcher direct --nproc 4 -- ${GPT#"$ROOT"/} --tp 4 --steps 5 --quiet    # dp=1 x tp=4"
g4=$("$TOOLS/run_ranks.sh" --launcher direct --nproc 4 --timeout 120 -- "$GPT" --tp 4 --steps 5 --quiet 2>&1)
g4_rc=$?
grep -E '^  (mesh|parameters|loss curve|gradient)|^verdict' <<<"$g4" || echo "$g4"
[ $g4_rc -eq 0 ] || fail "the dp=1 x tp=4 GPT training did not match the one-device program (exit $g4_rc)"
if [ -x "$BUILD/bin/gpt_bugs_test" ]; then
  echo
  echo "The same bug compiled WITHOUT the plugin (build/bin/gpt_bugs_test): it trains, and differs from one device"
  "$BUILD/bin/gpt_bugs_test" --gtest_filter="*TrainsWrongly/$GPT_BUG" 2>&1 \
    | grep -E "^$GPT_BUG: differs|^\[  (PASSED|FAILED) " | sed 's/^/  /'
fi

# -- 6 ------------------------------------------------------------------
took
elapsed=$(( $(date +%s) - start ))
maxdiff=$(sed -n 's/.*(max abs diff \([^ ]*\) <=.*/\1/p' <<<"$train")
losses=$(sed -n 's/.*loss fell \(.*\)$/\1/p' <<<"$train")
echo
echo "${bold}demo verdict: PASS - 0 SPMD diagnostics on the example, the missing copy-to-TP bug rejected at compile time, 4-rank training equals one device with and without sequence parallelism (max abs diff $maxdiff), loss $losses; GPT: $gtotal SPMD diagnostics in strict global mode, a bug rejected, dp=2 x tp=2 and dp=1 x tp=4 equal one device (${elapsed}s)${off}"
