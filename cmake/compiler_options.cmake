# Warnings and sanitizers applied to every arun target through the arun_options interface.
add_library(arun_options INTERFACE)
# -Wno-missing-field-initializers: designated initializers deliberately leave members at
# their defaults; -Wextra would flag every one of them.
target_compile_options(arun_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                       -Wno-missing-field-initializers)
target_compile_definitions(arun_options INTERFACE BOOST_ASIO_NO_DEPRECATED)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # g++ 12 reports a false -Wrestrict on std::string concatenation at -O2 (TOOLCHAIN.md §10a).
  target_compile_options(arun_options INTERFACE -Wno-restrict)
endif()
if(ARUN_WERROR)
  target_compile_options(arun_options INTERFACE -Werror)
endif()
if(ARUN_SANITIZE)
  set(_san -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # clang 14's UBSan "function" check cannot compile split coroutine frames ("Cannot
    # represent a difference across sections"); every other UBSan check stays on.
    list(APPEND _san -fno-sanitize=function)
  endif()
  target_compile_options(arun_options INTERFACE ${_san})
  target_link_options(arun_options INTERFACE ${_san})
endif()

# The libraries the fuzzers exercise carry libFuzzer's coverage instrumentation in the clang
# sanitizer build, or the fuzzers are nearly blind (277 instrumented locations for the loader
# instead of ~15,000). The other test binaries link them unchanged: ASan's runtime provides
# the coverage callbacks.
function(arun_fuzz_instrument target)
  if(ARUN_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()

# A unity build of one of arun's libraries when ARUN_UNITY is on (the top CMakeLists.txt says why).
# Names in anonymous namespaces and file-static names must therefore be unique within a
# library: files that share a helper take it from an internal header of their room.
function(arun_unity target)
  if(NOT ARUN_UNITY)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${ARUN_UNITY_BATCH_SIZE})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # g++ counts a .cpp included into the unity file as a header, and then warns when a type
    # with a member of an anonymous-namespace type (every coroutine frame of a file-local
    # coroutine) is defined "in a header". That is a false alarm here: each anonymous
    # namespace still belongs to exactly one TU.
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()
