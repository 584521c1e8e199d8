// The host's serial LZ4 decoder as the reference of the parallel decoders' tests: the status it
// gives a block, and where each of a block's tokens lies.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "codec/logic/lz4_block.hpp"
#include "codec_test_util.hpp"

namespace cs_codec_test {

// The serial decoder's status for a block that must decode to `size` bytes.
inline cubestream::codec::logic::DecodeStatus lz4_serial_status(const Buf& in, std::size_t size) {
  Buf out(size);
  cubestream::codec::logic::Lz4SerialCopier copy;
  return cubestream::codec::logic::lz4_decode_exact_with(in.data(), in.size(), out.data(), size, copy);
}

// Input and output position of each token of a block, in order, up to the last sequence or the
// first that fails to parse (whose status lands in *status; kOk when the walk reached the last).
inline std::vector<std::pair<std::size_t, std::size_t>> lz4_token_positions(
    const Buf& enc, std::size_t size, cubestream::codec::logic::DecodeStatus* status) {
  namespace logic = cubestream::codec::logic;
  std::vector<std::pair<std::size_t, std::size_t>> tokens;
  std::size_t ip = 0, op = 0;
  const std::uint8_t* in = enc.data();
  for (;;) {
    const std::pair<std::size_t, std::size_t> at{ip, op};
    logic::Lz4Sequence s;
    bool last = false;
    *status = logic::lz4_read_sequence(in, enc.size(), &ip, op, size, &s, &last);
    if (*status != logic::DecodeStatus::kOk) return tokens;
    tokens.push_back(at);
    op += s.lit_len + s.match_len;
    if (last) return tokens;
  }
}

}  // namespace cs_codec_test
