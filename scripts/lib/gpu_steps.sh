# The GPU scripts' step table (sourced by gpu-model-bench.sh and gpu-decoder-bench.sh): each step
# a line in "$out/steps.txt" as it ends, so a device call cut short still brings back the steps
# before it; the table and the summary printed last. Needs $out (an existing folder) and $start
# (date +%s); sets failed=1 on any step that is not ok.
failed=0
elapsed() { echo $(( $(date +%s) - $1 )); }
step() { printf '%-44s %-5s %5s s  %s\n' "$1" "$2" "$3" "$4" | tee -a "$out/steps.txt"; [[ $2 == ok ]] || failed=1; }
# The steps, the total and the GPU ("$out/gpu.txt"), then "$out/summary.txt"; exits with failed.
ember_steps_finish() {
  echo
  cat "$out/steps.txt"
  echo "total $(elapsed "$start") s; $(cat "$out/gpu.txt")"
  echo
  cat "$out/summary.txt"
  exit "$failed"
}
