// A job's GPUs joined by NCCL (loaded at run time, shim/nccl.hpp): one communicator a rank, made from one
// unique id that rank 0 draws and the job shares (Python broadcasts it over MPI), and grouped
// point-to-point transfers between the ranks' device buffers on a stream, what sort-last compositing
// and GPU-to-GPU hand-offs are built of. NVLink multicast (NVLS) stays off in every communicator: it is
// no use to point-to-point traffic, and a process that takes multicast memory can take the host's GPUs
// out of service for others.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "headrace/gpu/device.hpp"
#include "headrace/shim/nccl.hpp"

namespace headrace::gpu {

// One rank's part of a grouped exchange: `send_bytes` from send to `peer`, `receive_bytes` from `peer`
// into receive (either may be 0). Both ranks of a pair name each other with matching sizes.
struct Transfer {
  int peer = 0;
  CUdeviceptr send = 0;
  std::size_t send_bytes = 0;
  CUdeviceptr receive = 0;
  std::size_t receive_bytes = 0;
};

class Communicator {
 public:
  // Drawn once by one rank and given to every rank of the job. Throws UnavailableError without NCCL.
  [[nodiscard]] static shim::NcclUniqueId unique_id();

  // Joins the job as `rank` of `size` on GPU `device` (collective: every rank calls it with the same id).
  // Throws UnavailableError without NCCL, Error naming NCCL's reason when the ranks cannot connect.
  Communicator(const shim::NcclUniqueId& id, int size, int rank, int device);
  ~Communicator() noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  [[nodiscard]] int size() const noexcept { return size_; }
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int device() const noexcept { return device_.ordinal(); }
  [[nodiscard]] const Device& gpu() const noexcept { return device_; }
  // "NCCL 2.28.9 (path)".
  [[nodiscard]] std::string describe() const;

  // Every transfer at once, as one NCCL group on `stream` (a transfer to this rank itself is a device copy).
  void exchange(std::span<const Transfer> transfers, CUstream stream) const;

 private:
  const shim::Nccl& nccl_;
  Device device_;
  int size_ = 1, rank_ = 0;
  shim::NcclComm comm_ = nullptr;
};

}  // namespace headrace::gpu
