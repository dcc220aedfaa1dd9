#!/bin/sh
# The viewer against gui-fake-root: run_fake_session.sh FAKE_ROOT OTFX_GUI SCRIPT REPLIES WORKDIR
# Starts the fake root, runs `otfx-gui --script`, stops the fake root (SIGTERM: "job ended") once the
# script wrote ready.png, and checks the script passed and its screenshots exist.
set -u
fake_root=$1 gui=$2 script=$3 replies=$4 work=$5
rm -rf "$work" && mkdir -p "$work" || exit 1
cd "$work" || exit 1
"$fake_root" "$work" "$replies" > fake-root.log 2>&1 &
root=$!
i=0
while ! ls "$work"/otfx-session-*.txt > /dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 100 ]; then
        echo "FAIL: the fake root wrote no session file"; cat fake-root.log; kill "$root"; exit 1
    fi
    sleep 0.1
done
# --connect ADDR:PORT --token-file F (F: the session file, then a file holding only the token)
session=$(ls "$work"/otfx-session-*.txt)
address=$(sed -n 's/.* address=\([^ ]*\).*/\1/p' "$session")
port=$(sed -n 's/.* port=\([0-9]*\).*/\1/p' "$session")
sed -n 's/.* token=\([0-9a-f]*\).*/\1/p' "$session" > token.txt
printf 'timeout 10\nwait-connected\nwait status_replies >= 1\nassert job == gui-fake\n' > connect.script
for token_file in "$session" token.txt; do
    if ! "$gui" --connect "$address:$port" --token-file "$token_file" --script connect.script > connect.log 2>&1; then
        cat connect.log; echo "FAIL: otfx-gui --connect $address:$port --token-file $token_file"; kill "$root"; exit 1
    fi
done
"$gui" --connect "$address" --token-file token.txt > usage.log 2>&1
[ $? -eq 2 ] || { cat usage.log; echo "FAIL: a bad --connect is not a usage error"; kill "$root"; exit 1; }
echo "ok: --connect with a session file and with a token file; a bad address is refused"

OTFX_SESSION_DIR="$work" "$gui" --script "$script" > gui.log 2>&1 &
viewer=$!
i=0
while [ ! -s "$work/ready.png" ] && kill -0 "$viewer" 2> /dev/null; do
    i=$((i + 1))
    [ $i -gt 900 ] && break
    sleep 0.1
done
kill -TERM "$root"
wait "$root"
wait "$viewer"
status=$?
cat gui.log
[ $status -eq 0 ] || { echo "FAIL: otfx-gui --script exited with $status"; exit 1; }
for png in fake-session.png job-ended.png; do
    [ -s "$png" ] || { echo "FAIL: no screenshot $png"; exit 1; }
done
echo "PASS: screenshots in $work"
