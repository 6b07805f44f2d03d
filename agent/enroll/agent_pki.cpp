#include "agent/enroll/agent_pki.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/file_util.hpp"
#include "etcd/client.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::agent {
namespace {

Result<void> ensureDirectory(const std::string& dir) {
  if (::mkdir(dir.c_str(), kAgentPkiDirMode) != 0 && errno != EEXIST) {
    return fail(Errc::kIo, "cannot create " + dir + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return fail(Errc::kIo, "cannot stat " + dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return fail(Errc::kFailedPrecondition, dir + " is not a directory");
  }
  if ((st.st_mode & 077) != 0) {
    return fail(Errc::kFailedPrecondition,
                dir + " may be read by group or others (mode " +
                    std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                    std::to_string(st.st_mode & 7) + "): it holds private keys; chmod 700 " + dir);
  }
  return {};
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

std::string_view keyUseName(KeyUse use) {
  switch (use) {
    case KeyUse::kApi: return "api";
    case KeyUse::kEtcdServer: return "etcd-server";
    case KeyUse::kEtcdPeer: return "etcd-peer";
    case KeyUse::kEtcdClient: return "etcd-client";
  }
  return "?";
}

std::string AgentPkiPaths::key(KeyUse use) const {
  return dir + "/" + std::string(keyUseName(use)) + ".key";
}

std::string AgentPkiPaths::cert(KeyUse use) const {
  return dir + "/" + std::string(keyUseName(use)) + ".crt";
}

AgentPkiPaths agentPkiPaths(const std::string& dir) {
  return {.dir = dir, .ca_cert = dir + "/ca.crt"};
}

Result<AgentKeys> ensureAgentKeys(const AgentPkiPaths& paths) {
  // <data_root>/pki, then <data_root>/pki/<name>: both private.
  const std::string parent = std::filesystem::path(paths.dir).parent_path().string();
  if (!parent.empty() && parent != "/") {
    if (auto made = ensureDirectory(parent); !made) return fail(made.error());
  }
  if (auto made = ensureDirectory(paths.dir); !made) return fail(made.error());
  AgentKeys out;
  for (KeyUse use : kKeyUses) {
    const std::string path = paths.key(use);
    if (!exists(path)) {
      auto fresh = tls::Key::generate();
      if (!fresh) return fail(fresh.error());
      // kNo: a key another process wrote a moment ago wins, and is loaded below.
      if (auto written = tls::writeKeyFile(path, *fresh, tls::Overwrite::kNo);
          !written && written.error().code != Errc::kAlreadyExists) {
        return fail(written.error());
      }
    }
    auto key = tls::Key::load(path);
    if (!key) return fail(key.error());
    out.keys.push_back(std::move(*key));
  }
  return out;
}

Result<std::optional<AgentCredentials>> loadAgentCredentials(const AgentPkiPaths& paths) {
  if (!exists(paths.ca_cert)) return std::optional<AgentCredentials>{};
  AgentKeys keys;
  for (KeyUse use : kKeyUses) {
    auto key = tls::Key::load(paths.key(use));
    if (!key) {
      return fail(key.error().context("the agent is enrolled (" + paths.ca_cert +
                                      " exists) but its key is unusable"));
    }
    keys.keys.push_back(std::move(*key));
  }
  auto trust = loadAgentTrust(paths);
  if (!trust) return fail(trust.error());
  AgentCredentials creds{.trust = std::move(*trust), .certs = {}, .keys = std::move(keys)};
  for (KeyUse use : kKeyUses) {
    const std::string path = paths.cert(use);
    auto cert = tls::Certificate::load(path);
    if (!cert) {
      return fail(cert.error().context("the agent is enrolled (" + paths.ca_cert +
                                       " exists) but its certificate is unusable"));
    }
    if (cert->publicKeyDer() != creds.keys.of(use).publicKeyDer()) {
      return fail(Errc::kFailedPrecondition,
                  path + " does not certify " + paths.key(use) +
                      ": the files are from different enrollments; enroll the host again");
    }
    creds.certs.push_back(std::move(*cert));
  }
  return std::optional<AgentCredentials>(std::move(creds));
}

Result<void> storeAgentCredentials(const AgentPkiPaths& paths,
                                   const std::vector<tls::Certificate>& trust,
                                   const std::vector<tls::Certificate>& certs) {
  if (auto made = ensureDirectory(paths.dir); !made) return fail(made.error());
  for (KeyUse use : kKeyUses) {
    if (auto written =
            tls::writeCertificateFile(paths.cert(use), certs[static_cast<std::size_t>(use)],
                                      tls::kKeyFileMode, tls::Overwrite::kYes);
        !written) {
      return fail(written.error());
    }
  }
  return writeFileAtomic(paths.ca_cert, trustPem(trust), tls::kKeyFileMode);
}

std::string trustPem(const std::vector<tls::Certificate>& trust) {
  std::string out;
  for (const auto& ca : trust) out += ca.pem();
  return out;
}

std::string AgentCredentials::trustPem() const {
  return agent::trustPem(trust);
}

Result<std::vector<tls::Certificate>> loadAgentTrust(const AgentPkiPaths& paths) {
  auto text = readFile(paths.ca_cert);
  if (!text) return fail(text.error());
  auto cas = tls::certificatesFromPem(*text);
  if (!cas) return fail(cas.error().context(paths.ca_cert));
  return cas;
}

std::vector<tls::CertificateExpiry> certificateExpiry(const AgentCredentials& credentials) {
  std::vector<tls::CertificateExpiry> out;
  const auto add = [&](std::string_view name, const tls::Certificate& cert) {
    if (auto end = tls::notAfter(cert)) out.push_back({std::string(name), *end});
  };
  for (KeyUse use : kKeyUses) {
    if (static_cast<std::size_t>(use) < credentials.certs.size()) {
      add(keyUseName(use), credentials.cert(use));
    }
  }
  add("ca", credentials.ca());  // the first of a rotation's bundle: the CA that signs
  return out;
}

etcd::TlsConfig etcdClientTls(const AgentPkiPaths& paths) {
  return {.ca_file = paths.ca_cert,
          .cert_file = paths.cert(KeyUse::kEtcdClient),
          .key_file = paths.key(KeyUse::kEtcdClient)};
}

etcd::TlsConfig etcdPeerTls(const AgentPkiPaths& paths) {
  return {.ca_file = paths.ca_cert,
          .cert_file = paths.cert(KeyUse::kEtcdPeer),
          .key_file = paths.key(KeyUse::kEtcdPeer)};
}

}  // namespace etcdagent::agent
