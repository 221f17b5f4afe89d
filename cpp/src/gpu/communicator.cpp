#include "headrace/gpu/communicator.hpp"

#include <cstdlib>

#include "headrace/error.hpp"

namespace headrace::gpu {

shim::NcclUniqueId Communicator::unique_id() {
  const shim::Nccl& nccl = shim::require_nccl();
  shim::NcclUniqueId id{};
  nccl.check(nccl.get_unique_id(&id), "ncclGetUniqueId");
  return id;
}

Communicator::Communicator(const shim::NcclUniqueId& id, int size, int rank, int device)
    : nccl_(shim::require_nccl()), device_(device), size_(size), rank_(rank) {
  HEADRACE_EXPECT(size >= 1 && rank >= 0 && rank < size, UsageError,
                  "rank " + std::to_string(rank) + " of a job of " + std::to_string(size) + " ranks");
  // NCCL reads its settings when the first communicator is made; multicast stays off whatever the
  // environment says (the GPU machines' rule, and no transfer of ours gains from it).
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
  device_.make_current();  // NCCL's runtime takes the current context's GPU
  nccl_.check(nccl_.comm_init_rank(&comm_, size, id, rank), "ncclCommInitRank");
}

Communicator::~Communicator() noexcept {
  if (comm_ == nullptr) return;
  try {
    device_.make_current();
  } catch (...) {
  }
  shim::NcclResult pending = shim::nccl_success;
  nccl_.comm_get_async_error(comm_, &pending);
  // A communicator whose peers are gone would wait in destroy for ever: aborted instead.
  (void)(pending == shim::nccl_success ? nccl_.comm_destroy(comm_) : nccl_.comm_abort(comm_));
}

std::string Communicator::describe() const { return "NCCL " + nccl_.version_text() + " (" + nccl_.path + ")"; }

void Communicator::exchange(std::span<const Transfer> transfers, CUstream stream) const {
  device_.make_current();
  const CudaDriver& driver = require_driver();
  nccl_.check(nccl_.group_start(), "ncclGroupStart");
  try {
    for (const Transfer& t : transfers) {
      HEADRACE_EXPECT(t.peer >= 0 && t.peer < size_, UsageError,
                      "a transfer to rank " + std::to_string(t.peer) + " of " + std::to_string(size_));
      if (t.peer == rank_) {
        HEADRACE_EXPECT(t.send_bytes == t.receive_bytes, UsageError, "a rank's transfer to itself sends what it receives");
        if (t.send_bytes != 0) check(driver.cuMemcpyDtoDAsync(t.receive, t.send, t.send_bytes, stream), "cuMemcpyDtoDAsync");
        continue;
      }
      if (t.send_bytes != 0)
        nccl_.check(nccl_.send(reinterpret_cast<const void*>(t.send), t.send_bytes, shim::NcclType::uint8, t.peer, comm_, stream), "ncclSend");
      if (t.receive_bytes != 0)
        nccl_.check(nccl_.recv(reinterpret_cast<void*>(t.receive), t.receive_bytes, shim::NcclType::uint8, t.peer, comm_, stream),
                    "ncclRecv");
    }
  } catch (...) {
    nccl_.group_end();
    throw;
  }
  nccl_.check(nccl_.group_end(), "ncclGroupEnd");
}

}  // namespace headrace::gpu
