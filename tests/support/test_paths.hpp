#pragma once
// Where the built programs and the source tree are, for the tests. They come from one file
// CMake generates (test_paths.cpp), not from every test's compile flags: a checkout at another
// path then compiles that one file again, and ccache serves every other test object from an
// earlier checkout's build (docs/building.md, "How long it takes").

namespace arun::test {
const char* arun_binary_path();
const char* test_child_path();
const char* source_dir_path();
}  // namespace arun::test

/// The built `arun`.
#define ARUN_BINARY (::arun::test::arun_binary_path())
/// The child process integration tests drive (tests/helpers/test_child.cpp).
#define ARUN_TEST_CHILD (::arun::test::test_child_path())
/// The source tree.
#define ARUN_SOURCE_DIR (::arun::test::source_dir_path())
