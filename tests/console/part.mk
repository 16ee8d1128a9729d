# tests/console/part.mk — the web console driven in a real headless Chromium
# (Debian's chromium with playwright-core from tests/console/package-lock.json,
# both installed by scripts/install-deps.sh), and the screenshots of its pages
# in docs/console/, which `make console-screenshots` takes again.
TEST_SCRIPTS += tests/console/test-console.sh

.PHONY: console-screenshots
console-screenshots: $(BUILD)/gpupoold $(BUILD)/gpupool $(BUILD)/fake/libnvidia-ml.so.1
	@mkdir -p docs/console
	SHOTS=$(CURDIR)/docs/console GP_BUILD=$(BUILD) sh tests/console/test-console.sh
