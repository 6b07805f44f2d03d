#pragma once

// One step of `etcd-fleet tls enable` on this agent's member (SetMemberTls): which plan the
// member runs next. Pure: the supervisor persists what this answers and restarts etcd with it.
//
// A plaintext member (Plan.tls false) goes to TLS_STAGE_PEER_READY (still http://, with its peer
// certificate for dialling https:// peers), then to Plan.tls (https:// on both ports, client and
// peer certificate auth). A member may skip the stage and may go back from it to plaintext; a
// TLS member stays TLS. Only an enrolled agent's member that has run takes a step: its data is
// what the cluster knows, and the certificates come from the enrollment.

#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// What the member runs: plaintext, the stage, or TLS.
enum class TlsStep { kPlaintext, kPeerReady, kTls };

TlsStep tlsStepOf(const v1::Plan& plan);
TlsStep tlsStepOf(const v1::SetMemberTlsRequest& request);
// "plaintext", "peer-ready", "tls": the journal's and the logs' spelling.
const char* tlsStepName(TlsStep step);

struct TlsConversionFacts {
  bool enrolled = false;      // the agent holds its certificates (pki ca.crt)
  bool started_once = false;  // the member has been healthy with its plan
};

// The plan of `state` after the step `request` asks for, or why not. A step to where the member
// already is answers the plan unchanged. Going to TLS rewrites every http:// peer URL of
// initial_cluster to https:// (a TLS plan lists only https:// URLs; etcd ignores the initial
// cluster of a member that has data, so this changes nothing but the record).
Result<v1::Plan> convertedPlan(const v1::MemberState& state, const v1::SetMemberTlsRequest& request,
                               const TlsConversionFacts& facts);

}  // namespace etcdagent::agent
