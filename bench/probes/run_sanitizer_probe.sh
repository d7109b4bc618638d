#!/bin/bash
# Every case of the sanitizer probe under synccheck and racecheck, one line each: the tool's
# first report (or its clean summary) and the probe's own verdict on its outputs.
#   [TOOLS='racecheck'] [KERNELS='post even busy'] [PLACES='spin mapped'] run_sanitizer_probe.sh PROBE
set -u
PROBE=${1:?usage: run_sanitizer_probe.sh PROBE_BINARY}
command -v compute-sanitizer > /dev/null || { echo "compute-sanitizer is not on PATH"; exit 1; }
for tool in ${TOOLS:-synccheck racecheck}; do
  for kernel in ${KERNELS:-post even}; do
    for barrier in sync bar; do
      for place in ${PLACES:-stream graph if while spin mapped}; do
        out=$(timeout 60 compute-sanitizer --tool "$tool" --print-limit 1 "$PROBE" "$kernel" \
          "$barrier" "$place" 2>&1)
        # The probe's own last line: its verdict on the outputs, or the CUDA call that failed.
        verdict=$(grep -v "^=========" <<< "$out" | grep -v "^$" | tail -1)
        report=$(grep -E "Barrier error|Race reported|ERROR SUMMARY|RACECHECK SUMMARY" <<< "$out" |
          head -1 | sed 's/^========= *//')
        echo "$tool $kernel $barrier $place: ${report:-no summary} | ${verdict:-no verdict}"
      done
    done
  done
done
