# hookverify developer commands. `make test` is the one test command: CI runs exactly it.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c

GOBIN_DIR := $(shell go env GOPATH)/bin
BUF_VERSION := v1.75.0
BUF := $(GOBIN_DIR)/buf

.PHONY: test check build demo generate check-generate lint breaking vet fmt-check go-test race fuzz-smoke node-test tools

## test: every check and every test, PostgreSQL included (a throwaway cluster is started by the tests).
test: check go-test node-test

## check: formatting, vet, proto lint and generated-code freshness.
check: fmt-check vet lint breaking check-generate

build:
	go build -o bin/hookverify ./cmd/hookverify

demo:
	go run ./cmd/hookverify demo

tools: $(BUF)

$(BUF):
	go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)

## generate: regenerate the Go code from proto/ (local plugins pinned in go.mod as tools).
generate: $(BUF)
	$(BUF) generate

## check-generate: fail when the checked-in generated code differs from a fresh generation.
check-generate: $(BUF)
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(BUF) generate -o "$$tmp"; \
	if ! diff -r -q "$$tmp/proto/hookverify" proto/hookverify --exclude='*.proto'; then \
		echo "generated code is stale: run 'make generate' and commit the result" >&2; exit 1; fi; \
	echo "generated code is up to date"

lint: $(BUF)
	$(BUF) lint

## breaking: the protos must stay wire-compatible with the previous commit.
breaking: $(BUF)
	if git rev-parse -q --verify HEAD~1 >/dev/null && git cat-file -e HEAD~1:buf.yaml 2>/dev/null; then \
		$(BUF) breaking --against '.git#ref=HEAD~1'; echo "no breaking proto changes since HEAD~1"; \
	else echo "no previous commit with protos: nothing to compare"; fi

## vet: also as a 32-bit build, where int is 32 bits and an int64 constant in an int overflows.
vet:
	go vet ./...
	GOARCH=386 go vet ./...

fmt-check:
	out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:" >&2; echo "$$out" >&2; exit 1; fi

go-test:
	go test -count=1 -timeout 20m ./...

## race: every Go test under the race detector, one package at a time (about 15 minutes on two
## cores; needs cgo and a C compiler). Not part of test, to keep CI short.
race:
	go test -race -count=1 -p 1 -timeout 40m ./...

## fuzz-smoke: run every fuzz target for FUZZTIME each (the seed corpora and every input a
## campaign found, kept in testdata/fuzz, always run as part of go-test). Not part of test: a
## fuzz run is random, so its new finds are new bug reports to keep as seeds, not a deterministic
## verdict on the change under test. Run it before a release: `make fuzz-smoke FUZZTIME=30s`.
FUZZTIME ?= 5s
fuzz-smoke:
	scripts/fuzz-smoke.sh $(FUZZTIME)

## node-test: the Node.js edge example, tested against a real hookverify server.
node-test: build
	cd examples/node-edge && npm ci --no-audit --no-fund && HOOKVERIFY_BIN=$(CURDIR)/bin/hookverify npm test
