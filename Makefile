# qualkit — run `make help` for the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

MODULES    := schemas runner attest verify tools tools/schemagen
PKGS       := $(foreach m,$(MODULES),./$(m)/...)
BIN        := bin
GO         ?= go
STATICCHECK_MODULE  := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# go-nvml's cgo calls NVML functions its own header marks deprecated: about 25 compiler warnings on a
# cold build that say nothing about qualkit. Go's default CGO_CFLAGS plus that one silence; a
# CGO_CFLAGS from the environment wins.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: help build test generate check-generate lint demo bench ajv tidy

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

build: ## build qualrun, qualverify, qualsim and qualgguf into bin/
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./tools/cmd/...

generate: ## export the CUE contracts under cue/ to JSON Schema under schemas/json/ and generate their Go (enums, contract names, kind table) into schemas/contract/
	$(GO) run ./tools/schemagen -cue cue -out schemas/json -go schemas/contract -docs docs/contracts

check-generate: ## fail if schemas/json or the generated Go in schemas/contract differs from what cue/ exports
	$(GO) run ./tools/schemagen -cue cue -out schemas/json -go schemas/contract -docs docs/contracts -check

# go test starts the packages' test binaries in the order named, two at a time on two cores. The
# tools package (the testscripts) is the longest, so it comes early enough for the others to run
# beside it, but after ./runner/...: runner/load's and runner/bench's timing tests then finish
# while the tools package runs its interrupt test and quickstart, not beside its 8 parallel scripts
# (runner/load's stamp-error bound failed once with ./tools first, on a host loaded 7-16).
test: ## vet, format check, schema drift check, all Go tests, the ajv cross-check
	$(GO) vet $(PKGS)
	@bad=$$(gofmt -l $(MODULES)); if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi
	$(MAKE) --no-print-directory check-generate
	$(GO) test -count=1 -timeout 20m ./runner/... ./tools $(PKGS)
	$(MAKE) --no-print-directory ajv

ajv: ## cross-check the contract corpus with ajv (needs node; `npm ci --prefix .ci/ajv` once)
	@if [ ! -d .ci/ajv/node_modules ]; then \
		if [ "$$CI" = "true" ]; then echo "ajv: .ci/ajv/node_modules missing (run npm ci --prefix .ci/ajv)"; exit 1; fi; \
		echo "ajv: skipped locally, .ci/ajv/node_modules missing (npm ci --prefix .ci/ajv)"; \
	else node .ci/ajv/check.mjs .; fi

lint: ## go vet, gofmt and staticcheck
	$(GO) vet $(PKGS)
	@bad=$$(gofmt -l $(MODULES)); if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi
	$(GO) run $(STATICCHECK_MODULE) $(PKGS)

demo: ## a real campaign against the built-in reference server (qualsim), then verification
	bash scripts/demo.sh

.PHONY: mutation
mutation: ## the full mutation closure: every leaf of every evidence shape edited, re-bound, re-signed and verified (make test runs a seeded sample)
	set -o pipefail; QUALKIT_MUTATION=full $(GO) test -count=1 -timeout 60m -run '^TestMutationClosure$$' -v ./verify/ | grep -v '^=== '

.PHONY: interop
interop: ## attestations against the real cosign CLI, both ways (installs pinned cosign into .tools/; minutes the first time)
	bash scripts/interop.sh

.PHONY: e2e-slurm
e2e-slurm: ## a fleet plan through a real two-node Slurm cluster on this machine (root, slurm-wlm, munge; .ci/run installs them and runs it)
	bash scripts/fleet-slurm-e2e.sh

.PHONY: e2e-real
e2e-real: ## a real engine: builds pinned ollama into .tools/ (minutes the first time), two signed campaigns, verify, compare
	bash scripts/e2e-real.sh

bench: ## run the Go benchmarks (ratios against baselines measured in the same run); rewrite docs/performance.md's client rows (needs python3, wrk)
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	$(GO) test -count=1 -timeout 30m -run '^TestClientFidelity$$' ./runner/bench -args -report=$(CURDIR)/docs/performance.md
	$(GO) test -count=1 -timeout 30m -run '^TestArrivalFidelity$$' ./runner/bench -args -arrivals=$(CURDIR)/docs/performance.md

tidy: ## go mod tidy every module (workspace siblings temporarily replaced by their directories)
	@set -e; for m in $(MODULES); do \
		rel=$$(realpath --relative-to=$$m .); \
		sibs=""; for dep in schemas runner attest verify; do [ "$$m" = "$$dep" ] || sibs="$$sibs $$dep"; done; \
		for dep in $$sibs; do (cd $$m && $(GO) mod edit -replace github.com/qualkit/qualkit/$$dep=$$rel/$$dep); done; \
		status=0; (cd $$m && GOWORK=off $(GO) mod tidy) || status=$$?; \
		for dep in $$sibs; do (cd $$m && $(GO) mod edit -dropreplace github.com/qualkit/qualkit/$$dep); done; \
		[ $$status = 0 ] || exit $$status; \
		echo "tidy $$m"; \
	done
