# Provides the interface target `grpc_deps`: gRPC C++ + protobuf (+ abseil, c-ares, re2, OpenSSL)
# from Debian's packages, found with pkg-config. With ETCD_AGENT_STATIC_GRPC the archives (.a) are
# linked instead of the shared objects: the dynamic loader resolving ~57 libraries is what
# dominated a one-shot CLI's start-up (ARCHITECTURE.md §8).
find_package(PkgConfig REQUIRED)
pkg_check_modules(GRPCPP REQUIRED grpc++ protobuf)
find_program(PROTOC_EXECUTABLE protoc REQUIRED)
find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)

add_library(grpc_deps INTERFACE)
target_include_directories(grpc_deps SYSTEM INTERFACE ${GRPCPP_INCLUDE_DIRS})
target_compile_options(grpc_deps INTERFACE ${GRPCPP_CFLAGS_OTHER})

# Descriptors registered on first use instead of before main: the link wraps the constructor of
# protobuf's AddDescriptorsRunner (the static initializer of every generated .pb.cc, ours and
# libprotobuf's own) into the empty function of proto/lazy_registration.cpp, which says why that
# is safe. A link that forgets the library fails with an undefined reference, never silently.
set(_lazy_runner _ZN6google8protobuf8internal20AddDescriptorsRunnerC1EPKNS1_15DescriptorTableE)
add_library(protobuf_lazy STATIC ${PROJECT_SOURCE_DIR}/proto/lazy_registration.cpp)
target_link_options(grpc_deps INTERFACE -Wl,--wrap=${_lazy_runner})

if(ETCD_AGENT_STATIC_GRPC)
  # Libraries that must stay shared: the C runtime pieces.
  set(_keep_shared dl pthread rt m c atomic)
  set(_libs "")
  foreach(_flag IN LISTS GRPCPP_STATIC_LDFLAGS)
    if(_flag MATCHES "^-l(.+)$")
      set(_name "${CMAKE_MATCH_1}")
      if(_name IN_LIST _keep_shared)
        list(APPEND _libs "${_flag}")
        continue()
      endif()
      find_library(_archive_${_name} NAMES lib${_name}.a NO_CACHE)
      if(_archive_${_name})
        list(APPEND _libs "${_archive_${_name}}")
      else()
        list(APPEND _libs "${_flag}")
      endif()
    elseif(_flag MATCHES "^-Wl,--(push-state|pop-state|as-needed)")
      # dropped: only wrapped -latomic, which stays shared
    else()
      list(APPEND _libs "${_flag}")
    endif()
  endforeach()
  # Archives reference each other in cycles (abseil): let the linker rescan the group.
  list(REMOVE_DUPLICATES _libs)
  # protobuf_lazy inside the group: libprotobuf's own .pb.o refer to the wrapped name.
  target_link_libraries(grpc_deps INTERFACE -Wl,--start-group ${_libs} protobuf_lazy
                                            -Wl,--end-group)
  message(STATUS "gRPC/protobuf: linked statically")
else()
  target_link_libraries(grpc_deps INTERFACE protobuf_lazy ${GRPCPP_LINK_LIBRARIES})
  message(STATUS "gRPC/protobuf: linked dynamically")
endif()

# etcd_add_proto_library(NAME PROTOS a.proto b.proto ... [GRPC]) compiles protos relative to
# ${PROJECT_SOURCE_DIR}/proto into a static library whose headers are included as
# "etcd/mvccpb/kv.pb.h".
function(etcd_add_proto_library name)
  cmake_parse_arguments(ARG "" "" "PROTOS;DEPENDS" ${ARGN})
  set(_root ${PROJECT_SOURCE_DIR}/proto)
  set(_out ${CMAKE_CURRENT_BINARY_DIR}/gen)
  file(MAKE_DIRECTORY ${_out})
  set(_srcs "")
  foreach(_proto IN LISTS ARG_PROTOS)
    get_filename_component(_dir ${_proto} DIRECTORY)
    get_filename_component(_we ${_proto} NAME_WE)
    set(_base ${_out}/${_dir}/${_we})
    set(_gen ${_base}.pb.cc ${_base}.pb.h)
    set(_grpc_args "")
    # Only files that define services get gRPC stubs.
    file(STRINGS ${_root}/${_proto} _services REGEX "^service ")
    if(_services)
      list(APPEND _gen ${_base}.grpc.pb.cc ${_base}.grpc.pb.h)
      set(_grpc_args --grpc_out=${_out} --plugin=protoc-gen-grpc=${GRPC_CPP_PLUGIN})
    endif()
    # (Their descriptors are registered on first use, not before main: see protobuf_lazy above.)
    add_custom_command(
      OUTPUT ${_gen}
      COMMAND ${PROTOC_EXECUTABLE} -I ${_root} --cpp_out=${_out} ${_grpc_args} ${_root}/${_proto}
      DEPENDS ${_root}/${_proto}
      COMMENT "protoc ${_proto}"
      VERBATIM)
    list(APPEND _srcs ${_gen})
  endforeach()
  add_library(${name} STATIC ${_srcs})
  # A few large generated files: one at a time, even in a unity build.
  set_target_properties(${name} PROPERTIES UNITY_BUILD OFF)
  target_include_directories(${name} SYSTEM PUBLIC ${_out})
  target_link_libraries(${name} PUBLIC grpc_deps ${ARG_DEPENDS})
endfunction()
