// Protobuf descriptors registered on first use instead of before main (see
// cmake/GrpcDeps.cmake, where the link wraps the constructor this replaces).
//
// Every generated .pb.cc of protobuf 3.21 (ours, and the well-known types and descriptor.proto
// inside libprotobuf) has a static `AddDescriptorsRunner` whose constructor adds the file's
// serialized descriptor to the generated pool's database, parsing the whole file to index its
// symbols. A one-shot `etcd-fleet version` spent 3 M of its 4 M instructions there for our files,
// and, once those were lazy, still 0.7 M of 1.8 M for libprotobuf's own, for files it never
// touches. The runner is only an eager copy of what protobuf does anyway on first use:
// `descriptor()`, `GetReflection()`, JSON and text printing all go through AssignDescriptors,
// which adds the file and its imports to the pool under a lock; DescriptorPool::generated_pool()
// itself first registers descriptor.proto. What the wrap gives up is only a lookup by name, in
// the generated pool, of a type whose file nothing has used yet: nothing in this project does one
// (no Any, no server reflection), and the unit test ProtobufRegistration pins the behaviour.

namespace google::protobuf::internal {
struct DescriptorTable;
}  // namespace google::protobuf::internal

// The link's --wrap sends every call of
// google::protobuf::internal::AddDescriptorsRunner::AddDescriptorsRunner(const DescriptorTable*)
// (complete-object constructor, Itanium ABI: `this`, then the table) here.
// NOLINTBEGIN(bugprone-reserved-identifier): the name is the one --wrap gives the replacement
extern "C" void
__wrap__ZN6google8protobuf8internal20AddDescriptorsRunnerC1EPKNS1_15DescriptorTableE(
    void* /*runner*/, const google::protobuf::internal::DescriptorTable* /*table*/) {}
// NOLINTEND(bugprone-reserved-identifier)
