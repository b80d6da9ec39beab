# bpftape: `make demo` and `make test` load BPF programs, so they need root
# (run them as root or with sudo). Nothing here calls sudo itself.

GO      ?= go
BIN     := bin
BPFTAPE := $(BIN)/bpftape
DEMO    := out/demo

.PHONY: all build install dist unit test vmtest vmbench demo generate check-generate bench bench-quick bench-ab progtime-ab bench-go soak fuzz clean root deps

all: build

build:
	$(GO) build -o $(BPFTAPE) ./cmd/bpftape

# install copies bin/bpftape to $(PREFIX)/bin (default /usr/local/bin); run
# it as a user who may write there, or: make install PREFIX=$HOME/.local
PREFIX ?= /usr/local
install: build
	install -d $(PREFIX)/bin
	install -m 0755 $(BPFTAPE) $(PREFIX)/bin/bpftape

# dist cross-builds release binaries for DIST_TARGETS into dist/, with
# dist/SHA256SUMS (scripts/dist.sh says how); it needs only Go, no root.
# Outside a git checkout, give the commit: make dist COMMIT=SHA.
DIST_TARGETS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
dist:
	@COMMIT='$(COMMIT)' GO='$(GO)' sh scripts/dist.sh $(DIST_TARGETS)

root:
	@if [ "$$(id -u)" != 0 ]; then echo "this target loads BPF programs: run it as root (sudo make $(MAKECMDGOALS))" >&2; exit 1; fi

# deps installs what the tests need that a fresh machine may lack.
deps:
	@sh scripts/deps.sh

# unit runs go vet and the tests that need neither root nor an install, as
# whoever calls it, without the interop build tag, which leaves out the
# tests that open bpftape's output in Chromium, nodejs-polars and DuckDB
# (cmd/bpftape's *_chromium, *_browser, interop_*, *_polars and *_duckdb
# test files); -short skips the slow ones; without root the privileged
# tests skip (as root they run).
unit:
	$(GO) vet ./...
	BPFTAPE_REQUIRE_BPF= $(GO) test -short -count=1 ./...

# test builds with -tags interop (vet included), so it runs the interop
# suites too, and sets BPFTAPE_REQUIRE_BPF: a test that finds no root, BPF
# or gcc fails instead of skipping.
test: root deps
	$(GO) vet -tags interop ./...
	@# The analyzer builds for every release target (scripts/dist.sh), and
	@# its packages and tests type-check for Windows.
	@for t in $(DIST_TARGETS); do \
		echo "GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build ./cmd/bpftape"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/bpftape || exit 1; \
	done
	GOOS=windows GOARCH=amd64 $(GO) vet ./cmd/bpftape/ ./internal/... ./format/... ./replay/...
	@# cmd/bpftape's suite takes 6-7 minutes, more on a fresh machine
	@# (it builds bpftape with -trimpath, which rebuilds every dependency
	@# when the build cache is cold): over go test's 10-minute default.
	BPFTAPE_REQUIRE_BPF=1 $(GO) test -tags interop -count=1 -timeout 30m ./...

# vmtest boots Debian's kernels (scripts/vmtest/kernels: x86-64 5.10, 6.1,
# 6.1-rt, 6.12 and arm64 6.1, 6.12) under QEMU TCG with static bpftape in an
# initramfs, runs the privileged checks of scripts/vmtest/guest.sh in each,
# and prints a kernel × check table; kernels are cached in
# /var/cache/bpftape-vmtest. The host's bpftape must read each arm64 guest's
# capture as the guest did (xarch). VMTEST_KERNELS="6.1 arm64-6.12" boots
# only those.
vmtest: root
	@sh scripts/deps.sh vmtest
	@sh scripts/vmtest/run.sh $(VMTEST_KERNELS)

# vmbench times the kernel-function rows (kprobe, kretprobe,
# fentry, fexit on vfs_read: bpftape against bpftrace's hist and the empty
# program) in one QEMU TCG guest, VMBENCH_KERNEL (default 6.12); ratios
# only, as TCG inflates absolute times (bench/vmbench.sh).
vmbench: root
	@sh scripts/deps.sh vmbench
	@sh bench/vmbench.sh $(VMBENCH_KERNEL)

demo: root build
	@sh scripts/deps.sh demo
	@sh scripts/demo.sh $(BPFTAPE) $(DEMO)

# generate rebuilds the BPF objects and Go bindings from bpf/*.c, and the
# Go code of the vendored Perfetto protos (scripts/gen-proto.sh).
generate:
	@sh scripts/deps.sh clang
	$(GO) generate ./bpf/
	GO='$(GO)' sh scripts/gen-proto.sh

# check-generate fails when the committed BPF objects do not match bpf/*.c,
# or the Perfetto proto code its .proto files.
check-generate:
	@sh scripts/deps.sh clang
	@sh scripts/check-generate.sh

# bench compares bpftape with BCC, bpftrace and perf on the same workloads,
# in alternation (bench/README.md); run it on an idle machine, as root.
bench: root
	bash bench/bench.sh

bench-quick: root
	bash bench/bench.sh --quick

# soak records the bench workload at a high rate for SOAK_SECONDS (default
# 600) and fails unless the recorder's RSS stays flat (bench/soak.sh);
# SOAK_MODE=flight soaks the flight recorder (--flight, SIGUSR1 snapshots).
SOAK_SECONDS ?= 600
SOAK_MODE ?= file
soak: root
	SOAK_SECONDS=$(SOAK_SECONDS) SOAK_MODE=$(SOAK_MODE) bash bench/soak.sh

# bench-ab compares the working tree's writer and `bpftape hist` with git
# revision BASE (default HEAD~1), side by side in one run.
BASE ?= HEAD~1
bench-ab:
	bash scripts/bench-ab.sh $(BASE)

# progtime-ab compares the recording program's BPF run time per event (and
# the traced workload's CPU) with git revision BASE's: make progtime-ab BASE=rev
progtime-ab: root
	bash scripts/progtime-ab.sh $(BASE)

# bench-go runs the Go micro-benchmarks (writer, reader, wake-up policies).
bench-go:
	$(GO) test -run '^$$' -bench . -benchtime 2000000x ./format/
	$(GO) test -run '^$$' -bench Wakeup -benchtime 1x ./bpf/

FUZZTIME ?= 60s
FUZZ := format:FuzzOpen format:FuzzRepair format:FuzzStackTable record/usdt:FuzzRead record/usdt:FuzzParseNote \
	record/usdt:FuzzParseArgs probespec:FuzzParse record/tracefs:FuzzParseFormat record/elfsym:FuzzELF \
	cmd/bpftape:FuzzVerbs internal/textsafe:FuzzEscape record/stacktable:FuzzAdd replay:FuzzKeyFields \
	record/ctypes:FuzzBinary format/internal/zstdframe:FuzzRoundTrip format/internal/zstdframe:FuzzRepeat

# fuzz runs each fuzz target for FUZZTIME (go test -fuzz takes one target at a
# time). A crasher lands in the package's testdata/fuzz/FuzzXxx/; `make test`
# replays every committed corpus, since go test runs them as seeds. The
# generated seed-* files are rewritten by
# `go generate ./format/ ./record/elfsym/ ./record/usdt/`.
fuzz:
	@set -e; for t in $(FUZZ); do \
		echo "== $$t ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 100x ./$${t%%:*}/; \
	done

clean:
	rm -rf $(BIN) out
	rm -f dist/bpftape-*-*-* dist/SHA256SUMS
