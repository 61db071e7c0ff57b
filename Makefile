# Verbs for building and checking gvr. `make` alone lists them.
# GOFLAGS and other go env vars are honoured as usual.
GO ?= go
GOFMT ?= gofmt
MAKEFLAGS += --no-print-directory

.DEFAULT_GOAL := help
.PHONY: help build test generate generate-check golden-update golden-check fmt-check vet \
	ptxas ptxas12 cuda-headers ptxas-check ptxas12-check spill-check cuda gpu-test bench fuzz ci

help: ## list the verbs
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## go build ./...
	$(GO) build ./...

test: ## go test ./... (the README's test command)
	$(GO) test ./...

generate: ## go generate ./... (writes the example module's kernel)
	$(GO) generate ./...

# What go generate writes (the //go:generate lines run ptxgen). It is
# committed; add new generated paths here.
GENERATED := examples/kernels

# Regenerate, then require the generated files to match what is committed:
# no modified, deleted or untracked files.
generate-check: ## fail if go generate ./... changes the generated files
	$(GO) generate ./...
	@git diff --exit-code --stat -- $(GENERATED) && test -z "$$(git status --porcelain -- $(GENERATED))" \
		|| { git status --short -- $(GENERATED); \
		     echo "generated files out of date: run go generate ./... (make generate) and commit them" >&2; exit 1; }

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

# staticcheck's bug checks (SA*, not its style checks), pinned; fetched
# through the module proxy by go run, not a dependency of the module. They
# found two tests whose -0.0 was +0 (Go's constant -0.0 is zero).
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
vet: ## go vet ./... and staticcheck's bug checks (SA*)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) -checks 'SA*' ./...

ptxas: ## fetch pinned ptxas 11.8 into the cache, print its path
	scripts/cuda-tools.sh ptxas

ptxas12: ## fetch pinned ptxas 12.4 (for PTX 8.0) into the cache, print its path
	scripts/cuda-tools.sh ptxas12

cuda-headers: ## fetch CUDA 11.8 cuda.h + libcuda.so stub into the cache
	scripts/cuda-tools.sh headers

# golden/ holds sm_90 PTX; every kernel but the cluster ones (sm_90+) is
# also generated for sm_80 (the oldest target, PTX 7.0) into a temporary
# directory and assembled, the Top-K kernels for 16-bit scores too.
TOPK_KERNELS = /^  (gvr_topk|topk_)/
ptxas-check: ## assemble golden/ and every kernel for sm_80 with ptxas 11.8 (PTXAS=... for another)
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	$(GO) build -o "$$d/ptxgen" ./cmd/ptxgen && \
	for k in $$("$$d/ptxgen" -list | awk '/^  / && $$1 !~ /cluster/ {print $$1}'); do \
		"$$d/ptxgen" -kernel $$k -arch sm_80 -o "$$d/$${k}_sm_80.ptx" || exit 1; \
	done && \
	for k in $$("$$d/ptxgen" -list | awk '$(TOPK_KERNELS) && $$1 !~ /cluster/ {print $$1}'); do for s in f16 bf16; do \
		"$$d/ptxgen" -kernel $$k -arch sm_80 -scores $$s -o "$$d/$${k}_$${s}_sm_80.ptx" || exit 1; \
	done; done && rm "$$d/ptxgen" && scripts/ptxas-check.sh golden "$$d"

# ptxas 11.8 knows PTX up to 7.8: sm_90a (PTX 8.0), bulk copies and the
# cluster qualifiers of 8.0 need 12.x. ptxas12-check assembles golden/'s sm_90
# and sm_90a files (cluster kernels included, as they land there) and every
# kernel generated for sm_90 and sm_90a with the pinned ptxas 12.4. sm_100
# needs CUDA 12.8+: scripts/gpu-run.sh assembles it on the GPU machine.
PTXAS12 ?=
ptxas12-check: ## assemble golden/*_sm_90*.ptx and every kernel for sm_90, sm_90a with ptxas 12.4 (PTXAS12=... for another)
	@p='$(PTXAS12)'; [ -n "$$p" ] || p=$$(scripts/cuda-tools.sh ptxas12) || exit 1; \
	d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	$(GO) build -o "$$d/ptxgen" ./cmd/ptxgen && \
	for k in $$("$$d/ptxgen" -list | awk '/^  /{print $$1}'); do for a in sm_90 sm_90a; do \
		"$$d/ptxgen" -kernel $$k -arch $$a -o "$$d/$${k}_$$a.ptx" || exit 1; \
	done; done && \
	for k in $$("$$d/ptxgen" -list | awk '$(TOPK_KERNELS) {print $$1}'); do for s in f16 bf16; do \
		"$$d/ptxgen" -kernel $$k -arch sm_90 -scores $$s -o "$$d/$${k}_$${s}_sm_90.ptx" || exit 1; \
	done; done && \
	for k in gvr_topk_cluster topk_fallback_cluster; do \
		"$$d/ptxgen" -kernel $$k -arch sm_90 -cluster 8 -mbarrier-rounds -o "$$d/$${k}_mbarrier_sm_90.ptx" || exit 1; \
	done && rm "$$d/ptxgen" && \
	PTXAS="$$p" scripts/ptxas-check.sh golden/*_sm_90*.ptx "$$d"

# What ptxas 12.4 spills in the kernels the Selector runs on sm_90, against
# golden/spills_sm_90.txt (scripts/spill-check.sh -update rewrites it): a
# kernel change that makes ptxas spill shows up here, not only on a GPU.
spill-check: ## compare ptxas 12.4's spills in the Selector's sm_90 kernels with golden/spills_sm_90.txt
	scripts/spill-check.sh

# The cuda-tagged build (package runtime and what uses it) needs cgo and the
# CUDA driver API headers. By default they are the pinned CUDA 11.8 cuda.h and
# libcuda.so stub that scripts/cuda-tools.sh fetches once into a cache. With
# your own CUDA 11.x/12.x toolkit instead (not 13: gorgonia.org/cu does not
# build against it), set CUDA_ENV:
#   make gpu-test CUDA_ENV="CGO_CFLAGS=-I$$CUDA_HOME/include CGO_LDFLAGS=-L$$CUDA_HOME/lib64/stubs"
CUDA_ENV ?=
CUDA_RUN = ce='$(CUDA_ENV)'; [ -n "$$ce" ] || ce=$$(scripts/cuda-tools.sh env) || exit 1; env $$ce CGO_ENABLED=1
# Where make gpu-test puts what the GPU machine runs (git-ignored).
GPUBIN := gpubin

cuda: ## go vet, staticcheck's bug checks and go build with -tags cuda, against the pinned CUDA 11.8 headers
	@echo "$(GO) vet -tags cuda ./... && staticcheck -checks 'SA*' -tags cuda ./... && $(GO) build -tags cuda ./..."
	@$(CUDA_RUN) $(GO) vet -tags cuda ./...
	@$(CUDA_RUN) $(GO) run $(STATICCHECK) -checks 'SA*' -tags cuda ./...
	@$(CUDA_RUN) $(GO) build -tags cuda ./...

gpu-test: ## build GPU test + benchmark binaries and sm_90/100/120 PTX into gpubin/ (run scripts/gpu-run.sh on the GPU machine)
	@mkdir -p $(GPUBIN)
	@echo "$(GO) test -c -tags cuda -o $(GPUBIN)/{runtime,topk}.test; $(GO) build -tags cuda -o $(GPUBIN)/gvrbench"
	@$(CUDA_RUN) $(GO) test -c -tags cuda -o $(GPUBIN)/runtime.test ./runtime
	@$(CUDA_RUN) $(GO) test -c -tags cuda -o $(GPUBIN)/topk.test ./topk
	@$(CUDA_RUN) $(GO) build -tags cuda -o $(GPUBIN)/gvrbench ./cmd/gvrbench
	@rm -f $(GPUBIN)/*.ptx
	@for arch in sm_90 sm_100 sm_120; do for k in gvr_topk topk_fallback topk_radix; do \
		$(GO) run ./cmd/ptxgen -kernel $$k -arch $$arch -o $(GPUBIN)/$${k}_$$arch.ptx && \
		$(GO) run ./cmd/ptxgen -kernel $$k -arch $$arch -instrument -o $(GPUBIN)/$${k}_instrumented_$$arch.ptx \
		|| exit 1; done; \
		for k in cluster_count_ge cluster_read gvr_topk_cluster; do \
		$(GO) run ./cmd/ptxgen -kernel $$k -arch $$arch -cluster 8 -o $(GPUBIN)/$${k}_$$arch.ptx || exit 1; done; \
		$(GO) run ./cmd/ptxgen -kernel gvr_topk_cluster -arch $$arch -cluster 16 -mbarrier-rounds -o $(GPUBIN)/gvr_topk_cluster_mbarrier_$$arch.ptx || exit 1; \
		$(GO) run ./cmd/ptxgen -kernel gvr_topk -arch $$arch -sure-set -o $(GPUBIN)/gvr_topk_sure_$$arch.ptx || exit 1; \
		$(GO) run ./cmd/ptxgen -kernel gvr_topk_cluster -arch $$arch -cluster 8 -mbarrier-rounds -sure-set -o $(GPUBIN)/gvr_topk_cluster_sure_$$arch.ptx || exit 1; \
		$(GO) run ./cmd/ptxgen -kernel topk_fallback_cluster -arch $$arch -cluster 8 -mbarrier-rounds -groups 8 -o $(GPUBIN)/topk_fallback_cluster_groups_$$arch.ptx || exit 1; \
		for s in f16 bf16; do for k in gvr_topk gvr_topk_cluster; do \
		$(GO) run ./cmd/ptxgen -kernel $$k -arch $$arch -cluster $$([ $$k = gvr_topk ] && echo 0 || echo 8) -scores $$s -o $(GPUBIN)/$${k}_$${s}_$$arch.ptx || exit 1; \
		done; done; done
	@echo "gpu-test: $$(ls $(GPUBIN) | wc -l) files in $(GPUBIN)/ ($$(du -sh $(GPUBIN) | cut -f1)); on the GPU machine, from the repo root: scripts/gpu-run.sh"

BENCHFLAGS ?=
bench: ## build gvrbench with -tags cuda and run it here, on a GPU machine (BENCHFLAGS=... for its flags)
	@$(CUDA_RUN) $(GO) build -tags cuda -o bin/gvrbench ./cmd/gvrbench
	bin/gvrbench $(BENCHFLAGS)

# Bounded differential fuzzing (gen/fuzz_test.go): the interpreter runs the
# generated kernels on fuzzed rows and configurations against the CPU
# reference, each target for a number of executions (about 30 s each on a
# two-core machine; FUZZTIME, a duration or a count such as 5000x, sets
# both). A count, not a duration: with a duration, Go 1.26's fuzzing
# coordinator can fail a target with "context deadline exceeded" as the
# time runs out, having found nothing (golang/go#75804, fixed in Go 1.27).
# A failure is written to gen/testdata/fuzz/<target>/; the top of
# gen/fuzz_test.go says how it becomes a regression test. The committed
# corpus runs in make test.
# Under CI the fuzz cache (inputs earlier runs found interesting, kept in
# GOCACHE) is emptied first: replaying hundreds of them as the baseline can
# take longer than the budget, and the committed corpus is what CI promises.
FUZZ_ROWS ?= 1000x
FUZZ_CONFIG ?= 300x
fuzz: ## run each gen fuzz target for a fixed number of executions (FUZZTIME overrides); under CI from the committed corpus only
	$(if $(CI),$(GO) clean -fuzzcache)
	$(GO) test ./gen -run '^$$' -fuzz '^FuzzTopKRows$$' -fuzztime $(or $(FUZZTIME),$(FUZZ_ROWS))
	$(GO) test ./gen -run '^$$' -fuzz '^FuzzTopKConfig$$' -fuzztime $(or $(FUZZTIME),$(FUZZ_CONFIG))

# One after another, also under make -j: generate-check and golden-check
# rewrite files.
ci: ## fmt-check vet generate-check test fuzz golden-check ptxas-check ptxas12-check spill-check cuda, in that order
	$(MAKE) fmt-check
	$(MAKE) vet
	$(MAKE) generate-check
	$(MAKE) test
	$(MAKE) fuzz
	$(MAKE) golden-check
	$(MAKE) ptxas-check
	$(MAKE) ptxas12-check
	$(MAKE) spill-check
	$(MAKE) cuda
