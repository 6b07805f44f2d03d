#pragma once

// Waker lets other threads (a signal handler's, a lease keeper's) wake a thread that waits for a
// lock, a leadership or a signal, and cancel the calls it has pending (Lock, Campaign, Observe):
// those wait without a deadline by design, for as long as another holder holds on.

#include <grpcpp/client_context.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include "common/error.hpp"
#include "etcd/client.hpp"

namespace etcdagent::etcd {

class Waker {
 public:
  // Wakes wait() and cancels every registered call; idempotent, callable from any thread.
  void fire();
  [[nodiscard]] bool fired() const;
  // Blocks until fire(). etcdctl's lock and elect hold until SIGINT/SIGTERM or the loss of their
  // session, so this is a wait without deadline by design.
  void wait();

  // Cancels `context` (grpc::ClientContext::TryCancel, thread-safe, also before the call starts)
  // on fire(), or at once if fire() already happened. The registration ends with the object.
  class Registration {
   public:
    Registration(Waker& waker, grpc::ClientContext& context);
    ~Registration();
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;

   private:
    Waker& waker_;
    grpc::ClientContext* context_;
  };

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool fired_ = false;
  std::vector<grpc::ClientContext*> contexts_;
};

// A unary call without deadline (it waits for other holders), cancelled through `waker`.
template <auto Method>
Result<ResponseOf<Method>> callUntilWoken(Client& client, const RequestOf<Method>& request,
                                          Waker& waker) {
  auto conn = client.connect();
  if (!conn) return fail(conn.error());
  grpc::ClientContext context;
  if (auto auth = client.authorize(context); !auth) return fail(auth.error());
  Waker::Registration registration(waker, context);
  StubOf<Method> stub(conn->channel);
  ResponseOf<Method> response;
  const grpc::Status status = (stub.*Method)(&context, request, &response);
  if (!status.ok()) return fail(client.errorFor(status, conn->endpoint));
  return response;
}

}  // namespace etcdagent::etcd
