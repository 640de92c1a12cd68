# kvbench: `make test` proves every client correct against real servers it starts itself.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: test setup lint fmt bench bench-quick bench-smoke bench-plan cost schema reference reproduce

## Installs the servers (redis-server, memcached, redis-tools) if missing.
setup:
	@bash bench-suite/setup.sh

## The test build's features: the fault-injection hook (`KVBENCH_FAULT_STOP_SERVER`, inert unless
## set) for the whole-run fault test, in the one build every test step shares.
TEST_FEATURES := --features kvbench-bench-suite/fault-injection

## Formatting, lints, then every test (unit, decoder, private servers, conformance kit), then
## every (cell, client) pair of the bench matrix once, verification included.
test: setup lint
	@$(CARGO) run -q -p kvbench-servers --bin kvbench-servers-check
	$(CARGO) test --workspace $(TEST_FEATURES)
	$(MAKE) --no-print-directory bench-smoke

## The benchmark matrix. Settings (environment): PLACEMENT=same-core|split|none,
## CLIENTS=raw-tcp,fred  CELLS=get,unix  RUN_ID=name. Results: reports/<run-id>/.
## REPEAT=K runs each cell K times, interleaved, each time against freshly started servers, and
## records the run-to-run spread; REPEAT_CELLS=get/3B,pipeline_set/1000000 repeats only the cells
## whose id contains one of these (+ joins words that must all be there). ORDER_SEED=n replays a
## run's client order. CONCURRENCY=1,16,256,1024 sets the callers in flight of the concurrency
## cells (cell ids ending /c<C>; default 16,256 in bench, 256 in bench-quick). COUNT=0|1 turns
## the counted pass (instructions per operation under valgrind; on in bench, off in bench-quick)
## off or on.
## PLOTS=1 also draws criterion's own per-group charts (linked from the report): about twice
## as long, because plotting dominates on a 2-CPU machine; it builds criterion's plotting library
## (the bench suite's `plots` feature), which other runs leave out.
bench: setup
	MODE=full $(CARGO) bench -p kvbench-bench-suite --bench matrix $(if $(PLOTS),--features plots) -- $(if $(PLOTS),,--noplot)

bench-quick: setup
	MODE=quick $(CARGO) bench -p kvbench-bench-suite --bench matrix -- --noplot

## Only the counted pass: each client's instructions per operation under valgrind (callgrind),
## on every pair of the quick matrix's cells (MODE=full: every cell), each connected and
## verified on a fresh server first; nothing is timed. Minutes. Writes reports/<run-id>/ like any
## run (RUN_ID=name). A full `make bench` counts the same way after timing each cell.
cost: setup
	MODE=$(or $(MODE),quick) COUNT=only $(CARGO) bench -p kvbench-bench-suite --bench matrix -- --noplot

## What `make bench` would do (MODE=quick: `make bench-quick`), without starting a server: every
## visit of a cell, its contenders with their decisions (run, or why not), its reference and A/A
## twin, its rounds, and roughly how long it all takes. Takes the same settings as `bench`.
bench-plan:
	@MODE=$(or $(MODE),full) $(CARGO) run -q -p kvbench-bench-suite --bin kvbench-matrix -- --bench --list

## Every (cell, client) pair once, verification included, with the test build (no release
## build needed): criterion runs in test mode when started without --bench. The same workspace
## and features as `make test`'s build, so that it reuses that build rather than making another.
bench-smoke: setup
	$(CARGO) test --workspace $(TEST_FEATURES) --bench matrix

## Rewrites reports/results.schema.json from the result types (kvbench-results).
schema:
	KVBENCH_WRITE_SCHEMA=1 $(CARGO) test -q -p kvbench-results --test schema committed_schema_matches_the_types

## The committed reference run: the full matrix, its headline GET cells (Redis and memcached GET 3 B
## over TCP and Unix, one caller) twice, each time on fresh servers, so that the spread between
## runs is measured beside the paired intervals (the cells of 256 callers and of a million items
## are visited three times in any full run); then its split-placement twin.
## Measured with cubic, Linux's default TCP congestion control: with a pacing one (bbr), two
## connections of one client answer large values at different speeds (bench-suite/README.md).
reference:
	@cc=$$(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null); \
	if [ -n "$$cc" ] && [ "$$cc" != cubic ]; then \
	  echo "make reference: TCP congestion control is $$cc; the reference is measured with cubic:" \
	    "sysctl -w net.ipv4.tcp_congestion_control=cubic (as root)" >&2; exit 1; \
	fi
	RUN_ID=reference REPEAT=2 REPEAT_CELLS='get/3B/tcp$$,get/3B/unix$$' $(MAKE) --no-print-directory bench
	PLACEMENT=split RUN_ID=reference/split $(MAKE) --no-print-directory bench-quick

## Whether the paired ratios hold from run to run: the headline cells (Redis and memcached GET 3 B
## over TCP and Unix, pipelined SET of a million over TCP and Unix, GET 3 B with 256 callers over
## TCP) in RUNS separate `make bench` invocations (reports/reproduce/<n>: fresh servers and a fresh
## process each, no counted pass), then every contender's ratio to its cell's reference per run
## and max/min across them.
RUNS ?= 3
REPRODUCE_CELLS := redis/get/3B/tcp$$|memcached/get/3B/tcp$$|redis/get/3B/unix$$|memcached/get/3B/unix$$|pipeline_set/1000000/|get/3B/tcp/c256$$
reproduce: setup
	@for n in $$(seq 1 $(RUNS)); do \
	  RUN_ID=reproduce/$$n CELLS='$(REPRODUCE_CELLS)' COUNT=0 $(MAKE) --no-print-directory bench || exit 1; \
	done
	$(CARGO) run -q --release -p kvbench-report -- spread $(foreach n,$(shell seq 1 $(RUNS)),reports/reproduce/$(n))

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --all-features -- -D warnings

fmt:
	$(CARGO) fmt --all

# --- Reports (crates/report; see reports/README.md) -------------------------------------------
.PHONY: report compare test-report lessons tour

## Run id for `report` and `test-report`: a folder under reports/ (default: the latest run).
RUN ?= latest

## Renders reports/$(RUN)/index.html and summary.md from its results.json.
report:
	$(CARGO) run -q --release -p kvbench-report -- render reports/$(RUN)

## Prints per-row ratios B/A (ops/s), noise marked, and writes reports/$(B)/compare-<A-id>.html.
compare:
	@if [ -z "$(A)" ] || [ -z "$(B)" ]; then echo "usage: make compare A=<run-id> B=<run-id>" >&2; exit 2; fi
	$(CARGO) run -q --release -p kvbench-report -- compare reports/$(A) reports/$(B)

## Rewrites every measured number in the docs from reports/$(RUN)/results.json (RUN defaults to
## `reference` here): the generated blocks of docs/lessons.md, of each client crate's README and of
## README.md, then reports/$(RUN)/lessons.md and index.html. SPLIT_RUN=<id> names the
## split-placement run lesson 9 compares with (default: reports/$(RUN)/split/ if present).
lessons: tour
	$(CARGO) run -q --release -p kvbench-report -- lessons \
	  reports/$(if $(filter command line environment,$(origin RUN)),$(RUN),reference) \
	  $(if $(SPLIT_RUN),--split reports/$(SPLIT_RUN))

## Rewrites the code links of docs/tour.md (its last block) from the `// ANCHOR:` markers: the
## tour names an anchor (`[text][anchor]`), the block gives its current file and lines.
tour:
	$(CARGO) run -q --release -p kvbench-report -- tour

## Renders reports/$(RUN) and opens it in headless Chromium (installed if missing): fails on a
## console error, a missing chart or a dead link; saves reports/$(RUN)/screenshot.png.
test-report:
	CARGO=$(CARGO) bash crates/report/browser-test.sh reports/$(RUN)

# --- Fuzzing (see crates/resp/FUZZING.md) ---------------------------------------------------------
.PHONY: fuzz

## Seconds each cargo-fuzz target runs, and cases each property test runs, in `make fuzz`.
FUZZ_SECONDS ?= 60
FUZZ_CASES ?= 1000000
# cargo-fuzz needs nightly compiler flags: the nightly toolchain if rustup has one, else the
# stable compiler with RUSTC_BOOTSTRAP=1 (unsupported by the Rust project; works for this).
FUZZ_CARGO := $(shell rustup toolchain list 2>/dev/null | grep -q '^nightly' && echo 'cargo +nightly' || echo 'RUSTC_BOOTSTRAP=1 cargo')

## Coverage-guided fuzzing (cargo-fuzz, libFuzzer, AddressSanitizer) of the RESP decoder, the
## memcached reply reader and the hand-written clients' reply handling, FUZZ_SECONDS per target;
## then the decoders' property tests at FUZZ_CASES cases each (release build).
fuzz:
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	@for pair in resp:decode resp:client_replies memcached-reply:decode memcached-text:client_replies; do \
	  dir=crates/$${pair%%:*}/fuzz; target=$${pair#*:}; \
	  echo "== cargo fuzz: $$dir $$target, $(FUZZ_SECONDS) s"; \
	  $(FUZZ_CARGO) fuzz run --fuzz-dir $$dir --target-dir target/fuzz $$target -- \
	    -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 || exit 1; \
	done
	KVBENCH_FUZZ_CASES=$(FUZZ_CASES) $(CARGO) test --release -p kvbench-resp --lib
	KVBENCH_FUZZ_CASES=$(FUZZ_CASES) $(CARGO) test --release -p kvbench-memcached-reply --test reply
	KVBENCH_FUZZ_CASES=$(FUZZ_CASES) $(CARGO) test --release -p kvbench-memcached-text --test scripted
