# Two commands a new user needs: `make demo` and `make test`. Both install what they need first.
SHELL := /bin/bash
VENV := .venv
# checkov pins its own boto3 (see requirements-checkov.txt), so it lives in a tool venv of its own.
CHECKOV_VENV := .venv-checkov
# The AWS CLI bundles a botocore of its own (see requirements-awscli.txt): a tool venv too.
AWSCLI_VENV := .venv-awscli
PYTHON := $(VENV)/bin/python
CDK := node_modules/.bin/cdk
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# jsii (the bridge under aws-cdk-lib) prints a large banner on every start under Node 20.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export CDK_DISABLE_VERSION_CHECK := 1

.PHONY: setup lambda-sandbox browser demo test bench synth lint deploy watch clean mutate

# What `python -m emulator demo` runs: the project's venv (the emulator, and the app it synthesizes), the
# cdk CLI, the Lambda sandbox. checkov (`make lint`) and the AWS CLI (the deploy page's) it never
# runs, so `make demo` leaves them to `make setup`.
DEMO_NEEDS := $(VENV)/.installed node_modules/.installed lambda-sandbox

setup: $(DEMO_NEEDS) $(CHECKOV_VENV)/.installed $(AWSCLI_VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-powertools-layer.txt requirements-shared-layer.txt
	test -x $(PYTHON) || python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

$(CHECKOV_VENV)/.installed: requirements-checkov.txt
	test -x $(CHECKOV_VENV)/bin/python || python3 -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-checkov.txt
	touch $@

$(AWSCLI_VENV)/.installed: requirements-awscli.txt
	test -x $(AWSCLI_VENV)/bin/python || python3 -m venv $(AWSCLI_VENV)
	$(AWSCLI_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-awscli.txt
	touch $@

# What Lambda handlers can import, for the runtime's Python (emulator/awslambda/sandbox.py); a no-op
# once built for the current pins and interpreter.
lambda-sandbox: $(VENV)/.installed
	$(PYTHON) -m emulator.awslambda.sandbox

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

demo: $(DEMO_NEEDS)
	$(PYTHON) -m emulator demo

# The console's browser tests drive Debian's headless Chromium and its driver. Installed here where
# make can (as root, with apt, as CI runs); anywhere else make stops before any other work, with the
# command to run.
CHROMIUM_PACKAGES := chromium chromium-driver
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing $(CHROMIUM_PACKAGES) for the console's browser tests"; \
		apt-get update -qq && apt-get install -y -qq $(CHROMIUM_PACKAGES) >/dev/null; \
	else \
		echo "make test needs Chromium and chromedriver on PATH for the console's browser tests. Run:" >&2; \
		echo "    sudo sh -c 'apt-get update && apt-get install -y $(CHROMIUM_PACKAGES)'" >&2; \
		echo "(on a system without apt, install Chromium and its chromedriver with its package manager)" >&2; \
		exit 1; \
	fi

# Three parts on the two cores: two shards of the tests on the emulator's deployment, and the rest on two workers (tests/parallel.py).
# The browser first: a missing one stops make at once, before the installs.
test: browser setup
	$(PYTHON) -m tests.parallel

# Seed designs against ours in the local emulator: bench/results.md, charts, the figures docs/ quotes.
bench: setup
	$(PYTHON) -m bench

synth: setup
	$(CDK) synth --quiet

lint: synth
	$(VENV)/bin/ruff check .
	$(VENV)/bin/cfn-lint -a cfn_lint_serverless.rules -- cdk.out/*.template.json
	$(CHECKOV_VENV)/bin/checkov -d cdk.out --framework cloudformation --compact --quiet --skip-download
	$(PYTHON) -m pytest -q tests/test_definitions.py tests/test_app_infrastructure.py tests/test_scanners_infrastructure.py

# Mutation testing of the logic modules against the fast runtime tests (tools/mutate.py), after changing
# one: `make mutate MODULES="alert_status map_retry"` for some of them. Not part of `make test`.
mutate: $(VENV)/.installed
	$(PYTHON) tools/mutate.py $(MODULES)

# The app in the local emulator, and `cdk watch` on it: save a handler or a definition, run it again.
watch: setup
	$(PYTHON) -m emulator serve --watch

deploy: setup
	$(CDK) deploy --all

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) $(AWSCLI_VENV) node_modules cdk.out .pytest_cache .lambda-sandbox
