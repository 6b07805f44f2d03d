// certs issue / certs sign: client certificates for applications under the fleet CA (lib/tls/
// client_certs.hpp decides the names, the files and what a CSR may ask for; these commands
// translate flags and print). Bad arguments exit 128; a refusal (a file in the way, a CSR asking
// for too much, no CA) exits 1 and writes nothing. certs rotate lives in certs_rotate.cpp.

#include "fleetctl/output/certs.hpp"

#include <filesystem>

#include "fleet/inventory.hpp"
#include "fleetctl/commands/certs_rotate.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/util.hpp"
#include "tls/client_certs.hpp"

namespace etcdagent::fleet {
namespace {

// The inventory's client URLs for the usage lines ("" without a readable inventory), and a
// warning when its members serve plaintext: a client certificate is for TLS members.
std::string endpointsFor(Context& ctx) {
  auto inventory = loadInventory(ctx.global().fleet_path);
  if (!inventory || !*inventory) return "";
  std::string endpoints;
  bool plaintext = false;
  for (const auto& m : (*inventory)->members) {
    endpoints += (endpoints.empty() ? "" : ",") + m.client_url;
    plaintext = plaintext || m.client_url.starts_with("http://");
  }
  if (plaintext) {
    ctx.err() << "warning: members of " << ctx.global().fleet_path
              << " serve plaintext (http://): the certificate works once they serve TLS\n";
  }
  return endpoints;
}

std::string absolute(const std::string& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}

InputResult<std::chrono::seconds> validityFlag(Context& ctx) {
  auto validity = tls::parseCertificateValidity(ctx.flags().getString("validity"));
  if (!validity) return badArgs("--validity: " + validity.error().message);
  return *validity;
}

CommandResult runCertsIssue(Context& ctx) {
  if (ctx.args().size() != 1) {
    return badArgs(
        "certs issue takes one argument: the application's name (the certificate's CN, and its "
        "etcd user name once auth is on)");
  }
  const std::string& name = ctx.args().front();
  if (auto valid = tls::validateClientName(name); !valid) return badArgs(valid.error().message);
  auto validity = validityFlag(ctx);
  if (!validity) return std::unexpected(validity.error());
  if (auto r = requireFormat(ctx, printClientCert); !r) return r;
  auto pki = tls::loadFleetPki(ctx.global().fleet_path);
  if (!pki) return commandError(pki.error());
  auto issued = tls::issueClientCertificate(*pki, name, absolute(ctx.flags().getString("out")),
                                            {.validity = *validity});
  if (!issued) return commandError(issued.error());
  printClientCert(ctx.output(), {.name = name,
                                 .key = issued->files.key,
                                 .cert = issued->files.cert,
                                 .ca = issued->files.ca,
                                 .not_after = issued->cert.not_after,
                                 .cut_to_ca = issued->cut_to_ca,
                                 .endpoints = endpointsFor(ctx)});
  return {};
}

CommandResult runCertsSign(Context& ctx) {
  if (ctx.args().size() != 1) {
    return badArgs("certs sign takes one argument: the CSR file (PEM) the application made");
  }
  const std::string csr_path = ctx.args().front();
  auto validity = validityFlag(ctx);
  if (!validity) return std::unexpected(validity.error());
  if (auto r = requireFormat(ctx, printClientCert); !r) return r;
  const std::string out =
      ctx.flags().changed("out") ? ctx.flags().getString("out") : tls::certificatePathFor(csr_path);
  if (out.empty()) return badArgs("--out: give the file the certificate goes to");
  // Refused before the CSR is read or the CA's key loaded: nothing to undo.
  if (auto free = tls::certificateTargetFree(out); !free) return commandError(free.error());
  auto csr = tls::Csr::load(csr_path);
  if (!csr) return commandError(csr.error());
  auto pki = tls::loadFleetPki(ctx.global().fleet_path);
  if (!pki) return commandError(pki.error());
  auto signed_cert = tls::signClientCsr(*pki, *csr, {.validity = *validity});
  if (!signed_cert) return commandError(signed_cert.error().context(csr_path));
  if (auto written = tls::writeClientCertificate(out, signed_cert->cert); !written) {
    return commandError(written.error());
  }
  printClientCert(ctx.output(), {.name = csr->commonName(),
                                 .csr = csr_path,
                                 .cert = absolute(out),
                                 .ca = absolute(pki->paths.ca_cert),
                                 .not_after = signed_cert->info.not_after,
                                 .cut_to_ca = signed_cert->cut_to_ca,
                                 .endpoints = endpointsFor(ctx)});
  return {};
}

void validityFlagOf(FlagSet& f) {
  f.string("validity", 0, "365d",
           "how long the certificate is valid: days (90d) or a duration (720h); never beyond the "
           "fleet CA");
}

}  // namespace

std::vector<Command> certsCommands() {
  Command certs{.name = "certs",
                .summary = "Issues client certificates for applications, rotates the fleet's"};
  certs.children.push_back(
      {.name = "issue",
       .usage = "certs issue NAME [--out DIR] [--validity 365d]",
       .summary = "Makes a key and a client certificate for an application",
       .description =
           "\tWrites DIR/NAME.key (EC P-256, 0600), DIR/NAME.crt (CN NAME, clientAuth) and\n"
           "\tDIR/ca.crt (the fleet CA), and prints the etcdctl flags (--cacert --cert --key)\n"
           "\tand Patroni's etcd3 settings that use them. NAME is the etcd user name once\n"
           "\tauth is on: letters, digits, '.', '_', '-', '@'. Never overwrites a file; a\n"
           "\tca.crt of this fleet's CA already in DIR is kept. The key is made on this machine:\n"
           "\tfor a key that stays with the application, use certs sign.",
       .flags =
           [](FlagSet& f) {
             f.string("out", 0, ".", "the directory the files go to (made 0700 if missing)");
             validityFlagOf(f);
           },
       .run = runCertsIssue});
  certs.children.push_back(
      {.name = "sign",
       .usage = "certs sign FILE.csr [--out FILE.crt] [--validity 365d]",
       .summary = "Signs an application's CSR as a client certificate (the key stays with it)",
       .description =
           "\tThe certificate's CN is the CSR's (the etcd user name once auth is on), its\n"
           "\tusage clientAuth. A CSR that asks for more than a CN (subject alternative names,\n"
           "\tCA:TRUE, other key usages or extensions, subject fields besides CN) is refused,\n"
           "\tnaming what it asks for. Make one with: openssl req -new -newkey ec -pkeyopt\n"
           "\tec_paramgen_curve:prime256v1 -nodes -subj /CN=NAME -keyout NAME.key -out NAME.csr",
       .flags =
           [](FlagSet& f) {
             f.string("out", 0, "",
                      "where the certificate goes (default: FILE.crt beside the CSR)");
             validityFlagOf(f);
           },
       .run = runCertsSign});
  certs.children.push_back(certsRotateCommand());
  return {std::move(certs)};
}

}  // namespace etcdagent::fleet
