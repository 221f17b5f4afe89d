// What the format's writer needs to store fields through codec chains: each field's coding for the
// chunk records and the chain table, and the encoder it calls per chunk.
#pragma once

#include <memory>
#include <vector>

#include "headrace/codec/chain.hpp"
#include "headrace/format/writer.hpp"

namespace headrace::codec {

// The chunk records' coding of a chain: a plain codec code when an older reader knows it, else the chain.
[[nodiscard]] format::FieldCoding field_coding(const Chain& chain);

// The encoder of a writer whose fields are stored through chains, each field's chain set before its
// first chunk (a writer choosing by sample, `codec="auto"`, sets it at the field's first write). A chunk
// is encoded on the CPU, or, when its codec only encodes on a GPU (ans, cascaded), its filters on the
// CPU and its codec by nvCOMP on GPU `device`, one chunk at a time.
class ChainEncoder {
 public:
  ChainEncoder(std::size_t fields, int device = 0);
  // Field `field` is stored through `chain` from now on; returns the coding the writer records. Throws
  // UnavailableError when the chain can be encoded nowhere here.
  format::FieldCoding use(std::uint32_t field, Chain chain);
  // The function the writer calls per chunk (it shares this encoder's state).
  [[nodiscard]] format::ChunkEncoder encoder() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Fills options.codings and options.encoder so that field i is stored through chains[i].
void store_fields_with(format::WriterOptions& options, std::vector<Chain> chains, int device = 0);

}  // namespace headrace::codec
