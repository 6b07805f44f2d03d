#pragma once

// gRPC core's own log lines in a command-line client. gRPC writes them to stderr (at ERROR and
// above by default): on a TLS connection the server refuses, a dozen "Corruption detected ...
// TSI_DATA_CORRUPTED" lines per second of dialling. etcd-fleet reports every failed call itself,
// naming the endpoint and what to do, so these lines only repeat the error in gRPC's words and
// make its stderr differ from etcdctl's. Yet one of them is the only place gRPC 1.51 says *why*
// a TLS connection failed (the server's alert, e.g. "sslv3 alert bad certificate": the status of
// the call says only "Endpoint read failed"), so that one is kept for the error message.

#include <cstdint>
#include <string>

namespace etcdagent::etcd {

// Routes gRPC's lines through this module. debug = false: they are dropped, except an assertion
// failure (the line gRPC prints before it aborts the process). debug = true (etcd-fleet --debug):
// every line down to DEBUG is printed, as etcdctl --debug prints grpc-go's. GRPC_VERBOSITY or
// GRPC_TRACE in the environment are the user's choice: then gRPC prints as they say. Either way
// the last TLS error is recorded. Call it before the first channel.
void routeGrpcLog(bool debug);

// A position in the record of TLS failures gRPC logged in this process, taken before a dial.
std::uint64_t tlsErrorMark();

// The OpenSSL reason of the last TLS failure gRPC logged after `mark` ("sslv3 alert bad
// certificate", "certificate verify failed", "wrong version number"), or "" when none was.
std::string lastTlsErrorSince(std::uint64_t mark);

// What the operator can do about a TLS failure whose OpenSSL reason is `reason`, for a client
// that did (`presented_cert`) or did not present a client certificate; "" when the reason says
// nothing we can act on.
std::string tlsFailureHint(const std::string& reason, bool presented_cert);

}  // namespace etcdagent::etcd
