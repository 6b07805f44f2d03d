#include "agent/enroll/agent_channel.hpp"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "agent/enroll/agent_pki.hpp"
#include "etcd/endpoint.hpp"

namespace etcdagent::agent {

Result<std::shared_ptr<grpc::Channel>> agentChannel(const std::string& pki_dir,
                                                    const std::string& address,
                                                    Plaintext plaintext) {
  auto credentials = loadAgentCredentials(agentPkiPaths(pki_dir));
  if (!credentials) return fail(credentials.error());
  auto endpoint = etcd::parseEndpoint(address);
  if (!endpoint) return fail(endpoint.error());
  if (!*credentials) {
    if (plaintext == Plaintext::kAllow) {
      return grpc::CreateChannel(endpoint->target, grpc::InsecureChannelCredentials());
    }
    return fail(Errc::kFailedPrecondition,
                "this agent is not enrolled yet, so it has no certificate to call the agent at " +
                    address + " with: enroll it (etcd-fleet enroll --hosts HOST)");
  }
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = (*credentials)->trustPem();  // both CAs during a CA rotation
  options.pem_cert_chain = (*credentials)->cert(KeyUse::kApi).pem();
  options.pem_private_key = (*credentials)->keys.of(KeyUse::kApi).pem();
  return grpc::CreateChannel(endpoint->target, grpc::SslCredentials(options));
}

}  // namespace etcdagent::agent
