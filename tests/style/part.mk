# tests/style/part.mk — checks on the tree itself rather than on a program:
# the house style (.clang-format) and the architecture (include rules, one
# namespace per part, single-file helpers static), which reads the objects of
# every part.
TEST_SCRIPTS += tests/style/test-format.sh tests/style/test-format-tarball.sh \
                tests/style/test-architecture.sh
TEST_SCRIPTS_DEPS += $(LIBS) $(BINS)
