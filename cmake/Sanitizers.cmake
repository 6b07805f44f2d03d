# ETCD_AGENT_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer on every target (generated
# protobuf code and tests included) and every link. UB aborts instead of printing and carrying on,
# so it fails the process. Debian's gRPC/protobuf/abseil archives are not instrumented; they link
# as they are (statically, as in the product: ETCD_AGENT_STATIC_GRPC stays ON).
# Without -fsanitize=vptr: to check an object's dynamic type the UBSan runtime tests that its vtable
# is readable by writing it into a pipe(2), which fails with EMFILE when the process is out of
# descriptors; it then reports a valid object as having an "invalid vptr". The agent meets exactly
# that state on purpose (AgentEdges.TheApiAnswersAgainAfterDescriptorExhaustion), and the report
# aborted the agent there. ASan still catches calls through freed or overflowed objects.
set(ETCD_AGENT_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize=vptr
                               -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
add_compile_options(${ETCD_AGENT_SANITIZER_FLAGS})
add_link_options(${ETCD_AGENT_SANITIZER_FLAGS})
# Executables at a fixed address: UBSan keeps a record (file, line, type) for each check, millions
# of pointers that a position-independent executable relocates at every start (3.6 million
# relocations in unit_tests). Without them a sanitized process starts in half the time (0.6 s ->
# 0.3 s), and the integration tests start the sanitized etcd-fleet thousands of times.
add_link_options(-no-pie)
# After the build type's -O2 -g, so they win: -O1 -g1 (line tables) halves the compile time of an
# instrumented build (rpc.pb.cc: 33 s -> 16 s), and reports still name file:line. GCC 12's
# -Wmaybe-uninitialized gives false positives in libstdc++'s <regex> and Boost.Beast once ASan
# instruments them; the uninstrumented -Werror build keeps the warning.
add_compile_options(-O1 -g1 -Wno-maybe-uninitialized)

# The exit code of a process with a sanitizer error (not 1, a normal failure of the CLI), and
# where ASan and LSan write their report (log_path): <dir>/report.<pid>.
set(ETCD_AGENT_SANITIZER_EXITCODE 86)
set(ETCD_AGENT_SANITIZER_REPORTS ${PROJECT_BINARY_DIR}/sanitizer-reports/report)
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/sanitizer-reports)
set(ETCD_AGENT_LSAN_SUPPRESSIONS ${PROJECT_SOURCE_DIR}/cmake/sanitizer/lsan.supp)
configure_file(${PROJECT_SOURCE_DIR}/cmake/sanitizer/default_options.cpp.in
               ${PROJECT_BINARY_DIR}/sanitizer_default_options.cpp @ONLY)
message(STATUS "sanitizers: address, undefined (reports: ${ETCD_AGENT_SANITIZER_REPORTS}.<pid>)")

# The default options, compiled once (an object library) and linked into every executable.
add_library(sanitizer_default_options OBJECT ${PROJECT_BINARY_DIR}/sanitizer_default_options.cpp)

# What ./dev sanitize sets for the main build's integration tests, so that they drive this build's
# etcd-agent and etcd-fleet and fail on their children's sanitizer reports
# (tests/support/process.cpp): <build>/sanitizer.env, one NAME=VALUE per line.
function(etcd_agent_sanitizer_env)
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/sanitizer.env CONTENT
       "ETCD_AGENT_BINARY=$<TARGET_FILE:etcd-agent>
ETCD_FLEET_BINARY=$<TARGET_FILE:etcd-fleet>
ETCD_AGENT_SANITIZER_REPORTS=${ETCD_AGENT_SANITIZER_REPORTS}
ETCD_AGENT_SANITIZER_EXITCODE=${ETCD_AGENT_SANITIZER_EXITCODE}
")
endfunction()

# Adds the default options to every executable under `dir` (call it after the add_subdirectory()s):
# the runtimes read them from the executable itself, so they must be linked into each one.
function(etcd_agent_sanitize_executables dir)
  get_property(_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(_target IN LISTS _targets)
    get_target_property(_type ${_target} TYPE)
    if(_type STREQUAL "EXECUTABLE")
      target_sources(${_target} PRIVATE $<TARGET_OBJECTS:sanitizer_default_options>)
    endif()
  endforeach()
  get_property(_subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(_subdir IN LISTS _subdirs)
    etcd_agent_sanitize_executables(${_subdir})
  endforeach()
endfunction()
