# snapshot-at-exit.sh — sourced by the check-* launchers (check-thread-locations, check-request-pairs,
# tests/places/check-nbc): runs a traced job through compare-calls (the places hold exactly the calls
# the program counted) with a snapshot at exit into a temporary directory, removed when the script exits.
#
#   snapshot_at_exit CHECKER APP_RANKS LAUNCHER... -n R PROGRAM ARGS...
#
# Prints the job's output (also kept in $snapshot_dir/output.txt) and sets $snapshot_archive; exits 1,
# saying why, when the job fails compare-calls or leaves no archive.
snapshot_at_exit() {
  local checker=$1 app_ranks=$2 status
  shift 2
  snapshot_dir=$(mktemp -d "${TMPDIR:-/tmp}/$checker.XXXXXX")
  trap 'rm -rf "$snapshot_dir"' EXIT
  snapshot_archive=$snapshot_dir/$checker.otf2
  OTFX_SNAPSHOT_DIR=$snapshot_dir OTFX_SNAPSHOT_AT_EXIT=$checker \
    "$(dirname "${BASH_SOURCE[0]}")/compare-calls" --app-ranks "$app_ranks" "$@" >"$snapshot_dir/output.txt" 2>&1
  status=$?
  cat "$snapshot_dir/output.txt"
  [ "$status" -eq 0 ] || exit 1
  if [ ! -e "$snapshot_archive" ]; then
    echo "$checker: FAIL: no snapshot at exit ($snapshot_archive)"
    exit 1
  fi
}
