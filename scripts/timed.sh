# Sourced by the GPU scripts: `timed LOG CMD...` runs CMD with its output appended to LOG,
# then appends its exit code and wall time to LOG and prints that line.
timed() {
  local log="$1"; shift
  local started=$SECONDS
  "$@" >> "$log" 2>&1
  echo "exit $? after $((SECONDS - started)) s: $*" >> "$log"
  tail -n 1 "$log"
}
