# remote_segments: a DuckDB table function written in Go.
#
#   make            build build/release/remote_segments.duckdb_extension (C API v1.2.0,
#                   DuckDB 1.4-2.0) and its DuckDB 2.0 edition
#                   build/release/v2.0.0/remote_segments.duckdb_extension (V2 C API)
#   make demo       build, write a sample dataset, query it in the DuckDB CLI (2.0 edition)
#   make repository build/repository/: a signed DuckDB extension repository (INSTALL ... FROM)
#                   for linux_amd64 and linux_arm64 (cross-built)
#   make test-arm64 the SQL suite on DuckDB 2.0 for arm64 under qemu-user, and INSTALL from the repository
#   make test       every test: Go (with -race), SQL tests in five DuckDB hosts (the CLI twice: both files)
#   make bench      benchmarks (ratios against references measured in the same run)
#   make fuzz       every Go fuzz target for FUZZTIME (default 5m) each; results in test/RELIABILITY.md
#   make debug      build build/debug/remote_segments.duckdb_extension
#   make duckdb     provision the Debian DuckDB CLI into .tools/
#   make dask       provision Dask (Debian's python3-distributed) into .tools/
#   make dask-demo  shards of the demo data on versitygw as Dask tasks, a worker killed mid-run
#   make clean      remove build/ (keeps .tools/)
#
# Everything installed goes into git-ignored .tools/ and build/; every install
# step is idempotent.

SHELL := /bin/bash
.DEFAULT_GOAL := release

EXT      := build/release/remote_segments.duckdb_extension
EXT_V2   := build/release/v2.0.0/remote_segments.duckdb_extension
EXT_DBG  := build/debug/remote_segments.duckdb_extension
EXT_PROF := build/profile/remote_segments.duckdb_extension
DUCKDB   := .tools/bin/duckdb
VERSITYGW := .tools/bin/versitygw
VERSITYGW_VERSION := v1.8.0
HOST     := build/host/duckdb_host
HOST14   := build/host/duckdb_host_1.4.4
GOHOST   := build/host/gohost
DEMO_DATA := build/demo-data
GO_SOURCES := $(shell find . -path ./.tools -prune -o -path ./build -prune -o \( -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.map' \) -print) go.mod go.sum

.PHONY: release debug profile demo test test-go test-sql bench duckdb versitygw headers host clean tools dask dask-demo
.PHONY: repository arm64 test-arm64 test-install

release: $(EXT) $(EXT_V2)
debug: $(EXT_DBG)
profile: $(EXT_PROF)

# One build writes both files.
$(EXT) $(EXT_V2) &: $(GO_SOURCES) tools/build-extension.sh tools/fetch-duckdb-v2-headers.sh
	tools/build-extension.sh release

$(EXT_DBG): $(GO_SOURCES) tools/build-extension.sh
	tools/build-extension.sh debug

$(EXT_PROF): $(GO_SOURCES) tools/build-extension.sh
	tools/build-extension.sh profile

# linux_arm64: both files cross-built by Go's cgo with Debian's cross C
# compiler; it, qemu-user and DuckDB 2.0 for arm64 are unpacked into .tools/
# (tools/install-arm64.sh).
EXT_ARM64    := build/release/linux_arm64/remote_segments.duckdb_extension
EXT_ARM64_V2 := build/release/linux_arm64/v2.0.0/remote_segments.duckdb_extension
DUCKDB_ARM64 := .tools/bin/duckdb-arm64

arm64:
	tools/install-arm64.sh

$(EXT_ARM64) $(EXT_ARM64_V2) &: $(GO_SOURCES) tools/build-extension.sh tools/fetch-duckdb-v2-headers.sh tools/install-arm64.sh
	tools/install-arm64.sh
	tools/build-extension.sh release linux_arm64

# The DuckDB versions whose directory in the repository serves the portable
# file (C API v1.2.0): DuckDB looks only in the directory of its own version.
# Under v2.0.0 the 2.0 edition replaces it (REPOSITORY_V2_VERSIONS): it is
# built for exactly that engine and has what the portable file cannot (see
# the README's Install section).
REPOSITORY_DUCKDB_VERSIONS := v1.4.0 v1.4.1 v1.4.2 v1.4.3 v1.4.4 v1.5.0 v1.5.1 v1.5.2 v1.5.3 v1.5.4 v1.5.5 v1.5.6 v2.0.0
REPOSITORY_V2_VERSIONS := v2.0.0
REPOSITORY := build/repository
# The signing key: made by the first `make repository`, never committed (build/
# is ignored). Publish with a key of your own: REPOSITORY_KEY=/path/key.pem.
REPOSITORY_KEY ?= build/repository-key.pem
REPOSITORY_ARGS = -versions "$(REPOSITORY_DUCKDB_VERSIONS)" -v2-versions "$(REPOSITORY_V2_VERSIONS)" \
	-ext linux_amd64=$(EXT) -ext-v2 linux_amd64=$(EXT_V2) \
	-ext linux_arm64=$(EXT_ARM64) -ext-v2 linux_arm64=$(EXT_ARM64_V2)

repository: $(EXT) $(EXT_V2) $(EXT_ARM64) $(EXT_ARM64_V2)
	go run ./extension/repository -out $(REPOSITORY) -key $(REPOSITORY_KEY) $(REPOSITORY_ARGS)

headers:
	tools/fetch-duckdb-headers.sh
	tools/fetch-duckdb-v2-headers.sh

# The V2 C API types written for the 2.0 edition (cabi/duckdb_v2_types.h),
# checked against the 2.0 CLI's own libduckdb.
DUCKDB_LIB := .tools/duckdb/root/usr/lib/x86_64-linux-gnu
V2CHECK := build/v2check
$(V2CHECK): test/v2check/v2check.c cabi/duckdb_v2_types.h build/include-v2/duckdb_ext_api_v2.h
	$(CC) -O1 -Wall -Werror -Icabi -Ibuild/include-v2 -o $@ test/v2check/v2check.c -ldl
build/include-v2/duckdb_ext_api_v2.h:
	tools/fetch-duckdb-v2-headers.sh

duckdb:
	tools/install-duckdb-cli.sh

# A go-installed versitygw does not know its version: a stamp file does.
versitygw:
	@if [ -x $(VERSITYGW) ] && [ "$$(cat $(VERSITYGW).version 2>/dev/null)" = "$(VERSITYGW_VERSION)" ]; then \
		echo "versitygw $(VERSITYGW_VERSION) present: $(VERSITYGW)"; \
	else \
		echo "installing versitygw $(VERSITYGW_VERSION) into .tools/bin"; \
		GOBIN=$(CURDIR)/.tools/bin go install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION) && \
		echo $(VERSITYGW_VERSION) > $(VERSITYGW).version; \
	fi

host:
	tools/build-host.sh
	tools/build-host.sh 1.4.4

# The Go-driver host of the SQL tests (database/sql + remotesql), built with the
# race detector: it runs the scans on DuckDB's threads inside a Go program.
$(GOHOST): $(GO_SOURCES)
	go build -race -o $(GOHOST) ./test/host/gohost

# Debian's python3-distributed and its missing dependencies, downloaded by apt
# (--download-only, no system install) and unpacked into .tools/dask/. When
# that fails (no apt, no network), make test goes on and the Dask test
# (examples/dask) prints why it skips.
dask:
	@tools/install-dask.sh || echo "make dask: Dask could not be provisioned (above): the Dask test will skip"

tools: duckdb versitygw host dask

# examples/dask: versitygw with the demo data, a Dask scheduler and two
# workers on 127.0.0.1, one task per shard (DuckDB CLI + the extension on
# each), one worker SIGKILLed mid-scan; the answer is checked against the
# generator's expected.csv.
dask-demo: release duckdb versitygw
	@tools/install-dask.sh
	go run ./examples/dask -shards 3

# The 2.0 CLI loads the 2.0 edition (progress bar, settings, pruning, partitions).
demo: release duckdb
	go run ./test/cmd/datagen -out $(DEMO_DATA)
	@echo
	@echo "-- DuckDB CLI $$($(DUCKDB) -version), extension $(EXT_V2)"
	$(DUCKDB) -unsigned -c "LOAD '$(EXT_V2)'; \
		SELECT segment_id, count(*) AS rows, sum(x) AS sum_x, min(x) AS min_x, max(x) AS max_x, count(s) AS strings \
		FROM remote_segments('$(DEMO_DATA)/chunks/**/*.arrow', memory_budget := '1MiB') GROUP BY ALL ORDER BY 1; \
		SELECT scan_id, state, chunks, rows, wire_bytes, gets, max_parallel_io, round(io_utilization, 2) AS io_util, \
		       budget_cap, budget_peak, budget_overcommits AS overcommits, budget_in_use, budget_waits, round(budget_ratio, 2) AS ratio, wall_ms, \
		       pruned, progress \
		FROM remote_segments_stats();"
	@echo "-- expected (computed by the data generator): $(DEMO_DATA)/expected.csv"
	@cut -d, -f1-5 $(DEMO_DATA)/expected.csv | column -t -s,

test: release tools $(GOHOST) $(V2CHECK)
	tools/check-extension.sh $(EXT)
	tools/check-extension.sh $(EXT_V2)
	$(DUCKDB_LIB)/ld-linux-x86-64.so.2 --library-path $(DUCKDB_LIB) $(V2CHECK) $(DUCKDB_LIB)/libduckdb.so.2.0.0
	@deps=$$(go list -deps ./extension) || exit 1; \
	if grep -e duckdb-go -e go-duckdb <<<"$$deps"; then \
		echo "make test: ./extension depends on the DuckDB Go driver (above): that links a second DuckDB into the extension"; exit 1; \
	fi
	$(MAKE) --no-print-directory test-go test-sql

test-go:
	gofmt -l $$(git ls-files '*.go') | (! grep .) || (echo "gofmt: the files above need formatting"; exit 1)
	go vet ./...
	@# The README says the pure-Go packages build for macOS: keep it true.
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go build ./budget/... ./iosched/... ./scanner/... ./internal/...
	go test -race -count=1 -timeout 30m ./...

TEST_DATA := build/test-data

# Every file on five hosts: the DuckDB CLI, the same CLI with the 2.0 edition
# (cli-v2), the pinned engine (1.5.6), the same host on DuckDB 1.4.4, and the
# Go-driver host; a missing host fails (-strict).
test-sql: release $(GOHOST)
	go run ./test/cmd/datagen -types -out $(TEST_DATA)
	REMOTE_SEGMENTS_MAX_PARALLEL_IO=6 REMOTE_SEGMENTS_MEMORY_LIMIT=512MiB GORACE=halt_on_error=1 go run ./test/cmd/sqltest -serve -strict \
		-ext $(CURDIR)/$(EXT) -ext-v2 $(CURDIR)/$(EXT_V2) -duckdb $(CURDIR)/$(DUCKDB) -host $(CURDIR)/$(HOST) -host14 $(CURDIR)/$(HOST14) \
		-gohost $(CURDIR)/$(GOHOST) -data $(CURDIR)/$(TEST_DATA) test/sql

# INSTALL from a repository served on 127.0.0.1 (test/install, also part of
# test-go): the 2.0 CLI signed (no -unsigned) and unsigned, the 1.5.6 and 1.4.4
# engines; LOAD by name, UPDATE EXTENSIONS after a changed file, a late load
# after DuckDB's own extensions, the demo query against expected.csv.
# test-arm64 adds the arm64 CLI under qemu.
test-install: release duckdb host
	go test -count=1 -timeout 10m -v ./test/install

# The whole SQL suite on DuckDB 2.0 for arm64 under qemu-user, both files
# (host cli-v2: the 2.0 edition, the file an arm64 DuckDB 2.0 installs from
# the repository; host cli: the portable file), then the install test with
# the arm64 CLI: about 10 minutes on 2 idle cores once the toolchain is in
# .tools/. Not part of make test: a fresh clone needs the cross toolchain
# and the arm64 packages (about 900 MB), and a cold cross build of Go's
# runtime.
ARM64_SQLTEST = REMOTE_SEGMENTS_MAX_PARALLEL_IO=6 REMOTE_SEGMENTS_MEMORY_LIMIT=512MiB go run ./test/cmd/sqltest -serve -strict -timeout 10m \
	-ext $(CURDIR)/$(EXT_ARM64) -ext-v2 $(CURDIR)/$(EXT_ARM64_V2) -duckdb $(CURDIR)/$(DUCKDB_ARM64) -host "" -host14 "" -gohost "" \
	-data $(CURDIR)/$(TEST_DATA)
test-arm64: $(EXT_ARM64) $(EXT_ARM64_V2) release duckdb host
	tools/check-extension.sh $(EXT_ARM64)
	tools/check-extension.sh $(EXT_ARM64_V2)
	go run ./test/cmd/datagen -types -out $(TEST_DATA)
	$(ARM64_SQLTEST) -hosts cli,cli-v2 test/sql
	go test -count=1 -timeout 20m -v ./test/install -args -install.arm64

# Every fuzz target of the module for FUZZTIME each, two at a time; the last
# result of each goes into the fuzzing section of test/RELIABILITY.md, a
# failing input into the target's testdata/fuzz/ corpus (run by make test).
FUZZTIME ?= 5m
.PHONY: fuzz
fuzz:
	go run ./test/cmd/fuzz -fuzztime $(FUZZTIME)

# Benchmarks print ratios against references measured in the same run.
# The scan and IO benchmarks also write W4 and W2/W3 as markdown under
# build/bench/, which bench-peers gathers into BENCHMARKS.md with W1; the IO
# benchmark runs the peers (installed first, as bench-peers does) on W2 and
# W3 and draws W2's requests in flight at the proxy (test/bench/w2_inflight.svg)
# and the peers' throughput and peak RSS on W2 and W3 (test/bench/w2_peers.svg,
# test/bench/w3_peers.svg).
# Runs of each peer under the W3 fault mix (Polars takes minutes a run there).
PEER_MIX_RUNS ?= 3
bench: release tools
	rm -f build/bench/io.md build/bench/sweep.md build/bench/cache.md build/bench/scale.md
	go test -run '^$$' -bench . -benchmem -count 3 ./budget/
	go build -o build/bench/gohost ./test/host/gohost
	go run ./test/bench/scan -out build/bench -reps 5 -md build/bench/sweep.md
	go build -o $(PEERS_BIN) ./test/bench/peers
	$(PEERS_BIN) -install
	go run ./test/bench/io -out build/bench -md build/bench/io.md -hosts cli,cli-v2,gohost,cli-glob,raw-proc -node build/peers/node -peer-mix-runs $(PEER_MIX_RUNS) -svg test/bench/w2_inflight.svg \
		-w2-svg test/bench/w2_peers.svg -w3-svg test/bench/w3_peers.svg
	go run ./test/bench/gohost -out build/bench
	go run ./test/bench/concurrent -out build/bench
	go run ./test/bench/cache -out build/bench -md build/bench/cache.md
	go run ./test/bench/scale -out build/bench -md build/bench/scale.md
	$(MAKE) --no-print-directory bench-peers

clean:
	rm -rf build

# W1 of BENCHMARKS.md: remote_segments against the raw GET loop, the designs it
# replaces, DuckDB's own readers and the peer engines (Polars, LanceDB, pinned
# in test/bench/peers/package-lock.json, installed with npm ci into build/peers/node).
# bench-peers writes BENCHMARKS.md and test/bench/peers_w1.svg (with the W2-W4
# sections the last `make bench` wrote); bench-quick runs a reduced version of
# all four (W1: 1 M rows, 242 MiB; W2 at max_parallel_io 64 only; 3 runs of
# the W3 mix, 1 of each peer; W4 over 0.5 GiB) and writes its report under
# build/bench-quick/. Every figure is a median of 3 interleaved runs.
.PHONY: bench-peers bench-quick
PEERS_BIN := build/peers/bench-peers

bench-peers: release tools
	go build -o $(PEERS_BIN) ./test/bench/peers
	$(PEERS_BIN) -duckdb $(DUCKDB) -ext $(EXT)

bench-quick: release tools
	rm -f build/bench-quick/io.md build/bench-quick/sweep.md
	go run ./test/bench/scan -out build/bench-quick/data -gib 0.5 -reps 3 -sections sweep \
		-svg build/bench-quick/scan_budget_sweep.svg -md build/bench-quick/sweep.md
	go build -o $(PEERS_BIN) ./test/bench/peers
	$(PEERS_BIN) -install
	go run ./test/bench/io -out build/bench-quick/data -p 64 -rounds 3 -mix-runs 3 -peer-mix-runs 1 -large 0 -tables 1,2,3 \
		-node build/peers/node -svg build/bench-quick/w2_inflight.svg -md build/bench-quick/io.md \
		-w2-svg build/bench-quick/w2_peers.svg -w3-svg build/bench-quick/w3_peers.svg
	$(PEERS_BIN) -duckdb $(DUCKDB) -ext $(EXT) -rows 1000000 -runs 3 -label quick -target bench-quick \
		-report build/bench-quick/BENCHMARKS.md -svg build/bench-quick/peers_w1.svg \
		-sections build/bench-quick/io.md,build/bench-quick/sweep.md,test/bench/figures.md

# TestChangedDuringScan (test/faults/truncate_test.go) with every cell
# (truncate or overwrite × codec × format × column kind × host) run
# TRUNCATE_RUNS times: a table of the outcomes, written into the truncation
# section of test/RELIABILITY.md; any crash fails. make test runs a sample.
TRUNCATE_RUNS ?= 20
.PHONY: stress-truncate
stress-truncate: release duckdb $(GOHOST)
	go test -count=1 -timeout 6h -v -run '^TestChangedDuringScan$$' ./test/faults \
		-truncate.runs=$(TRUNCATE_RUNS) -truncate.report=$(CURDIR)/test/RELIABILITY.md 2>&1 | \
		grep -v -e '^=== RUN' ; exit $${PIPESTATUS[0]}
