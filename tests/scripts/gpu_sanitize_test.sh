#!/usr/bin/env bash
# scripts/gpu-sanitize and scripts/sanitize-index against a fake compute-sanitizer and a fake
# gtest binary (no GPU): a process that dies mid-shard is named by its test and the tests it did
# not reach run in a new process; failures, clean runs and the index's columns.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
check() {  # check DESCRIPTION COMMAND...: count a failure when the command fails
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}

mkdir -p "$work/bin" "$work/build/tests"
echo "fake0000" >"$work/build/git-commit.txt"
# A gtest-like binary: runs the filtered tests in its own order; a test whose name holds
# 'crash' kills the process (SIGSEGV) when FAKE_CRASH=1, one holding 'fail' fails.
cat >"$work/build/tests/resident_gpu_tests" <<'FAKE'
#!/usr/bin/env bash
read -ra order <<<"${FAKE_ORDER:-a.one a.two b.crash_here b.three c.fail_me c.four}"
filter=""
for arg; do
  case $arg in
    --gtest_list_tests) printf 'a.\n  one\n  two\nb.\n  crash_here\n  three\nc.\n  fail_me\n  four\n'; exit 0 ;;
    --gtest_filter=*) filter=${arg#--gtest_filter=} ;;
  esac
done
IFS=: read -ra want <<<"$filter"
echo "[==========] Running ${#want[@]} tests from 3 test suites."
failed=()
for t in "${order[@]}"; do
  printf '%s\n' "${want[@]}" | grep -qxF -- "$t" || continue
  echo "[ RUN      ] $t"
  case $t in
    *crash*) [ "${FAKE_CRASH:-1}" = 1 ] && kill -SEGV $$; echo "[       OK ] $t (1 ms)" ;;
    *fail*) [ "${FAKE_FAIL:-1}" = 1 ] && { echo "[  FAILED  ] $t (1 ms)"; failed+=("$t"); } ||
      echo "[       OK ] $t (1 ms)" ;;
    *) echo "[       OK ] $t (1 ms)" ;;
  esac
done
echo "[==========] ${#want[@]} tests from 3 test suites ran. (6 ms total)"
[ ${#failed[@]} -eq 0 ] && exit 0
echo "[  FAILED  ] ${#failed[@]} tests, listed below:"
exit 1
FAKE
# A compute-sanitizer that runs the program and prints the tool's summary.
cat >"$work/bin/compute-sanitizer" <<'FAKE'
#!/usr/bin/env bash
[ "${1:-}" = --version ] && { echo "Version 0.0 (fake)"; exit 0; }
tool=memcheck
while [ $# -gt 0 ] && [[ $1 == --* ]]; do
  [ "$1" = --tool ] && tool=$2
  shift 2
done
"$@"
rc=$?
case $tool in
  racecheck) echo "========= RACECHECK SUMMARY: ${FAKE_HAZARDS:-0} hazards displayed (${FAKE_HAZARDS:-0} errors, 0 warnings)" ;;
  memcheck) echo "========= LEAK SUMMARY: 0 bytes leaked in 0 allocations"; echo "========= ERROR SUMMARY: 0 errors" ;;
  *) echo "========= ERROR SUMMARY: 0 errors" ;;
esac
[ "${FAKE_HAZARDS:-0}" -gt 0 ] && exit 3
exit $rc
FAKE
printf '#!/bin/sh\necho "Fake GPU, 0.0"\n' >"$work/bin/nvidia-smi"
chmod +x "$work/bin/"* "$work/build/tests/resident_gpu_tests"
run() {  # run OUTDIR [ENV=VALUE...]: one shard of racecheck over the fake suite; prints its exit status
  local dir=$1
  shift
  env "$@" PATH="$work/bin:$PATH" BUILD_DIR="$work/build" OUT="$dir" \
    "$root/scripts/gpu-sanitize" --tool racecheck --shard 1/1 >/dev/null 2>"$dir.err"
  echo $?
}

# A death mid-shard: named, and every other test still gets its verdict in a second process.
rc=$(run "$work/died" FAKE_FAIL=0)
log="$work/died/sanitize-racecheck-1of1.log"
check "a death makes the shard exit 4 (got $rc)" test "$rc" = 4
check "the test it died in is named" grep -q "died (exit 139) in b.crash_here" "$log"
for t in a.one a.two b.three c.fail_me c.four; do
  check "$t ran after all" grep -qxF "[       OK ] $t (1 ms)" "$log"
done
check "two processes ran" test "$(grep -c '^\[==========\] Running' "$log")" = 2
check "the death is on the status line" grep -q "^rc=4 .*died in: b.crash_here (exit 139)" "$log"
check "summaries added over the processes" grep -q "^rc=4 .*RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings) no test failed" "$log"
index=$(python3 "$root/scripts/sanitize-index" "$work/died")
check "the index names the death" grep -qF '| racecheck | 1/1 | 6 | 5 | 0 | `b.crash_here` (139) |' <<<"$index"

# A failing test and no death: the tests' exit status, the failure counted.
rc=$(run "$work/failed" FAKE_CRASH=0)
log="$work/failed/sanitize-racecheck-1of1.log"
check "a failed test makes the shard exit 1 (got $rc)" test "$rc" = 1
check "one process" test "$(grep -c '^\[==========\] Running' "$log")" = 1
check "the failure is counted" grep -q "^rc=1 .* 1 tests failed$" "$log"

# A test that failed in a process that died later is counted (that process prints no list).
rc=$(run "$work/both" FAKE_ORDER="c.fail_me a.one b.crash_here a.two b.three c.four")
log="$work/both/sanitize-racecheck-1of1.log"
check "a death after a failure exits 4 (got $rc)" test "$rc" = 4
check "the earlier failure is counted" grep -q "^rc=4 .* 1 tests failed; died in: b.crash_here" "$log"
check "the index counts it" grep -qF '| racecheck | 1/1 | 6 | 4 | 1 | `b.crash_here` (139) |' \
  <(python3 "$root/scripts/sanitize-index" "$work/both")

# The tool's own error wins over a death.
rc=$(run "$work/hazard" FAKE_HAZARDS=2 FAKE_FAIL=0)
check "a tool error makes the shard exit 3 (got $rc)" test "$rc" = 3
check "hazards added over the processes" grep -q "RACECHECK SUMMARY: 4 hazards displayed (4 errors, 0 warnings)" "$work/hazard/sanitize-racecheck-1of1.log"

# Clean.
rc=$(run "$work/clean" FAKE_CRASH=0 FAKE_FAIL=0)
check "a clean shard exits 0 (got $rc)" test "$rc" = 0
check "the index shows no death" grep -qF '| racecheck | 1/1 | 6 | 6 | 0 | - |' <(python3 "$root/scripts/sanitize-index" "$work/clean")

# The whole sweep: a line per shard, the index and the logs' archive; exit 0 only when clean.
all() {  # all OUTDIR [ENV=VALUE...]: racecheck and memcheck over 2 shards; prints the exit status
  local dir=$1
  shift
  env "$@" PATH="$work/bin:$PATH" BUILD_DIR="$work/build" OUT="$dir" \
    "$root/scripts/gpu-sanitize" --all --tools racecheck,memcheck --shards 2 --timeout 30 \
    >"$dir.out" 2>"$dir.err"
  echo $?
}
rc=$(all "$work/sweep" FAKE_CRASH=0 FAKE_FAIL=0)
check "a clean sweep exits 0 (got $rc)" test "$rc" = 0
check "a line per shard" test "$(grep -c ' rc=0 ' "$work/sweep.out")" = 4
check "the index has a row per shard" test "$(grep -c '^| \(racecheck\|memcheck\) | [12]/2 ' "$work/sweep/index.md")" = 4
check "the logs are archived" test "$(tar -tJf "$work/sweep/sanitize-logs.tar.xz" | sort | tr '\n' ' ')" = \
  "sanitize-memcheck-1of2.log sanitize-memcheck-2of2.log sanitize-racecheck-1of2.log sanitize-racecheck-2of2.log "
rc=$(all "$work/sweep-bad" FAKE_CRASH=0)
check "a sweep with a failed test exits non-zero (got $rc)" test "$rc" != 0
check "it says how many shards were not clean" grep -q "2 of 4 shards not clean" "$work/sweep-bad.out"

[ $fails -eq 0 ] && echo "gpu_sanitize_test: all checks passed" || echo "gpu_sanitize_test: $fails failed"
exit $((fails > 0))
