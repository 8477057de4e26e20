# The two set-up commands of the README: `make demo` and `make test`. Both install what is
# needed first (scripts/install-deps), so they work on a fresh machine.
SHELL := /bin/bash
export CCACHE_DIR ?= $(HOME)/.cache/tfjob/ccache
# Paths relative to the checkout, so a fresh clone elsewhere still hits the cache.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true
export PATH := /usr/local/go/bin:$(PATH)
JOBS ?= $(shell nproc)
# The Kubernetes versions make test-e2e runs on (scripts/versions.env; README, "Kubernetes versions"):
# the whole e2e suite on the default, the `every_version` subset on each of the others.
K8S_VERSION := $(shell . scripts/versions.env && echo $$K8S_VERSION)
K8S_SUBSET_VERSIONS := $(shell . scripts/versions.env && echo $$K8S_SUBSET_VERSIONS)
FUZZ_SECONDS ?= 60

.PHONY: all deps build build-tfjob install crd control-plane-default test test-unit test-local test-hostile test-tensorflow test-asan test-tsan test-fuzz test-e2e chaos demo bench fuzz check-headers check-layers check-size format tidy clean control-plane kueue sdk-venv go-prebuild

all: build

deps:
	@scripts/install-deps

build/release/build.ninja: | deps
	cmake --preset release >/dev/null

build: deps build/release/build.ninja
	cmake --build build/release -j $(JOBS)
	@ln -sf release/tfjob build/tfjob
	@ln -sf tfjob build/release/kubectl-tfjob

# The tfjob binary alone (what `make demo` runs): none of the tests, benchmarks or fuzzers.
build-tfjob: deps build/release/build.ninja
	cmake --build build/release -j $(JOBS) --target tfjob
	@ln -sf release/tfjob build/tfjob
	@ln -sf tfjob build/release/kubectl-tfjob

# tfjob and the kubectl plugin link `kubectl-tfjob` (so `kubectl tfjob get` works) into
# $(DESTDIR)$(PREFIX)/bin; docs/cli.md.
PREFIX ?= /usr/local
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 build/release/tfjob $(DESTDIR)$(PREFIX)/bin/tfjob
	ln -sf tfjob $(DESTDIR)$(PREFIX)/bin/kubectl-tfjob

# The CRD from config/crd/tfjobs.base.yaml and the committed OpenAPI copy (offline); after a
# K8S_VERSION bump, `scripts/gen-crd --fetch` refreshes the copy from a test control plane first.
crd:
	scripts/gen-crd

# Fast feedback: unit tests only. One test: make test-unit TESTS='Render.*'
test-unit: build
	ctest --test-dir build/release -L unit --output-on-failure -j $(JOBS) $(if $(TESTS),-R '$(TESTS)')

build/asan/build.ninja: | deps
	cmake --preset asan >/dev/null

# Unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer (clang).
test-asan: deps build/asan/build.ninja
	cmake --build build/asan -j $(JOBS)
	ctest --test-dir build/asan -L unit --output-on-failure -j $(JOBS)

build/tsan/build.ninja: | deps
	cmake --preset tsan >/dev/null

# The concurrent runtime (work queue, informer, recorder, elector, the operator's Manager and
# controller, the write pool and plan applier, the fake API server) under ThreadSanitizer.
test-tsan: deps build/tsan/build.ninja
	cmake --build build/tsan -j $(JOBS) --target controller_test common_test operator_test fake_api_server_test
	ctest --test-dir build/tsan -L unit --output-on-failure -j $(JOBS) -R '^(WorkQueue|Informer|EventRecorder|LeaderElector|Expectations|TokenBucket|HttpEndpoint|HttpServerBaseTest|WebhookServerTest|Registry|Manager|TfJobController|TfJobControllerFakeApi|PlanApplier|WritePool|FakeApiServer|BusyWorkers)\.'

# libFuzzer under ASan/UBSan, $(FUZZ_SECONDS) s each: file -> TFJob -> render, the watch-stream
# decoder (split-invariance checked), the kubeconfig reader, the API object decoders, the webhook's
# request handling (HTTP bytes or an AdmissionReview body -> HttpServerBase -> ServeTfJobReview). A crash fails.
FUZZERS := render watch_decoder kubeconfig object_decoder admission
test-fuzz: deps build/asan/build.ninja
	cmake --build build/asan -j $(JOBS) --target $(addsuffix _fuzzer,$(FUZZERS))
	for f in $(FUZZERS); do scripts/run-fuzzer build/asan/src/$${f}_fuzzer tests/fuzz/$$f $(FUZZ_SECONDS) || exit 1; done

fuzz: FUZZ_SECONDS = 600
fuzz: test-fuzz

# `tfjob run` with real processes (no cluster needed).
test-local: build
	python3 -m pytest -p no:cacheprovider -q tests/local

# Hostile input for every entry point (file reader, tfjob run, the operator's servers, kubeconfig,
# watch stream): the clear error, bounded time and memory; prints a table of time and peak RSS.
test-hostile: build
	python3 -m pytest -p no:cacheprovider -q tests/hostile

# Real TensorFlow (tensorflow-cpu in a venv cached outside the clone) through `tfjob run`.
test-tensorflow: build
	python3 -m pytest -p no:cacheprovider -q tests/tensorflow

# Every claimed version: the default in full, the others' kube-apiserver, -controller-manager and
# -scheduler only (scripts/build-k8s).
control-plane: deps
	for v in $(K8S_VERSION) $(K8S_SUBSET_VERSIONS); do scripts/build-k8s $$v >/dev/null || exit 1; done

# Kueue's manager, CRDs and webhook manifests from its Go module (pinned in scripts/versions.env),
# cached in ~/.cache/tfjob/kueue-<version>, for tests/e2e/test_kueue.py and test_multikueue.py.
kueue: deps
	@mkdir -p build
	flock build/go-prebuild.lock scripts/build-kueue >/dev/null

# Kubeflow's Python SDK (kubeflow-training, pinned) in a venv cached outside the clone, for
# tests/e2e/test_sdk.py (which calls the script too: a no-op once installed).
sdk-venv: deps
	scripts/sdk-venv >/dev/null

# The default version alone: what the whole e2e suite needs before it starts.
control-plane-default: deps
	@mkdir -p build
	flock build/go-prebuild.lock scripts/build-k8s $(K8S_VERSION) >/dev/null

# make test starts the Go programs the e2e suite needs first (the default control plane, then
# Kueue) at nice 10 in the background, as soon as the tools are installed: on a cold machine their
# module downloads and compiles fill the cores the C++ builds leave idle and the suites that wait
# (hostile, tensorflow, one fuzzer at a time) instead of running alone after them. The build holds
# build/go-prebuild.lock until it ends; control-plane-default and kueue take the same lock, so they
# wait for it and then find the cache complete (or build again in the foreground, printing why the
# background build failed: build/go-prebuild.log). Nothing starts when the lock is held already.
go-prebuild: deps
	@mkdir -p build; exec 9>build/go-prebuild.lock; flock -n 9 || exit 0; \
	setsid bash -c 'nice -n 10 scripts/build-k8s $(K8S_VERSION) && nice -n 10 scripts/build-kueue' \
	  >build/go-prebuild.log 2>&1 & \
	echo "go-prebuild: building the control plane $(K8S_VERSION) and Kueue beside the C++ suites (pid $$!, build/go-prebuild.log)"

# End-to-end: a real control plane (etcd, kube-apiserver, controller-manager, scheduler, KWOK),
# and real Kueue for tests/e2e/test_kueue.py and test_multikueue.py (a second cluster as its worker).
# The whole suite on K8S_VERSION, then the `every_version` subset on each of K8S_SUBSET_VERSIONS.
# When the other versions' programs are not cached yet (a cold run), they build at nice 10 beside
# the whole suite, which waits on the API server more than it computes (README, "How long");
# their log is build/k8s-subset-build.log. A failed suite stops that build.
# Last, the tests marked real_node in a cluster with the real node (tests/e2e/run --real-node,
# docs/test-bed.md); its programs and images build at nice 10 beside the suite too
# (build/real-node-build.log).
test-e2e: build control-plane-default kueue sdk-venv
	@mkdir -p build; \
	setsid bash -c 'for v in $(K8S_SUBSET_VERSIONS); do nice -n 10 scripts/build-k8s $$v >/dev/null || exit 1; done' \
	  >build/k8s-subset-build.log 2>&1 & sub=$$!; \
	setsid bash -c 'nice -n 10 scripts/build-node && nice -n 10 scripts/build-images' \
	  >build/real-node-build.log 2>&1 & node=$$!; \
	echo "tests/e2e/run   (building $(K8S_SUBSET_VERSIONS), pid $$sub, and the real node, pid $$node, beside it)"; \
	tests/e2e/run || { rc=$$?; kill -- -$$sub -$$node 2>/dev/null; exit $$rc; }; \
	wait $$sub || { cat build/k8s-subset-build.log; kill -- -$$node 2>/dev/null; echo "make test-e2e: building $(K8S_SUBSET_VERSIONS) failed" >&2; exit 1; }; \
	for v in $(K8S_SUBSET_VERSIONS); do \
	  echo "tests/e2e/run --kubernetes $$v -m every_version"; \
	  tests/e2e/run --kubernetes $$v -m every_version || { kill -- -$$node 2>/dev/null; exit 1; }; \
	done; \
	wait $$node || { cat build/real-node-build.log; echo "make test-e2e: building the real node failed" >&2; exit 1; }; \
	echo "tests/e2e/run --real-node"; \
	tests/e2e/run --real-node

# The operator SIGKILLed at random points, with more trials than make test's 30
# (tests/e2e/test_operator_chaos.py). A failure prints its seed: TFJOB_CHAOS_SEED=<seed> make chaos.
CHAOS_TRIALS ?= 200
chaos: build control-plane
	TFJOB_CHAOS_TRIALS=$(CHAOS_TRIALS) tests/e2e/run -s -k chaos_kill

test: deps go-prebuild build check-size test-unit test-local test-hostile test-tensorflow test-asan test-tsan test-fuzz test-e2e
	@echo "make test: all suites passed"

demo: build-tfjob
	@scripts/demo

# BENCH_ARGS picks operator parts (default: defaults,scaling,burst,big,idle,memory; see
# bench/operator_bench.py --help), e.g. BENCH_ARGS='--scenarios burst --workers 4 --qps 200'.
bench: build control-plane
	build/release/bench/render_benchmark
	build/release/bench/client_benchmark
	bench/operator_bench.py $(BENCH_ARGS) | tee build/bench-operator.md

# Function size (lizard, pinned in scripts/versions.env, in a venv under ~/.cache/tfjob): no
# function over 80 lines or complexity 15 outside the parsers but those of scripts/size-exceptions.txt;
# prints the ten largest. Run by make test before the long suites.
check-size: deps
	scripts/check-size

# The layers of docs/architecture.md section 1, the pure core's purity, test doubles only in tests
# (also a unit test, `layering`).
check-layers:
	python3 tests/check_layers.py src

check-headers: build/release/build.ninja
	cmake --build build/release --target tfjob_header_check

format:
	find src bench -name '*.h' -o -name '*.cc' | xargs clang-format -i

tidy: build/release/build.ninja
	run-clang-tidy -p build/release -quiet 'src/(common|api|tfjob)/.*\.cc$$' 2>/dev/null || \
	  find src/common src/api src/tfjob -name '*.cc' ! -name '*_test.cc' | xargs clang-tidy -p build/release --quiet

clean:
	rm -rf build
