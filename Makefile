# Sortie — the targets the README names. `make help` lists them.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
DATE     ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS  := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
FUZZTIME ?= 5s
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN      := bin/sortie

.PHONY: help build run demo test unit fuzz fuzz-long bench bench-drain soak lint clis clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s '	'

build: ## build bin/sortie
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/sortie

run: build ## run the demo: a throw-away tracker, mock agent and workspaces in a temp dir
	./$(BIN) demo

demo: run

test: lint unit fuzz ## the whole suite: vet, race tests, a short run of every fuzz target

unit: clis ## go test -race over every package (contract tests run the pinned real CLIs)
	$(GO) test -race -count=1 ./...

clis: ## install the pinned claude and copilot CLIs into .tools/ (once)
	@scripts/install-clis.sh

fuzz: ## run every fuzz target for FUZZTIME (default 5s) each
	@scripts/fuzz-all.sh $(FUZZTIME)

fuzz-long: ## run every fuzz target for 2 minutes each
	@scripts/fuzz-all.sh 2m

soak: ## the soak test: 540+ runs that daemonise, fail, stall and overspend, the daemon killed -9 three times; figures go to docs/operations.md
	$(GO) test -tags soak -run '^TestSoak$$' -count=1 -v -timeout 60m ./cmd/sortie/

bench: ## benchmarks; figures go to docs/performance.md
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...

SOAK ?= 30m
BENCH_DRAIN_FLAGS ?=
bench-drain: build ## the real daemon against xargs: W1, W2, 10,000 issues, 100 agents for SOAK (30m), latency; each figure beside its target
	$(GO) run ./scripts/benchdrain -sortie $(BIN) -soak $(SOAK) $(BENCH_DRAIN_FLAGS)

lint: ## gofmt, go vet and staticcheck must be clean
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

clean:
	rm -rf bin
