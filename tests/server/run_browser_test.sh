#!/bin/bash
# make test's browser test: starts ./run --server ($HEARTH_BIN_DIR/run when set) with the default
# model on a free loopback port, runs browser_test.mjs against it, and stops the server with
# SIGTERM, which must end it with exit code 0. Prints the browser test's lines and ends with
# "N passed, N failed"; the exit code is the browser test's (77: chromium or chromedriver is
# missing, the test could not run), or 1 when the server did not start or stop cleanly.
set -u
cd "$(dirname "$0")/../.."
bin=${HEARTH_BIN_DIR:-.}
mkdir -p build/tests
log=build/tests/browser-server.log
port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
"$bin/run" models/tiny-shakespeare.hearth --server --port "$port" -np 2 -c 8192 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
up=0
for _ in $(seq 200); do
    if node -e "fetch('http://127.0.0.1:$port/health').then(r=>process.exit(r.status===200?0:1),()=>process.exit(1))"; then up=1; break; fi
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
done
if [ $up = 0 ]; then
    echo "FAIL - the server did not start:"; cat "$log"; echo "0 passed, 1 failed"; exit 1
fi
node tests/server/browser_test.mjs --url "http://127.0.0.1:$port" | tee build/tests/browser-test.out
rc=${PIPESTATUS[0]}
kill -TERM $pid
wait $pid
server_rc=$?
trap - EXIT
if [ $rc -ne 77 ] && [ $server_rc -ne 0 ]; then
    echo "FAIL - the server exited with $server_rc after SIGTERM (log: $log)"
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' build/tests/browser-test.out | tail -n 1)
    echo "${summary%% *} passed, $(( $(echo "$summary" | sed -nE 's/.* ([0-9]+) failed/\1/p') + 1 )) failed"
    exit 1
fi
exit $rc
