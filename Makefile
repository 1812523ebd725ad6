# Stackward's front door. `make test` is what CI runs.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/stackward/stackward/pkg/version.Version=$(VERSION)
BIN := $(CURDIR)/bin
# Binaries are the cmd/ directories that exist; each is a thin main.
BINARIES := $(notdir $(wildcard cmd/*))
E2E_TIMEOUT ?= 40m
# e2e packages run E2E_PARALLEL at a time, each in its own network namespace,
# longest first: `go test` starts packages in the order given, so the two
# halves of the real-cloud lane run beside the others, not after them, and
# e2e/release (it compiles the images for two platforms, 12 minutes on a
# cold Go cache) does not start last.
E2E_PARALLEL ?= 4
E2E_LONGEST := ./e2e/realcloud/loadbalancers ./e2e/realcloud ./e2e/loadbalancer ./e2e/release ./e2e/soak ./e2e/kubeadm ./e2e/approver
N ?= 5
SOAK ?= 30m
# make ownership: seeds x steps of the generative ownership test; OWNERSHIP_SEED replays one seed.
OWNERSHIP_SEEDS ?= 200
OWNERSHIP_STEPS ?= 60
OWNERSHIP_SEED ?=

FUZZTIME ?= 2m
# Fuzz targets as package:FuncName; `go test` runs their seed corpora always.
FUZZ_TARGETS := approver:FuzzCheckCSR config:FuzzParse openstack:FuzzParseProviderID nodeaddress:FuzzFor

.PHONY: all build test unit e2e tools lab-tools lint bench bench-versus demo fuzz soak soak-real ownership clean help images release realcloud realcloud-down

# Images: one per binary a cluster runs, for these platforms (hack/imagetool).
IMAGES := stackward-ccm stackward-approver
PLATFORMS := amd64 arm64
REVISION := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# Images are stamped with the commit's time, not the clock's: same inputs, same digests.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

all: build

help: ## Show the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## Build every binary into bin/ (static, version-stamped).
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/ $(addprefix ./cmd/,$(BINARIES))

test: lint unit e2e ## Lint, unit tests and the e2e suite: what CI runs.

unit: ## Unit tests (no control plane), with the race detector.
	# bootstrap/capi runs kubeadm config validate when the tools cache has kubeadm (make tools).
	STACKWARD_TOOLS_DIR=$$(e2e/tools/build.sh --print-dir) CGO_ENABLED=1 $(GO) test -race -count=1 ./...
	cd hack/imagetool && CGO_ENABLED=1 $(GO) test -race -count=1 ./...

tools: lab-tools ## Build the pinned e2e binaries (etcd, kube-apiserver, kcm, kubeadm, helm 3/4, hollow kubelet, OCI registry, metrics-server, upstream CCM) and golangci-lint into the cache.
	@e2e/upstreamccm/build.sh >/dev/null
	@hack/tools/build.sh >/dev/null

# The lab's own binaries, and metrics-server (e2e/metrics runs it; cached
# apart, keyed by its own module). The upstream CCM (the rest of `tools`) is
# built by e2e/takeover's TestMain when absent, beside the longer packages.
lab-tools:
	@e2e/tools/build.sh >/dev/null
	@e2e/metricsserver/build.sh >/dev/null

e2e: lab-tools ## End-to-end tests on a real control plane in a private network namespace.
	@# e2e/release builds the images inside the lab, which has no route out.
	@# e2e/soak runs both soaks short (3 minutes each): on the simulator and
	@# on the real services, whose admin on call marks ERROR what
	@# stackward-ccm reports LoadBalancerStuck (docs/development/realcloud.md).
	cd hack/imagetool && $(GO) mod download
	STACKWARD_TOOLS_DIR=$$(e2e/tools/build.sh --print-dir) \
	  $(GO) test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -p $(E2E_PARALLEL) $(E2E_LONGEST) ./e2e/...

lint: ## gofmt, go vet (with and without the e2e tag), go.mod/go.sum tidy, golangci-lint (.golangci.yml; built once into the cache).
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>&1); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags "e2e bench" ./e2e/...
	cd hack/imagetool && $(GO) vet ./...
	$(GO) mod tidy -diff
	cd hack/imagetool && $(GO) mod tidy -diff
	cd hack/tools && $(GO) mod tidy -diff
	@# golangci-lint is pinned in hack/tools/go.mod; the first run on a machine builds it (minutes).
	@lint=$$(hack/tools/build.sh)/golangci-lint && set -x && \
	  $$lint run ./... && \
	  cd hack/imagetool && $$lint run --config ../../.golangci.yml ./...

bench: lab-tools build ## Benchmarks on the simulator and a real apiserver: JSON report in bin/bench.json.
	@mkdir -p $(BIN)
	set -o pipefail; $(GO) test -count=1 -run '^$$' -bench 'ServicesToActive|SharedLoadBalancer' -benchtime 1x ./pkg/loadbalancer/ | tee $(BIN)/bench-loadbalancer.txt
	STACKWARD_TOOLS_DIR=$$(e2e/tools/build.sh --print-dir) STACKWARD_BENCH_REPORT=$(BIN)/bench.json \
	  STACKWARD_BENCH_GOBENCH=$(BIN)/bench-loadbalancer.txt STACKWARD_BIN_DIR=$(BIN) \
	  $(GO) test -count=1 -tags "e2e bench" -timeout 120m -run '^TestBench' -v ./e2e/bench/
	@echo "report: $(BIN)/bench.json"

bench-versus: lab-tools build ## Stackward beside the upstream CCM (LoadBalancer Services, node init): bin/bench-versus.json; STACKWARD_BENCH_CLOUDS=cloudsim is quick.
	@mkdir -p $(BIN)
	STACKWARD_TOOLS_DIR=$$(e2e/tools/build.sh --print-dir) STACKWARD_BENCH_REPORT=$(BIN)/bench-versus.json STACKWARD_BIN_DIR=$(BIN) \
	  $(GO) test -count=1 -tags "e2e bench" -timeout 90m -run '^TestBench(VersusUpstream|NodeInitVersusUpstream)$$' -v ./e2e/bench/
	@echo "report: $(BIN)/bench-versus.json"

soak: lab-tools ## Long run under seeded random faults and churn (SOAK=30m; SOAK=5m short): bin/soak.json and bin/soak.svg.
	@mkdir -p $(BIN)
	STACKWARD_TOOLS_DIR=$$(e2e/tools/build.sh --print-dir) STACKWARD_SOAK=$(SOAK) STACKWARD_SOAK_REPORT=$(BIN)/soak.json \
	  $(GO) test -count=1 -tags e2e -timeout 4h -run '^TestSoak$$' -v ./e2e/soak/
	@echo "report: $(BIN)/soak.json, plot: $(BIN)/soak.svg"

soak-real: lab-tools ## The soak on real OpenStack (Debian Zed) with its services restarted, SIGKILLed and frozen (SOAK=30m): bin/soak-real.json.
	@mkdir -p $(BIN)
	STACKWARD_TOOLS_DIR=$$(e2e/tools/build.sh --print-dir) STACKWARD_SOAK_REAL=$(SOAK) STACKWARD_SOAK_REPORT=$(BIN)/soak-real.json \
	  $(GO) test -count=1 -tags e2e -timeout 4h -run '^TestSoakRealCloud$$' -v ./e2e/soak/
	@echo "report: $(BIN)/soak-real.json, plot: $(BIN)/soak-real.svg"

ownership: ## Seeded generative ownership test, long (OWNERSHIP_SEEDS=200 x OWNERSHIP_STEPS=60; one seed: OWNERSHIP_SEED=n).
	STACKWARD_OWNERSHIP_SEEDS=$(OWNERSHIP_SEEDS) STACKWARD_OWNERSHIP_STEPS=$(OWNERSHIP_STEPS) STACKWARD_OWNERSHIP_SEED=$(OWNERSHIP_SEED) \
	  $(GO) test -count=1 -timeout 60m -run '^TestOwnershipGenerative$$' ./pkg/loadbalancer/

demo: lab-tools ## The whole system on this machine: simulated cloud, control plane, N nodes (default 5); Ctrl-C stops it.
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/stackward-demo ./e2e/demo
	STACKWARD_TOOLS_DIR=$$(e2e/tools/build.sh --print-dir) $(BIN)/stackward-demo -n $(N)

fuzz: ## Fuzz each target for FUZZTIME (default 2m): CSR checks, cloud.conf parsing, providerIDs, addresses.
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; fn=$${t##*:}; echo "fuzzing $$fn in ./pkg/$$pkg for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) ./pkg/$$pkg/; \
	done

images: ## Reproducible OCI images (linux/amd64, arm64) of stackward-ccm and stackward-approver: bin/images/<name>.
	@set -e; for arch in $(PLATFORMS); do \
	  echo "go build linux/$$arch: $(IMAGES)"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" \
	    -o $(BIN)/platforms/linux_$$arch/ $(addprefix ./cmd/,$(IMAGES)); \
	done
	@cd hack/imagetool && $(GO) build -o $(BIN)/imagetool .
	@$(BIN)/imagetool build -bins $(BIN)/platforms -out $(BIN)/images \
	  -version $(VERSION) -revision $(REVISION) -epoch $(SOURCE_DATE_EPOCH) $(IMAGES)

release: ## Push images and chart: make release REGISTRY=host/path [VERSION=vX.Y.Z] [PLAIN_HTTP=1].
	@VERSION='$(VERSION)' REGISTRY='$(REGISTRY)' PLAIN_HTTP='$(PLAIN_HTTP)' IMAGES='$(IMAGES)' hack/release.sh

realcloud: ## Real OpenStack (Debian Zed) in a namespace of its own, left running; prints how to use the openstack CLI.
	@hack/realcloud/lab.sh up $(REALCLOUD_DIR)

realcloud-down: ## Stop `make realcloud`'s cloud: make realcloud-down REALCLOUD_DIR=<its directory>.
	@hack/realcloud/lab.sh down $(REALCLOUD_DIR)

clean: ## Remove build output (not the tools cache).
	rm -rf $(BIN)
