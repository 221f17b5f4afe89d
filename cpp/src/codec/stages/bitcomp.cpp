// bitcomp and bitcomp_lossy: nvCOMP's Bitcomp, lossless over integers (floats as their bit patterns), or
// lossy over floats quantized to multiples of 2 x `error` so that no value moves by more than `error`.
// Bitcomp's native host functions (in libnvcomp) encode and decode the same streams on the CPU
// (docs/codecs/bitcomp.md, docs/codecs/bitcomp_lossy.md).
#include <cstring>

#include "headrace/error.hpp"
#include "stages.hpp"

namespace headrace::codec::stages {

constexpr CodecFacts bitcomp_facts{std::nullopt, std::uint64_t{1} << 24};
constexpr CodecFacts bitcomp_lossy_facts{std::nullopt, bitcomp_facts.max_block_bytes, false, true};

namespace {

// bitcompDataType_t: the integer types in the order of integer_type_names(), then fp16, fp32, fp64.
constexpr int bitcomp_fp32 = 9, bitcomp_fp64 = 10;
constexpr int bitcomp_lossless = 0, bitcomp_lossy_to_signed = 1;

const shim::NvcompBitcompHost* host_functions(std::string* why) {
  const shim::Nvcomp* library = shim::nvcomp();
  if (library == nullptr) {
    if (why != nullptr) *why = shim::why_no_nvcomp();
    return nullptr;
  }
  return library->bitcomp_host(why);
}

// A bitcomp plan, destroyed at scope exit.
struct Plan {
  const shim::NvcompBitcompHost& host;
  shim::NvcompBitcompHost::Handle handle = nullptr;
  ~Plan() {
    if (handle != nullptr) host.destroy_plan(handle);
  }
};

class BitcompBase : public CodecStage {
 public:
  BitcompBase(int data_type, int mode, int algorithm, std::uint64_t block)
      : CodecStage(block), data_type_(data_type), mode_(mode), algorithm_(algorithm) {}
  bool cpu_encodes(std::string* why) const override { return host_functions(why) != nullptr; }
  bool cpu_decodes(std::string* why) const override { return host_functions(why) != nullptr; }
  std::vector<std::byte> encode_block(std::span<const std::byte> raw) const override {
    const shim::NvcompBitcompHost& host = require();
    Plan plan{host};
    HEADRACE_EXPECT(host.create_plan(&plan.handle, raw.size(), data_type_, mode_, algorithm_) == 0, CodecError,
                    spec() + ": bitcompCreatePlan failed for " + std::to_string(raw.size()) + " bytes");
    std::vector<std::byte> stored(host.max_buflen(raw.size()));  // operator new aligns to 16: bitcomp asks 8
    HEADRACE_EXPECT(compress(host, plan.handle, raw, stored.data()) == 0, CodecError,
                    spec() + ": bitcomp's host compression failed for " + std::to_string(raw.size()) + " bytes");
    std::size_t written = 0;
    HEADRACE_EXPECT(host.compressed_size(stored.data(), &written) == 0 && written <= stored.size(), CodecError,
                    spec() + ": bitcompGetCompressedSize failed");
    stored.resize(written);
    return stored;
  }
  void decode_block(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const override {
    const shim::NvcompBitcompHost& host = require();
    const std::string expected = "bitcomp data of " + std::to_string(out.size()) + " bytes";
    // Bitcomp reads its input as 64-bit words: a copy when the chunk is not 8-aligned.
    std::vector<std::uint64_t> aligned;
    const void* input = in.data();
    if (reinterpret_cast<std::uintptr_t>(input) % 8 != 0) {
      aligned.resize((in.size() + 7) / 8);
      std::memcpy(aligned.data(), in.data(), in.size());
      input = aligned.data();
    }
    std::size_t stored = 0, decoded = 0;
    if (in.size() < 8 || host.compressed_size(input, &stored) != 0 || stored > in.size() ||
        host.uncompressed_size(input, &decoded) != 0)
      fail_decode(where, *this, expected, "a corrupt bitcomp header");
    expect_decoded(where, *this, decoded, out.size());
    Plan plan{host};
    if (host.create_plan_from_compressed(&plan.handle, input) != 0 || host.uncompress(plan.handle, input, out.data()) != 0)
      fail_decode(where, *this, expected, "a corrupt bitcomp stream");
  }
  shim::NvcompAlgorithm algorithm() const noexcept override { return shim::NvcompAlgorithm::bitcomp; }
  shim::NvcompOptions decompress_options() const override { return {}; }
  std::uint64_t max_block_bytes() const noexcept override { return bitcomp_facts.max_block_bytes; }

 protected:
  virtual int compress(const shim::NvcompBitcompHost& host, shim::NvcompBitcompHost::Handle plan,
                       std::span<const std::byte> raw, void* out) const = 0;
  [[nodiscard]] std::string algorithm_name() const { return algorithm_ == 1 ? "sparse" : "default"; }
  // nvcompBatchedBitcompCompressOpts_t: algorithm at 0, data_type at 4, delta at 8, mode at 16.
  [[nodiscard]] shim::NvcompOptions options(shim::NvcompType type, double delta) const {
    return shim::NvcompOptions{}.put(0, algorithm_).put(4, static_cast<int>(type)).put(8, delta).put(16, mode_);
  }

 private:
  static const shim::NvcompBitcompHost& require() {
    std::string why;
    const shim::NvcompBitcompHost* host = host_functions(&why);
    HEADRACE_EXPECT(host != nullptr, UnavailableError, "bitcomp on the CPU unavailable: " + why);
    return *host;
  }
  int data_type_, mode_, algorithm_;
};

class Bitcomp final : public BitcompBase {
 public:
  Bitcomp(IntegerType type, int algorithm, std::uint64_t block)
      : BitcompBase(static_cast<int>(type.bytes == 1 ? 0 : type.bytes == 2 ? 2 : type.bytes == 4 ? 4 : 6) + (type.is_signed ? 1 : 0),
                    bitcomp_lossless, algorithm, block),
        type_(std::move(type)) {}
  std::string_view name() const noexcept override { return "bitcomp"; }
  std::string configuration() const override { return with_block("type=" + type_.name + ",algorithm=" + algorithm_name()); }
  shim::NvcompOptions compress_options() const override { return options(nvcomp_type(type_), 0.0); }

 private:
  int compress(const shim::NvcompBitcompHost& host, shim::NvcompBitcompHost::Handle plan, std::span<const std::byte> raw,
               void* out) const override {
    return host.compress_lossless(plan, raw.data(), out);
  }
  IntegerType type_;
};

class BitcompLossy final : public BitcompBase {
 public:
  BitcompLossy(bool float64, double error, int algorithm, std::uint64_t block)
      : BitcompBase(float64 ? bitcomp_fp64 : bitcomp_fp32, bitcomp_lossy_to_signed, algorithm, block), float64_(float64), error_(error) {}
  std::string_view name() const noexcept override { return "bitcomp_lossy"; }
  std::string configuration() const override {
    return with_block(std::string("type=") + (float64_ ? "float64" : "float32") + ",error=" + shortest_text(error_) +
                      ",algorithm=" + algorithm_name());
  }
  std::optional<double> error_bound() const override { return error_; }
  shim::NvcompOptions compress_options() const override {
    return options(float64_ ? shim::NvcompType::float64 : shim::NvcompType::float32, 2 * error_);
  }

 private:
  int compress(const shim::NvcompBitcompHost& host, shim::NvcompBitcompHost::Handle plan, std::span<const std::byte> raw,
               void* out) const override {
    const std::size_t value = float64_ ? 8 : 4;
    HEADRACE_EXPECT(raw.size() % value == 0, UsageError,
                    spec() + ": a chunk of " + std::to_string(raw.size()) + " bytes is not whole " + std::to_string(value) + "-byte floats");
    if (float64_) return host.compress_lossy_fp64(plan, reinterpret_cast<const double*>(raw.data()), out, 2 * error_);
    return host.compress_lossy_fp32(plan, reinterpret_cast<const float*>(raw.data()), out, static_cast<float>(2 * error_));
  }
  bool float64_;
  double error_;
};

int algorithm_of(StageConfig& config) { return config.choice("algorithm", "default", {"default", "sparse"}) == "sparse" ? 1 : 0; }

}  // namespace

std::unique_ptr<Stage> make_bitcomp(StageConfig& config, const ElementShape& shape) {
  auto type = integer_type(config.choice("type", default_integer_type(shape), integer_type_names()));
  const int algorithm = algorithm_of(config);
  return std::make_unique<Bitcomp>(std::move(type), algorithm, read_block(config, default_block_bytes, bitcomp_facts.max_block_bytes));
}

// Never a default: the error bound is required, so nothing lossy happens unless it is asked for.
std::unique_ptr<Stage> make_bitcomp_lossy(StageConfig& config, const ElementShape& shape) {
  const bool floats = shape.dtype == format::DType::float32 || shape.dtype == format::DType::float64;
  HEADRACE_EXPECT(!shape.known || floats, UsageError,
                  "stage bitcomp_lossy quantizes floats; the field holds " + std::string(format::to_string(shape.dtype)));
  const std::string type = config.choice("type", shape.dtype == format::DType::float64 ? "float64" : "float32", {"float32", "float64"});
  const double error = config.positive("error", std::nullopt, 1e300);
  const int algorithm = algorithm_of(config);
  return std::make_unique<BitcompLossy>(type == "float64", error, algorithm,
                                        read_block(config, default_block_bytes, bitcomp_lossy_facts.max_block_bytes));
}

extern constexpr StageEntry bitcomp_stage{"bitcomp", StageKind::codec, "nvCOMP's Bitcomp over integers or float bit patterns",
                                     make_bitcomp, bitcomp_facts};
extern constexpr StageEntry bitcomp_lossy_stage{"bitcomp_lossy", StageKind::codec, "Bitcomp over floats quantized within an absolute error (lossy)",
                                     make_bitcomp_lossy, bitcomp_lossy_facts};

}  // namespace headrace::codec::stages
