#!/bin/bash
# Runs each loop_probe shape in its own process with a timeout (a shape that never ends is
# reported as HUNG and cannot stall the rest).   run_loop_probe.sh PROBE_BINARY [iterations]
set -u
PROBE=${1:?usage: run_loop_probe.sh PROBE_BINARY [iterations]}
N=${2:-20000}
shapes=("spin" "spin+pcie" "W{h}" "W{h+pcie}" "W{h->m}" "W{h->m->m}"
  "W{h->m->IF0{b->t}}" "W{h->m->IF1{b->t}}" "W{hm->IF0{b->t}}" "W{hm->IF1{b->t}}"
  "W{h->m->IF0} nodef" "W{h->m->IF1} nodef"
  "W{W{h->m}->b->t} k=1000000" "W{W{h->m}->b->t} k=4" "W{W{h->m}->b->t} k=1"
  "T{h} self" "T{h->m} self" "T{h+pcie} self" "W{h->m+fence}" "W{h=>m} pdl")
for rep in 1 2; do
  for s in "${shapes[@]}"; do
    timeout 20 "$PROBE" "$N" "$s" 2>&1 | grep -v warm-up || echo "$s: exit $?"
  done
done
