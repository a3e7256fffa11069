# The test command is `make ci`: it installs what the tests need (tmux, npm, gcc for -race, Go
# modules, the pinned Claude Code, Qwen Code, Codex and opencode releases), lints, runs every test including
# the live Claude Code, Qwen Code, Codex and opencode ones offline, runs each fuzz target for a short fixed time, and
# builds and checks a snapshot release (check-release).
# `make test` runs the quick tests only (no tmux or Claude Code needed).
GO ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: build test test-live bench bench-ssh bench-serve bench-fleet bench-go bench-replies bench-codex bench-opencode lint cross vuln ci deps install-claude fuzz man release check-release dashboard-png

# CGO_ENABLED=0: peerctl needs no C, and a static binary skips the dynamic loader at every
# start (docs/PERFORMANCE.md); the race-enabled tests build their own way.
# bin/peerctl-mcp is peerctl with the MCP server, the fleet's NATS client, the outbox's store and
# the --jq filter linked in: `peerctl mcp`, `serve`, `list --fleet` and --jq run it from beside
# peerctl, so no other command pays for their start-up.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=auto -o bin/ ./cmd/peerctl ./cmd/peerctl-mcp

# -timeout: the acceptance package alone takes 6 to 19 minutes on 2 busy CPUs, past go test's
# default of 10.
test:
	$(GO) test -race -timeout 40m ./...

# Man pages, one per command (cobra's generator, internal/mangen), into build/man; dated
# with the commit's time so a rebuild of one commit gives the same pages.
man:
	SOURCE_DATE_EPOCH="$$(git log -1 --format=%ct 2>/dev/null)" $(GO) run ./internal/mangen build/man

# A snapshot release into dist/ (.goreleaser.yaml): an archive per platform with both programs,
# LICENSE, README.md and the man pages; checksums.txt; the Homebrew cask. Nothing is published.
GORELEASER := github.com/goreleaser/goreleaser/v2@v2.17.0
# goreleaser asks git for the remote's URL and, in a checkout without a remote, names the
# snapshot "...-none" instead of the commit: the project's URL is given as git configuration.
release:
	GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/peerctl/peerctl.git \
		$(GO) run $(GORELEASER) release --snapshot --clean

# make release, then checks what it made (scripts/check-release.sh).
check-release:
	scripts/check-release.sh

# Live tests start real Claude Code, Qwen Code, Codex and opencode sessions in tmux (no login), offline: OFFLINE
# runs them in a network namespace with loopback only (scripts/offline.sh; as root, or with
# unprivileged user namespaces), after `make deps` has downloaded everything.
# `make test-live OFFLINE=` runs them on the open network instead.
OFFLINE ?= scripts/offline.sh

test-live:
	PEERCTL_LIVE=1 $(OFFLINE) $(GO) test -race -count=1 -timeout 50m ./...

# Whole-command timings against Claude Code's own listing (see the script's header), then
# across hosts (bench-ssh), then peerctl serve (bench-serve), then the fleet's bus (bench-fleet).
bench:
	scripts/bench.sh
	$(MAKE) bench-ssh
	$(MAKE) bench-serve
	$(MAKE) bench-fleet

# peerctl across hosts, offline, on second machines of the test's own (test/livessh: sshd in a
# pid namespace; needs root, openssh-server and Claude Code from make deps): list --host and
# send --host against ssh + the same thing here, 3 hosts against the slowest one, the first
# connection against a warm one (docs/PERFORMANCE.md, "Across hosts").
bench-ssh:
	PEERCTL_LIVE=1 $(OFFLINE) $(GO) test -run '^$$' -bench BenchmarkLiveSSH -benchtime 1x -timeout 20m ./test/acceptance

# The README's picture of the dashboard, docs/dashboard.png: the live browser test
# (test/acceptance/dashboard_live_test.go) with three real Claude Code sessions, offline; needs
# chromium and Claude Code from make deps.
dashboard-png:
	PEERCTL_LIVE=1 PEERCTL_DASHBOARD_SHOT=$(CURDIR)/docs/dashboard.png $(OFFLINE) $(GO) test -count=1 -run '^TestLiveDashboard$$' ./test/acceptance

# Go benchmarks with allocation counts (docs/PERFORMANCE.md).
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The tests' fault points (internal/serve/fault_on.go) build only with the tag peerctlfault:
# vet and staticcheck read that build of internal/serve too.
lint:
	$(GO) vet ./...
	$(GO) vet -tags peerctlfault ./internal/serve
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(STATICCHECK) -tags peerctlfault ./internal/serve
	shellcheck install.sh scripts/check-release.sh

# go vet, go build, and compile every package's tests without running them, for each
# GOOS/GOARCH peerctl supports: linux/amd64, linux/arm64, darwin/arm64, darwin/amd64,
# windows/amd64 (TARGETS="..." to narrow). Only Linux runs the tests (README, Platforms).
cross:
	scripts/cross.sh

# Installs the test dependencies (tmux, npm, gcc and ip when missing, Go modules, Claude Code,
# Qwen Code, Codex, opencode).
deps:
	./scripts/install-test-deps.sh

# govulncheck against a database built locally from golang.org/x/vulndb (vuln.go.dev
# is not reachable everywhere). Not part of ci: it reports the Go toolchain's own
# standard-library advisories, which only a newer toolchain fixes.
vuln:
	scripts/vulncheck.sh

# Pre-installs the pinned Claude Code release into the test cache.
install-claude:
	$(GO) run ./test/livecc/cmd/install-claude

ci: deps lint cross test-live fuzz check-release

# Runs every fuzz target for a short fixed budget each (FUZZTIME, default 200000x executions).
fuzz:
	scripts/fuzz.sh

# Live benchmark of replies (send --await-reply, relay) against real Claude Code, offline:
# one scripted session, a warm relay, docs/PERFORMANCE.md ("Replies").
bench-replies:
	PEERCTL_LIVE=1 $(GO) test -run '^$$' -bench BenchmarkLiveReplies -benchtime 1x -timeout 20m ./test/acceptance

# peerctl serve (docs/PERFORMANCE.md, "peerctl serve"): whole sends through its warm courier
# against one-shot sends to one real Claude Code session, offline, medians of 20 as ratios; then,
# hermetic (the fake claude), 1000 durable sends to 10 sessions that come back
# (SERVE_BENCH_MESSAGES=N for another count): throughput, order, none twice, the service's peak RSS,
# its stop on SIGTERM; list --fleet over 100 nodes x 10 sessions, on one server and on a
# three-server cluster, against a local list --json (BENCH_BEFORE=DIR: another build beside it).
bench-serve:
	PEERCTL_LIVE=1 $(OFFLINE) $(GO) test -run '^$$' -bench BenchmarkLiveServe -benchtime 1x -timeout 20m ./test/acceptance
	$(GO) test -run '^$$' -bench BenchmarkServeOutbox -benchtime 1x -timeout 30m ./test/acceptance
	$(GO) test -run '^$$' -bench BenchmarkFleetList -benchtime 1x -timeout 20m ./test/acceptance
	$(GO) test -run '^$$' -bench BenchmarkDelta10k -benchmem ./internal/dashboard

# The fleet's bus against ssh (docs/PERFORMANCE.md, "The fleet"): list --fleet over 10 and 100
# nodes of 10 sessions on an embedded NATS server against list --host over ssh to as many hosts
# (aliases of one second machine of the test's own, test/livessh: needs root and openssh-server),
# offline; then, hermetic, send --host nats:NODE against the same send made on that machine, and
# durable sends across nodes: a node's backlog drained (BENCH_MESSAGES, default 10,000, across
# BENCH_NODES, default 10; BENCH_SEND=bus puts them on the bus without a command each) and the
# time from a node's service coming back to each delivery.
bench-fleet:
	PEERCTL_LIVE=1 $(OFFLINE) $(GO) test -run '^$$' -bench BenchmarkLiveFleetVsSSH -benchtime 1x -timeout 30m ./test/acceptance
	$(GO) test -run '^$$' -bench BenchmarkFleetSend -benchtime 1x -timeout 10m ./test/acceptance
	$(GO) test -run '^$$' -bench BenchmarkFleetDurableComeBack -benchtime 1x -timeout 10m ./test/acceptance
	$(GO) test -run '^$$' -bench BenchmarkFleetDurableBacklog -benchtime 1x -timeout 60m ./test/acceptance

# Live benchmark of Codex (send to a Codex thread against a bare `codex queue`; list with a
# Codex home present and absent), offline: one real Codex TUI, docs/PERFORMANCE.md ("Codex").
bench-codex:
	PEERCTL_LIVE=1 $(OFFLINE) $(GO) test -run '^$$' -bench BenchmarkLiveCodex -benchtime 1x -timeout 20m ./test/acceptance

# Live benchmark of opencode (send to a session of a real `opencode serve` against a bare curl POST
# of the same prompt_async request; list with the server's database and without one; the cold send
# alone, 20 pairs, from copies of the binary: BenchmarkLiveOpencodeSend), offline:
# docs/PERFORMANCE.md ("opencode"). BENCH_BASE=<git revision> also times a send of peerctl built at
# that revision, in the same run (against curl and against this tree's).
bench-opencode:
	@set -e; base=; if [ -n "$(BENCH_BASE)" ]; then \
	  src=$$(mktemp -d); trap 'rm -rf "$$src"' EXIT; \
	  git archive "$(BENCH_BASE)" | tar -x -C "$$src"; \
	  (cd "$$src" && CGO_ENABLED=0 $(GO) build -trimpath -o "$$src/peerctl-base" ./cmd/peerctl); \
	  base=$$src/peerctl-base; \
	fi; \
	PEERCTL_BENCH_BASE=$$base PEERCTL_LIVE=1 $(OFFLINE) $(GO) test -run '^$$' -bench BenchmarkLiveOpencode -benchtime 1x -timeout 30m ./test/acceptance
