#!/bin/bash
# otfxctl against the real server with canned answers (otfx-fake-root): output, --json, exit codes.
# usage: otfxctl_test.sh OTFXCTL FAKE_ROOT
set -u
otfxctl=$1
fake_root=$2
work=$(mktemp -d /tmp/otfx-otfxctl-test-XXXXXX)
root_pid=
failures=0
cleanup() {
    if [ -n "$root_pid" ]; then
        kill "$root_pid" 2>/dev/null
        wait "$root_pid" 2>/dev/null
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# check NAME EXPECTED_EXIT REGEX -- COMMAND...: runs it, compares exit code, greps stdout+stderr.
check() {
    local name=$1 expected=$2 regex=$3
    shift 4
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" != "$expected" ]; then
        echo "FAIL $name: exit $rc, expected $expected"
        echo "$out" | sed 's/^/    /'
        failures=$((failures + 1))
    elif [ -n "$regex" ] && ! grep -Eq -- "$regex" <<<"$out"; then
        echo "FAIL $name: output does not match /$regex/"
        echo "$out" | sed 's/^/    /'
        failures=$((failures + 1))
    else
        echo "ok   $name"
    fi
}

mkdir "$work/empty" "$work/job"

# ---- before any job: local errors -------------------------------------------------------------------
export OTFX_SESSION_DIR=$work/empty
check "help" 0 "exit codes" -- "$otfxctl" --help
check "no command" 2 "no command given" -- "$otfxctl"
check "no session file" 3 "no session file .* in $work/empty" -- "$otfxctl" status
check "unknown command (checked before connecting)" 2 "unknown command 'frobnicate'" -- "$otfxctl" frobnicate
check "bad option value" 2 "bad --bins '0'" -- "$otfxctl" timeline --bins 0
check "bad duration" 2 "record window needs a duration" -- "$otfxctl" record window 2h
check "bad --timeout" 2 "bad --timeout" -- "$otfxctl" --timeout soon status
check "unknown option" 2 "unknown option --frob" -- "$otfxctl" --frob status
check "--connect without token" 2 "needs --token-file" -- "$otfxctl" --connect 127.0.0.1:1 status
check "bad watch option" 2 "watch takes" -- "$otfxctl" watch --often
check "--connect port out of range" 2 "port must be 1 to 65535" -- \
    "$otfxctl" --connect 127.0.0.1:99999 --token-file /dev/null status
check "--connect port 0" 2 "port must be 1 to 65535" -- "$otfxctl" --connect 127.0.0.1:0 --token-file /dev/null status

# ---- a job -----------------------------------------------------------------------------------------
"$fake_root" "$work/job" test-job 2>"$work/root.log" &
root_pid=$!
for _ in $(seq 100); do
    [ -e "$work/job/otfx-session-test-job.txt" ] && break
    sleep 0.05
done
session=$work/job/otfx-session-test-job.txt
[ -e "$session" ] || { echo "FAIL: the fake root wrote no session file"; cat "$work/root.log"; exit 1; }
check "session file mode 0600" 0 "^600$" -- stat -c %a "$session"
# an older, stale session file next to it is not the newest: the live one is found
sed 's/port=[0-9]*/port=1/' "$session" >"$work/job/otfx-session-old.txt"
chmod 600 "$work/job/otfx-session-old.txt"
touch -d '2000-01-01' "$work/job/otfx-session-old.txt"

export OTFX_SESSION_DIR=$work/job
check "status" 0 "^place \(2\)" -- "$otfxctl" status
check "status summary line (wrapped)" 0 "^     buffer_budget=128.0MiB  fill=25.0%  recording=on  app_state=running$" -- "$otfxctl" status
check "status humanized bytes and times" 0 " 16.0MiB .* 64.0MiB .* 1.500ms  a \"quoted\" name\\\\twith tab$" -- "$otfxctl" status
check "no partial by default" 0 "^summary  places=2  places_answered=2" -- "$otfxctl" status
check "partial with --partial" 0 "places_answered=1" -- "$otfxctl" --partial status
check "profile" 0 "MPI_Send .* 2.500us" -- "$otfxctl" profile --ranks 0-3
check "critical-path: functions with shares" 0 "^  late_compute +900.000ms +60.0% +1.200s +30.0%" -- "$otfxctl" critical-path
check "critical-path: the --zero function" 0 "zero=serial_setup .*zeroed_ns=1.000s" -- \
    bash -o pipefail -c "'$otfxctl' critical-path --zero serial_setup --top 3 | tr '\n' ' '"
check "critical-path: segments" 0 "^cp-segment \(2\)" -- "$otfxctl" critical-path
check "critical-path --json" 0 '^\{"record":"cp-function","name":"serial_setup","cp_ns":500000000,"cp_share":0.3333' -- \
    "$otfxctl" --json critical-path
check "critical-path: bad --top" 2 "bad --top '0'" -- "$otfxctl" critical-path --top 0
check "wait-states: per function" 0 "^  MPI_Bcast +late-broadcast +800.000ms +3 +40.0%$" -- "$otfxctl" wait-states
check "wait-states: who made me wait" 0 "^ws-pair \(2\)" -- "$otfxctl" wait-states --limit 5
check "wait-states --json" 0 '^\{"record":"ws-pair","waiting":1,"causing":3,"wait_ns":400000000' -- \
    "$otfxctl" --json wait-states
check "wait-states does not take --zero" 2 "wait-states does not take --zero" -- "$otfxctl" wait-states --zero f
check "command sent in canonical form" 0 "line=snapshot my%20run --from 1000000000ns --overwrite" -- \
    "$otfxctl" snapshot "my run" --from 1s --overwrite
check "--opt=value" 0 "line=timeline --bins 5" -- "$otfxctl" timeline --bins=5
check "every steering command" 0 "command=record window" -- "$otfxctl" record window 250ms
check "server error exits 1" 1 "canned failure \(failed\)" -- "$otfxctl" reduction stop
check "--session" 0 "^place \(2\)" -- env OTFX_SESSION_DIR=$work/empty "$otfxctl" --session "$session" status
check "--connect + --token-file (session file)" 0 "^place \(2\)" -- env OTFX_SESSION_DIR=$work/empty \
    "$otfxctl" --connect "127.0.0.1:$(sed 's/.* port=\([0-9]*\).*/\1/' "$session")" --token-file "$session" status
sed 's/.* token=\([0-9a-f]*\).*/\1/' "$session" >"$work/token"
check "--connect + --token-file (bare token)" 0 "^place \(2\)" -- env OTFX_SESSION_DIR=$work/empty \
    "$otfxctl" --connect "127.0.0.1:$(sed 's/.* port=\([0-9]*\).*/\1/' "$session")" --token-file "$work/token" status

# plain output names every place's reason for a failed command, as --json does
check "failed snapshot: reasons in plain output" 1 "place 0: canned reason one.*place 1: canned reason two" -- \
    bash -o pipefail -c "'$otfxctl' snapshot fail 2>&1 | tr '\n' ' '"
check "failed snapshot: the places' table" 1 "^ +1  snapshot   0  canned reason two$" -- "$otfxctl" snapshot fail
check "failed load-module: reasons in plain output" 1 "load-module failed on 2 of 2 places .*place 1: canned reason two" -- \
    bash -o pipefail -c "'$otfxctl' load-module fail 2>&1 | tr '\n' ' '"

# session files that are not the user's own and private are ignored, and otfxctl says why: a newer file
# of another owner (or one others may write) would otherwise lead it to another server
mkdir "$work/shared"
sed 's/port=[0-9]*/port=2/' "$session" >"$work/shared/otfx-session-other.txt"
chmod 600 "$work/shared/otfx-session-other.txt"
chown 65534 "$work/shared/otfx-session-other.txt"
sed 's/port=[0-9]*/port=3/' "$session" >"$work/shared/otfx-session-open.txt"
chmod 644 "$work/shared/otfx-session-open.txt"
cp -p "$session" "$work/shared/otfx-session-mine.txt"
touch -d '2000-01-01' "$work/shared/otfx-session-mine.txt"
check "another owner's session file ignored" 0 "ignoring the session file .*otfx-session-other.txt: owned by uid 65534, not by you" -- \
    env OTFX_SESSION_DIR=$work/shared "$otfxctl" status
check "a mode 0644 session file ignored" 0 "ignoring the session file .*otfx-session-open.txt: mode 0644, not 0600" -- \
    env OTFX_SESSION_DIR=$work/shared "$otfxctl" status
check "the user's own file is used" 0 "^place \(2\)" -- env OTFX_SESSION_DIR=$work/shared "$otfxctl" status
check "--session of another owner refused" 3 "not using the session file .*owned by uid 65534" -- \
    "$otfxctl" --session "$work/shared/otfx-session-other.txt" status
check "--session mode 0644 refused" 3 "not using the session file .*mode 0644" -- \
    "$otfxctl" --session "$work/shared/otfx-session-open.txt" status
rm "$work/shared/otfx-session-mine.txt"
check "only untrusted files: none found" 3 "no session file" -- env OTFX_SESSION_DIR=$work/shared "$otfxctl" status

# --json: one JSON object per line, numbers as numbers
"$otfxctl" --json status >"$work/status.json" 2>&1
json_rc=$?
check "--json exit" 0 "" -- test "$json_rc" = 0
check "--json is JSON lines" 0 "^3$" -- /usr/bin/python3 -c '
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
assert records[0]["record"] == "summary" and records[0]["places"] == 2 and records[0]["fill"] == 0.25, records[0]
assert records[2]["note"] == "a \"quoted\" name\twith tab", records[2]
assert records[1]["strategy"] == "ring"
print(len(records))' "$work/status.json"
check "--json error line" 1 '^\{"record":"error","code":"failed","message":"canned failure"\}' -- "$otfxctl" --json reduction stop

# wrong token, stale session, timeout
sed 's/token=[0-9a-f]*/token=0123456789abcdef0123456789abcdef/' "$session" >"$work/wrong-token.txt"
chmod 600 "$work/wrong-token.txt"
check "wrong token exits 5" 5 "refused the token" -- "$otfxctl" --session "$work/wrong-token.txt" status
check "job gone exits 4" 4 "cannot connect to 127.0.0.1:1 .*refused" -- "$otfxctl" --session "$work/job/otfx-session-old.txt" status
check "watch" 0 "application running, recording on, 123456 events/s, buffers 32.0MiB of 128.0MiB \(25.0%\), places 2/2 answered .*place \(2\) .*application running" -- bash -c "'$otfxctl' watch --interval 0.1 --count 2 | tr '\n' ' '"
check "watch --json" 0 "^2$" -- bash -c "'$otfxctl' --json watch --interval 0.1 --count 2 | grep -c '\"record\":\"summary\"'"
check "timeout exits 4" 4 "did not send an answer in time" -- "$otfxctl" --timeout 0.5 events

# the job ends: a waiting client hears it; the session file is gone afterwards
"$otfxctl" watch --interval 0.2 >"$work/watch.out" 2>&1 &
watch_pid=$!
sleep 4 # the fake root is still busy with the timed-out events query for up to 3 s
kill "$root_pid"
wait "$root_pid"
root_pid=
wait "$watch_pid"
watch_rc=$?
check "watch ends with the job" 0 "rc=0 .*the job ended" -- bash -c "(echo rc=$watch_rc; cat '$work/watch.out') | tr '\n' ' '"
check "session file removed" 1 "" -- test -e "$session"

if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all otfxctl checks passed"
