# tests/fuzz/part.mk — the corpus replay of every fuzz target (fuzz/part.mk
# builds the targets with a replaying main() in every ordinary build).
TEST_SCRIPTS += tests/fuzz/test-corpora.sh
TEST_SCRIPTS_DEPS += $(FUZZ_BINS)
