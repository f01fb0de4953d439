#!/bin/sh
# Runs both server tests against the mock server (mock_server.mjs), for developing the
# chat page and the tests without a model. The real runs are against ./run --server.
# Usage: tests/server/check_with_mock.sh [--api-key KEY]
set -e
cd "$(dirname "$0")"
out=$(mktemp)
node mock_server.mjs --port 0 "$@" >"$out" 2>&1 &
mock=$!
trap 'kill $mock 2>/dev/null; rm -f "$out"' EXIT
for _ in 1 2 3 4 5 6 7 8 9 10; do grep -q listening "$out" && break; sleep 0.2; done
url=$(sed -n 's/^listening on //p' "$out")
[ -n "$url" ] || { echo "the mock server did not start:"; cat "$out"; exit 1; }
status=0
node sse_parser_test.mjs || status=1
node openai_client_test.mjs --url "$url" "$@" || status=1
node browser_test.mjs --url "$url" "$@" || status=$?
exit $status
