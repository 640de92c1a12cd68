#!/usr/bin/env bash
# Browser test of a run's report (`make test-report RUN=<id>`; default run: latest).
#
#   bash crates/report/browser-test.sh reports/<run-id>
#
# 1. Renders <run-dir>/index.html from its results.json (kvbench-report render).
# 2. Static checks (kvbench-report check): a chart per cell of results.json, a depth chart per
#    pipelining client, every href/src resolves to a file inside the run folder (criterion's
#    own pages included), no network resource, well-formed HTML.
# 3. Opens the page from disk in headless Chromium (Debian's `chromium`, installed by
#    bench-suite/setup.sh when missing) and dumps the DOM after load. Fails on any console
#    message or uncaught error Chromium logs, and unless the page's own self-check (inline script
#    from crates/report/templates/selfcheck.js: every chart's SVG laid out with the bars it should
#    have, no table cell narrower than 3em, no script error, no failed load, no console.error)
#    wrote data-status="ok".
# 4. Saves a screenshot as <run-dir>/screenshot.png.
#
# Why a script and not a Rust test: it needs Chromium, which `make test` does not install; a
# test that skipped itself without it would pass while testing nothing.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 <run-dir>" >&2
    exit 2
fi
run_dir=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cargo=${CARGO:-cargo}
timeout_s=${KVBENCH_BROWSER_TIMEOUT:-30}

if [ ! -f "$run_dir/results.json" ]; then
    echo "test-report: $run_dir/results.json not found (run \`make bench-quick\` first, or pass RUN=<id>)" >&2
    exit 1
fi

if ! command -v chromium >/dev/null 2>&1; then
    bash "$root/bench-suite/setup.sh" chromium
fi

# The test build's binary (`make test` has built it): rendering one run takes well under a second
# unoptimised, less than a release build of the renderer would.
report() {
    (cd "$root" && "$cargo" run -q -p kvbench-report -- "$@")
}
report render "$run_dir"
report check "$run_dir"

page="file://$(realpath "$run_dir")/index.html"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# No GPU, no sandbox (root in a container), and nothing that reaches the network on its own.
browser() {
    local profile
    profile=$(mktemp -d -p "$scratch" profile.XXXXXX)
    timeout "$timeout_s" chromium \
        --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" "$@"
}

# The dump is taken after the load event, when the self-check has run.
if ! browser --enable-logging=stderr --v=0 --dump-dom "$page" >"$scratch/dom.html" 2>"$scratch/log.txt"; then
    echo "test-report: chromium failed to load $page" >&2
    tail -n 20 "$scratch/log.txt" >&2
    exit 1
fi

status=0
# Chromium logs every console message of the page as ...:CONSOLE(line)] "text", source: ...
# The page writes none on purpose, so any is a failure.
if grep -E ':CONSOLE(\([0-9]+\)|:[0-9]+)\]' "$scratch/log.txt" >"$scratch/console.txt"; then
    echo "test-report: console messages:" >&2
    cat "$scratch/console.txt" >&2
    status=1
fi
selfcheck=$(grep -o '<output id="selfcheck"[^>]*>[^<]*</output>' "$scratch/dom.html" || true)
if [ -z "$selfcheck" ]; then
    echo "test-report: the page has no self-check element" >&2
    status=1
elif [[ $selfcheck != *'data-status="ok"'* ]]; then
    echo "test-report: $selfcheck" >&2
    status=1
fi

browser --hide-scrollbars --window-size=1400,3000 --screenshot="$(realpath "$run_dir")/screenshot.png" \
    "$page" >/dev/null 2>"$scratch/shot.txt" || {
    echo "test-report: screenshot failed" >&2
    tail -n 20 "$scratch/shot.txt" >&2
    status=1
}

if [ $status -eq 0 ]; then
    echo "test-report: ok: ${selfcheck#*>}" | sed 's#</output>##'
    echo "test-report: screenshot: $run_dir/screenshot.png"
fi
exit $status
