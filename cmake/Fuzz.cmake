# ETCD_AGENT_FUZZ: the libFuzzer build (./dev fuzz, build-fuzz). Clang only: GCC has no libFuzzer.
# Every translation unit gets the coverage instrumentation libFuzzer steers by
# (-fsanitize=fuzzer-no-link) with AddressSanitizer + UndefinedBehaviorSanitizer; only the fuzz
# targets (tests/fuzz/*_fuzz.cpp) link libFuzzer's main (-fsanitize=fuzzer). Debian's
# gRPC/protobuf/abseil archives are not instrumented and link as they are.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "ETCD_AGENT_FUZZ needs clang (libFuzzer): configure with "
                      "-DCMAKE_CXX_COMPILER=clang++-16 (packages clang-16, libclang-rt-16-dev)")
endif()
if(ETCD_AGENT_SANITIZE)
  message(FATAL_ERROR "ETCD_AGENT_FUZZ brings its own sanitizers: leave ETCD_AGENT_SANITIZE off")
endif()

# Debian's toml++ 3 reaches __builtin_unreachable() on some non-ASCII input: lib/common/toml_screen
# keeps such input from it, and the fuzzers keep UBSan's unreachable check to prove that it does.
set(ETCD_AGENT_FUZZ_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=undefined
                               -fno-omit-frame-pointer)
add_compile_options(-fsanitize=fuzzer-no-link ${ETCD_AGENT_FUZZ_SANITIZERS})
add_link_options(${ETCD_AGENT_FUZZ_SANITIZERS})
# After the build type's flags, so they win: fast enough to fuzz, line tables for the reports.
add_compile_options(-O1 -g1)
# libstdc++ 12 hides std::expected unless __cpp_concepts >= 202002L, which clang only defines from
# version 19, although clang 16 implements what <expected> needs (P0848): raise the value (as
# ./dev verify does for clang-tidy).
if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS 19)
  add_compile_options(-U__cpp_concepts -D__cpp_concepts=202002L)
endif()
message(STATUS "fuzz build: libFuzzer + address, undefined (targets: tests/fuzz/*_fuzz.cpp)")

# The generated protobuf code is linked, not fuzzed: built without instrumentation and at -O0,
# which halves the fuzz build's longest compiles (rpc.pb.cc). Call after add_subdirectory(proto).
function(etcd_agent_fuzz_plain_targets)
  foreach(_target IN LISTS ARGN)
    set_property(TARGET ${_target} PROPERTY COMPILE_OPTIONS -O0 -g0)
    if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS 19)
      set_property(TARGET ${_target} APPEND PROPERTY COMPILE_OPTIONS -U__cpp_concepts
                                                     -D__cpp_concepts=202002L)
    endif()
  endforeach()
endfunction()
