# tests/style/part.mk — checks on the tree itself rather than on a program:
# the house style (.clang-format).
TEST_SCRIPTS += tests/style/test-format.sh
