#pragma once

// etcd-agent as a process: one event loop with the supervisor, the gRPC API, the HTTP endpoint
// (/healthz, /metrics, the discovery coordinator), the [bootstrap] flows, signals (SIGTERM and
// SIGINT stop, SIGHUP reloads), the systemd watchdog and STATUS= notifications.

#include <grpcpp/grpcpp.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "agent/bootstrap/joiner.hpp"
#include "agent/config/agent_config.hpp"
#include "agent/daemon/api_server.hpp"
#include "agent/daemon/api_socket_server.hpp"
#include "agent/enroll/api_mode.hpp"
#include "agent/enroll/rotation.hpp"
#include "agent/http/discovery_endpoint.hpp"
#include "agent/http/http_server.hpp"
#include "agent/http/status_endpoints.hpp"
#include "agent/maintenance/defrag_policy.hpp"
#include "agent/maintenance/restore_drill.hpp"
#include "agent/maintenance/snapshot_copier.hpp"
#include "agent/maintenance/snapshot_scheduler.hpp"
#include "agent/maintenance/snapshot_upload.hpp"
#include "agent/maintenance/space_recovery.hpp"
#include "agent/member/loop_clock.hpp"
#include "agent/member/member_store.hpp"
#include "agent/service/agent_service.hpp"
#include "agent/service/enroll_service.hpp"
#include "agent/supervisor/health.hpp"
#include "agent/supervisor/launcher.hpp"
#include "agent/supervisor/supervisor.hpp"
#include "agent/systemd/journal.hpp"
#include "agent/systemd/notify.hpp"

namespace etcdagent::agent {

class Agent {
 public:
  explicit Agent(AgentConfig config);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Runs until a signal stopped the member. 0; 1 when the agent could not start (the member
  // lock, state.json); 78 (EX_CONFIG: a human must act) when the API's address cannot be bound.
  int run();

 private:
  void serve();  // once the member lock is held and the plan loaded
  // What the API serves (agent/enroll/api_mode.hpp), from the agent's pki, its enrollment token
  // and agent.insecure.
  Result<void> prepareApi();
  // ApiMode::kEnrollment with the token in [enroll] token_file: an Enrollment for enroll_.
  Result<Enrollment> enrollmentFromToken(const AgentKeys& keys);
  // ApiMode::kAwaitingToken: looks for the token file every second; when it comes, enroll_ takes
  // it (the listener's self-signed certificate is for the same api key, so it stays).
  void watchForToken();
  [[nodiscard]] EnrollIdentity identity() const;
  // [enroll] token_file is there (any thread).
  [[nodiscard]] bool tokenFileExists() const;
  // On the loop, after Finish stored the certificates: the API turns to mutual TLS.
  void enrolled(const Enrolled& done);
  [[nodiscard]] ApiTransport mutualTls(const AgentCredentials& credentials);
  // On the loop, after a certificate or CA rotation changed the agent's files: the health probe
  // dials etcd with the new identity, and the API serves (and trusts) the new credentials.
  void rotated(const AgentCredentials& now, const std::string& what);
  [[nodiscard]] std::string statusText() const;
  // What the member's last health probe says, for the cluster-wide maintenance (cluster_ops.hpp).
  [[nodiscard]] MemberObservation maintenanceObservation() const;
  // [snapshot] scope = "cluster": campaign for the turn while the member is healthy.
  void observeSnapshotTurn(const MemberObservation& seen);
  bool listenApi();
  void listenHttp();
  void bootstrapByConfig();
  // [bootstrap] discovery: an agent without a plan registers itself. An etcd-agent:// coordinator
  // is relayed over mutual TLS, so an agent that is not enrolled yet waits for its enrollment.
  void applyConfiguredDiscovery();
  // Wires the HTTP discovery paths: the registry on a plaintext agent, the relay otherwise.
  void attachDiscovery();
  void feedWatchdog();
  // Refreshes the Status line every hour while the agent has certificates: their note counts
  // days to an expiry that no event announces.
  void watchCertificates();
  void waitSignal();
  void reload();
  void shutdown(int sig);
  void startFailed(const std::string& message, int exit_code);
  [[nodiscard]] EdgeStatus edgeStatus() const;

  AgentConfig config_;
  // The agent's certificate rotations (its pki files); the Agent service calls it.
  CertRotation rotation_;
  // First: the loop outlives everything that posts to it.
  boost::asio::io_context io_;
  EtcdLogSink log_;
  Notifier notifier_;
  AsioClock clock_;
  ChildLauncher launcher_;
  EtcdHealthSource health_;
  DiskMemberStore store_;
  Supervisor supervisor_;
  // [snapshot]: the scheduled snapshots of the member, taken off the loop by snapshot_jobs_.
  WorkerSnapshotJobs snapshot_jobs_;
  RestoreDrill drills_;
  ElectedSnapshotTurn snapshot_turn_;  // [snapshot] scope = "cluster"
  SnapshotScheduler snapshots_;
  // [snapshot] upload_command: each new verified snapshot copied off the host.
  SnapshotUploader uploads_;
  // Copies of each new snapshot pushed to the fleet's other agents.
  GrpcCopyTransport copy_transport_;
  SnapshotCopier copies_;
  // [nospace]: the NOSPACE alarm cleared by the leader's agent, off the loop.
  WorkerSpaceJobs space_jobs_;
  SpaceKeeper space_;
  // [defrag]: the leader's agent defragments the members whose files are mostly free space.
  WorkerDefragJobs defrag_jobs_;
  DefragKeeper defrag_;
  AgentService service_;
  // Relays the discovery requests of this agent's etcd to a coordinating agent (etcd-agent://
  // plans); before discovery_, which uses it.
  DiscoveryRelay relay_;
  // The coordinator (etcd v2 discovery) shares the HTTP endpoint; its tokens live on disk.
  DiscoveryEndpoint discovery_;
  HttpServer http_;
  unsigned short http_port_ = 0;  // set once HTTP listens; read on the loop
  // Enrollment while the agent waits for it, or the "enrolled already" answers; before api_,
  // which serves it.
  std::unique_ptr<EnrollService> enroll_;
  std::string waiting_for_enrollment_;  // the Status line's note, "" once enrolled
  // What the API serves (set by prepareApi, kMutualTls once enrolled); on the loop. A plaintext
  // agent serves its discovery registry on HTTP to anyone, any other only over the agent API.
  ApiMode api_mode_ = ApiMode::kPlaintext;
  std::optional<AgentKeys> keys_;  // while not enrolled
  std::string token_problem_;      // the last bad token file's error, said once
  bool enrolled_ = false;          // set on the loop by enrolled()
  // The gRPC API, and the thread that probes it and rebuilds it when it stops accepting.
  ApiServer api_;
  ApiMonitor api_monitor_;
  // Rebuilds the API for rotated credentials off the loop: the rebuild waits for the calls in
  // flight, and those may be waiting for the loop.
  std::jthread api_switch_;
  // The same API on agent.api_socket, for local callers identified by SO_PEERCRED.
  ApiSocketServer api_socket_;
  std::unique_ptr<Joiner> joiner_;
  boost::asio::steady_timer watchdog_;
  boost::asio::steady_timer token_watch_;
  boost::asio::steady_timer certificate_watch_;
  boost::asio::signal_set signals_;
  int exit_code_ = 0;
};

}  // namespace etcdagent::agent
