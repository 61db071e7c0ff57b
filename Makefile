# Verbs for building and checking gvr. `make` alone lists them.
# GOFLAGS and other go env vars are honoured as usual.
GO ?= go
GOFMT ?= gofmt
MAKEFLAGS += --no-print-directory

.DEFAULT_GOAL := help
.PHONY: help build test generate golden-update golden-check fmt-check vet \
	ptxas cuda-headers ptxas-check ci

help: ## list the verbs
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## go build ./...
	$(GO) build ./...

test: ## go test ./... (the README's test command)
	$(GO) test ./...

generate: ## go generate ./...
	$(GO) generate ./...

golden-update: ## rewrite golden/ from the generator (review the diff)
	$(GO) test ./golden -update

# Regenerate, then require golden/ to match what is committed: no modified,
# deleted or untracked files.
golden-check: ## fail if golden/ is not what the generator writes
	$(GO) test ./golden -update
	@git diff --exit-code --stat -- golden/ && test -z "$$(git status --porcelain -- golden/)" \
		|| { git status --short -- golden/; \
		     echo "golden PTX out of date: run make golden-update and review the diff" >&2; exit 1; }

# gofmt's own errors (syntax errors) land in the output too, so they fail the check.
fmt-check: ## fail listing tracked .go files that gofmt would change
	@out=$$(git ls-files -z '*.go' | xargs -0 -r $(GOFMT) -l 2>&1); \
	if [ -n "$$out" ]; then echo "gofmt -w needed:" >&2; echo "$$out" >&2; exit 1; fi

vet: ## go vet ./...
	$(GO) vet ./...

ptxas: ## fetch pinned ptxas 11.8 into the cache, print its path
	scripts/cuda-tools.sh ptxas

cuda-headers: ## fetch CUDA 11.8 cuda.h + libcuda.so stub into the cache
	scripts/cuda-tools.sh headers

ptxas-check: ## assemble golden/*_sm_NN.ptx with ptxas 11.8 (PTXAS=... for another)
	scripts/ptxas-check.sh golden

# One after another, also under make -j: golden-check rewrites golden/.
ci: ## fmt-check vet test golden-check ptxas-check, in that order
	$(MAKE) fmt-check
	$(MAKE) vet
	$(MAKE) test
	$(MAKE) golden-check
	$(MAKE) ptxas-check
