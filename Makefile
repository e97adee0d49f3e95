# lws-operator. `make help` lists the targets. Everything installs what it needs itself:
# a virtualenv in .venv (Python packages from PyPI) and the control-plane binaries, built with
# the machine's Go from the Go module proxy into ~/.cache/lws-operator (outside the repository).

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LOCAL := .local
KUBECONFIG_LOCAL := $(LOCAL)/kubeconfig
TESTBED := $(PY) -m lws_testbed
# Options follow the subcommand: `python -m lws_testbed up --state-dir ...`.
# KUEUE=1: Kueue runs in the local cluster too (make cluster-up, make run).
KUEUE ?=
# KUBE_VERSION=<one of KUBE_VERSIONS in testbed/lws_testbed/versions.env>: the local cluster, its
# binaries and the real node run that Kubernetes version (default: versions.env's KUBE_VERSION).
# Exported as LWS_KUBE_VERSION to every recipe (the test bed, the tests, build-bins.sh).
KUBE_VERSION ?=
ifneq ($(KUBE_VERSION),)
export LWS_KUBE_VERSION := $(KUBE_VERSION)
endif
# Every supported version, and those make test runs the versions suite on beside the default.
KUBE_VERSIONS := $(shell . testbed/lws_testbed/versions.env && echo $$KUBE_VERSIONS)
TEST_KUBE_VERSIONS := $(shell . testbed/lws_testbed/versions.env && echo $$TEST_KUBE_VERSIONS)
KUEUE_ARG := $(if $(filter-out 0,$(KUEUE)),--kueue)
CLUSTER_ARGS := --state-dir $(LOCAL)/cluster --kubeconfig $(KUBECONFIG_LOCAL)
PYTEST_ARGS ?=
# Appended to a benchmark's command line (a later option wins): BENCH_ARGS="--scenario P2 --runs 1".
BENCH_ARGS ?=

.DEFAULT_GOAL := help

##@ Main

.PHONY: run
run: $(STAMP) ## Local cluster + CRD + operator + the seed's vLLM example, until Ctrl-C (KUEUE=1: under a GPU queue; KUBE_VERSION=)
	$(TESTBED) build $(KUEUE_ARG) >/dev/null
	$(PY) -m lws_testbed.devrun $(CLUSTER_ARGS) $(KUEUE_ARG)

.PHONY: test
test: lint typecheck cluster-bins-unless-external ## Everything CI checks: ruff, import-linter, mypy --strict, unit, cluster, Kueue and e2e tests; the versions suite on TEST_KUBE_VERSIONS too
	@# The other versions' binaries are built meanwhile, at the lowest priority (a no-op when
	@# cached; cold, it overlaps about 20 minutes of compiling with the tests).
	@mkdir -p $(LOCAL); if [ -z "$$LWS_TEST_KUBECONFIG" ]; then \
		nodes=$$($(TESTBED) preflight >/dev/null && echo all || echo control-plane); \
		for v in $(TEST_KUBE_VERSIONS); do \
			LWS_KUBE_VERSION=$$v nice -n 19 bash testbed/lws_testbed/build-bins.sh $$nodes; \
		done > $(LOCAL)/versions-build.log 2>&1 & \
	fi
	$(PY) -m pytest tests -m "not reliability_full and not kueue_full" --ignore=tests/e2e $(PYTEST_ARGS)
	@$(MAKE) --no-print-directory e2e-unless-external
	@if [ -n "$$LWS_TEST_KUBECONFIG" ]; then \
		echo "versions suite skipped: LWS_TEST_KUBECONFIG is set (it runs on local clusters)"; \
	else \
		for v in $(TEST_KUBE_VERSIONS); do \
			$(MAKE) --no-print-directory test-version KUBE_VERSION=$$v || exit 1; \
		done; \
	fi

# The e2e suite (make test-e2e) where this machine can run a real node.
.PHONY: e2e-unless-external
e2e-unless-external: $(STAMP)
	@if [ -n "$$LWS_TEST_KUBECONFIG" ]; then \
		echo "test-e2e skipped: LWS_TEST_KUBECONFIG is set (the e2e suite makes its own real-node cluster)"; \
	elif reason=$$($(TESTBED) preflight); then \
		$(MAKE) --no-print-directory test-e2e; \
	elif [ "$$CI" = true ]; then \
		echo "test-e2e: this machine cannot run a real node: $$reason (CI=true: failing)"; exit 1; \
	else \
		echo "test-e2e skipped: this machine cannot run a real node: $$reason"; \
	fi

.PHONY: test-version
test-version: $(STAMP) cluster-bins-unless-external e2e-images-unless-external ## The versions suite (tests marked `versions`) on KUBE_VERSION=: on a local cluster with the operator as a process, then on a real node with the operator installed from deploy/
	$(PY) -m pytest tests/cluster -m versions -rs $(PYTEST_ARGS)
	@if reason=$$($(TESTBED) preflight); then \
		$(PY) -m lws_testbed.e2e test $(CLUSTER_ARGS) -- -m versions -rs $(PYTEST_ARGS); \
	elif [ "$$CI" = true ]; then \
		echo "test-version: this machine cannot run a real node: $$reason (CI=true: failing)"; exit 1; \
	else \
		echo "test-version skipped the real node: this machine cannot run one: $$reason"; \
	fi

# The e2e images where this machine can run a real node (test-version needs them there).
.PHONY: e2e-images-unless-external
e2e-images-unless-external: $(STAMP)
	@if $(TESTBED) preflight >/dev/null; then \
		bash testbed/lws_testbed/realnode/node-packages.sh && \
		$(TESTBED) image pause && $(TESTBED) image workload && $(TESTBED) image operator; \
	fi

.PHONY: test-versions
test-versions: $(STAMP) ## Every cluster and e2e test make test runs, on every supported version (KUBE_VERSIONS; hours)
	@for v in $(KUBE_VERSIONS); do $(MAKE) --no-print-directory test-all-on-version KUBE_VERSION=$$v || exit 1; done

# One version of test-versions. A recipe line that names $(MAKE) runs even under `make -n`:
# such lines call make alone.
.PHONY: test-all-on-version
test-all-on-version: $(STAMP) cluster-bins-unless-external
	@echo "=== Kubernetes $(LWS_KUBE_VERSION)"
	$(PY) -m pytest tests/cluster -m "not reliability_full and not kueue_full" -rs $(PYTEST_ARGS)
	@$(MAKE) --no-print-directory e2e-unless-external

##@ Development

.PHONY: venv
venv: $(STAMP) ## Create .venv and install the package with its dev dependencies

$(STAMP): pyproject.toml testbed/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "error: Python >= 3.11 is needed (found " + sys.version.split()[0] + ")")'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]' -e ./testbed
	@touch $@

.PHONY: lint
lint: $(STAMP) ## ruff (lint and format check); import-linter: the layers, no cycles (pyproject.toml)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

.PHONY: fmt
fmt: $(STAMP) ## Format and fix what ruff can
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

.PHONY: typecheck
typecheck: $(STAMP) ## mypy --strict on the operator and the test bed
	$(VENV)/bin/mypy --strict lws_operator testbed/lws_testbed

.PHONY: test-unit
test-unit: $(STAMP) ## Unit and property tests only (no cluster)
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

.PHONY: test-reliability
test-reliability: $(STAMP) cluster-bins-unless-external ## All reliability tests: operator kills, bad input, faults, load (slow)
	$(PY) -m pytest tests/cluster/reliability $(PYTEST_ARGS)

.PHONY: test-kueue
test-kueue: $(STAMP) cluster-bins-unless-external ## All Kueue tests, against this operator, then against upstream LWS v0.9.0 (slow)
	$(PY) -m pytest tests/cluster/kueue $(PYTEST_ARGS)
	LWS_TEST_KUEUE_CONTROLLER=upstream $(PY) -m pytest tests/cluster/kueue $(PYTEST_ARGS)

.PHONY: test-cluster
test-cluster: $(STAMP) cluster-bins-unless-external ## Cluster tests (local control plane of KUBE_VERSION=..., or LWS_TEST_KUBECONFIG)
	$(PY) -m pytest tests/cluster $(PYTEST_ARGS)

##@ Build and deploy (need Docker, or CONTAINER_TOOL=podman; kind for test-kind)

IMG ?= lws-operator:dev
CONTAINER_TOOL ?= docker
KIND ?= kind
KIND_CLUSTER ?= lws-operator
KUBECTL ?= kubectl
OVERLAY ?= kind

.PHONY: docker-build
docker-build: ## Build the operator image $(IMG) (UBI 9 Python, non-root)
	$(CONTAINER_TOOL) build -t $(IMG) .

.PHONY: dockerfile
dockerfile: $(STAMP) ## Regenerate the Dockerfile from image.yaml (the one description of the image)
	$(PY) -m lws_testbed.imagespec > Dockerfile

.PHONY: docker-push
docker-push: ## Push $(IMG)
	$(CONTAINER_TOOL) push $(IMG)

# An overlay of deploy/overlays/$(OVERLAY) (or of the directory $(OVERLAY) when it is a path
# from the repository root, like the e2e tests' one) that runs $(IMG), in .local (git-ignored).
.PHONY: deploy-overlay
deploy-overlay:
	@mkdir -p $(LOCAL)/deploy
	@img='$(IMG)'; name="$${img%:*}"; tag="$${img##*:}"; \
	case "$$img" in *:*) case "$$tag" in */*) name="$$img"; tag=latest;; esac;; *) name="$$img"; tag=latest;; esac; \
	printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../%s]\nimages:\n  - name: lws-operator\n    newName: %s\n    newTag: "%s"\n' \
		'$(if $(findstring /,$(OVERLAY)),$(OVERLAY),deploy/overlays/$(OVERLAY))' "$$name" "$$tag" > $(LOCAL)/deploy/kustomization.yaml

.PHONY: deploy
deploy: deploy-overlay ## Install into the current kubectl context: OVERLAY=kind|openshift|cert-manager, IMG
	$(KUBECTL) apply --server-side --force-conflicts -k $(LOCAL)/deploy
	$(KUBECTL) -n lws-system rollout status deployment/lws-controller-manager --timeout=180s

.PHONY: undeploy
undeploy: deploy-overlay ## Remove what deploy installed (the CRD too: deletes every LeaderWorkerSet)
	$(KUBECTL) delete --ignore-not-found -k $(LOCAL)/deploy

.PHONY: test-kind
test-kind: $(STAMP) ## kind cluster + image + kind overlay, then the cluster tests against the deployed operator
	@command -v $(KIND) >/dev/null || { echo "test-kind: $(KIND) is not installed"; exit 1; }
	$(KIND) get clusters 2>/dev/null | grep -qx '$(KIND_CLUSTER)' || $(KIND) create cluster --name $(KIND_CLUSTER) --wait 120s
	@mkdir -p $(LOCAL)
	$(KIND) get kubeconfig --name $(KIND_CLUSTER) > $(LOCAL)/kind.kubeconfig
	$(MAKE) docker-build IMG=$(IMG)
	$(KIND) load docker-image $(IMG) --name $(KIND_CLUSTER)
	$(MAKE) deploy OVERLAY=kind IMG=$(IMG) KUBECTL="$(KUBECTL) --kubeconfig $(LOCAL)/kind.kubeconfig"
	LWS_TEST_KUBECONFIG=$(LOCAL)/kind.kubeconfig LWS_TEST_OPERATOR=external $(PY) -m pytest tests/cluster $(PYTEST_ARGS)

##@ Real nodes and e2e (Linux, root, Debian's packages)

.PHONY: node-packages
node-packages: ## Install the Debian packages a real node needs, when missing (containerd, runc, CNI, nftables, ...)
	@bash testbed/lws_testbed/realnode/node-packages.sh

.PHONY: node-bins
node-bins: $(STAMP) ## Build kubelet, kube-proxy (with the control plane, same pins; KUBE_VERSION=), CoreDNS and lws-probe
	$(TESTBED) build --real-nodes 1

.PHONY: e2e-images
e2e-images: node-packages node-bins ## Build the pause, workload and operator images (cached by their inputs)
	@$(TESTBED) image pause && $(TESTBED) image workload && $(TESTBED) image operator

.PHONY: e2e-up
e2e-up: e2e-images ## Local cluster + a real node + the operator deployed as users do (make deploy; KUBE_VERSION=); kubeconfig .local/kubeconfig
	$(PY) -m lws_testbed.e2e up $(CLUSTER_ARGS)

.PHONY: e2e-down
e2e-down: $(STAMP) ## Stop the e2e cluster and restore the host (fails, listing them, if differences remain)
	$(PY) -m lws_testbed.e2e down $(CLUSTER_ARGS)

.PHONY: test-e2e
test-e2e: e2e-images ## e2e on a real node (KUBE_VERSION=): e2e-up, the cluster suite against the deployed operator, tests/e2e, e2e-down, host check
	$(PY) -m lws_testbed.e2e test $(CLUSTER_ARGS) $(if $(PYTEST_ARGS),-- $(PYTEST_ARGS))

##@ Benchmarks

.PHONY: bench-create
bench-create: $(STAMP) cluster-bins ## Time to create 32 groups x 8 pods (median of 3; bench/results/)
	$(PY) -m bench.create_groups --groups 32 --size 8 --runs 3 $(BENCH_ARGS)

.PHONY: bench-recovery
bench-recovery: $(STAMP) cluster-bins ## Group recovery after a worker restart / deletion (median of 5)
	$(PY) -m bench.recovery --breaker restart --runs 5 $(BENCH_ARGS)
	$(PY) -m bench.recovery --breaker delete --runs 5 $(BENCH_ARGS)

.PHONY: bench
bench: $(STAMP) cluster-bins ## Ours vs upstream LWS v0.9.0, P1-P5, medians of 3 (bench/results/compare.md)
	$(PY) -m bench.compare --runs 3 $(BENCH_ARGS)

.PHONY: bench-scale
bench-scale: $(STAMP) cluster-bins ## Ours vs upstream at scale: 8,000 pods (P6), a readiness storm (P7), S400-S8000 (hours)
	$(PY) -m bench.compare --set scale --runs 3 $(BENCH_ARGS)

.PHONY: bench-recovery-real
bench-recovery-real: e2e-images ## Group recovery on real containers (group of 4; grace 0 s and 3 s), ours vs upstream, median of 5
	$(PY) -m bench.recovery_real --runs 5 $(BENCH_ARGS)

##@ Local cluster (KUBE_VERSION=<one of KUBE_VERSIONS in testbed/lws_testbed/versions.env> picks Kubernetes)

.PHONY: cluster-bins
cluster-bins: $(STAMP) ## Build the control-plane binaries into the cache (once per KUBE_VERSION; slow when cold; KUEUE=1: Kueue too)
	$(TESTBED) build $(KUEUE_ARG)

.PHONY: kueue-bins
kueue-bins: $(STAMP) ## Build Kueue into the cache (once; about 20 min on 2 cores when cold)
	$(TESTBED) build --kueue

# When this machine can run a real node (make test then runs the e2e suite), its kubelet and
# kube-proxy are built in the same go build as the control plane.
.PHONY: cluster-bins-unless-external
cluster-bins-unless-external: $(STAMP)
	@if [ -z "$$LWS_TEST_KUBECONFIG" ]; then \
		if $(TESTBED) preflight >/dev/null; then $(TESTBED) build --kueue --real-nodes 1; else $(TESTBED) build --kueue; fi; \
	fi

.PHONY: cluster-up
cluster-up: cluster-bins ## Start the local cluster in the background (KUBE_VERSION=1.33.13: that version; KUEUE=1: with Kueue); kubeconfig: .local/kubeconfig
	$(TESTBED) up $(CLUSTER_ARGS) $(KUEUE_ARG)

.PHONY: cluster-down
cluster-down: $(STAMP) ## Stop the background local cluster
	$(TESTBED) down $(CLUSTER_ARGS)

.PHONY: cluster-status
cluster-status: $(STAMP) ## Is the background local cluster running?
	$(TESTBED) status $(CLUSTER_ARGS)

.PHONY: clean
clean: ## Remove the virtualenv and local state (not the binary cache)
	-@[ -x $(PY) ] && $(TESTBED) down $(CLUSTER_ARGS) >/dev/null 2>&1 || true
	rm -rf $(VENV) $(LOCAL) .mypy_cache .ruff_cache .pytest_cache .hypothesis

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-16s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
