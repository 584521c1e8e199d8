// The test-side blosc writer (blosc_test_encoder.hpp) writes the real format: libblosc (where
// installed) and the CPU codec read back its every layout. The GPU tests rely on it on the GPU
// machine, which has no libblosc.
#include "blosc_test_encoder.hpp"
#include "codec/logic/blosc_decode.hpp"
#include "codec_test_util.hpp"

#ifdef CUBESTREAM_TEST_HAVE_BLOSC
#include <blosc.h>
#endif

namespace cs_codec_test {
namespace {

TEST(BloscTestEncoder, EveryLayoutReadsBackThroughLibbloscAndTheCodec) {
  auto codec = make_b2b("blosc");
  int checked = 0;
  for (int compressor : {1, 4}) {
    for (int shuffle = 0; shuffle <= 2; ++shuffle) {
      for (std::size_t ts : {1, 2, 4, 8, 3, 24}) {
        for (std::size_t bs : {std::size_t{256}, std::size_t{4096}, std::size_t{65536}}) {
          for (bool split : {true, false}) {
            for (int level : {-1, 9}) {
              BloscEncodeOptions o;
              o.typesize = ts;
              o.blocksize = bs;
              o.shuffle = shuffle;
              o.split = split;
              o.compressor = compressor;
              o.level = compressor == 4 ? (level < 0 ? 1 : 9) : level;
              const Buf src = (ts + bs) % 2 ? climate_bytes(40000 + ts) : random_bytes(30001, 3);
              const Buf enc = blosc_test_encode(src, o);
              SCOPED_TRACE("compressor " + std::to_string(compressor) + " shuffle " + std::to_string(shuffle) +
                           " ts " + std::to_string(ts) + " bs " + std::to_string(bs) + " split " +
                           std::to_string(split) + " level " + std::to_string(level));
              ASSERT_EQ(decode(*codec, enc, src.size()), src);
#ifdef CUBESTREAM_TEST_HAVE_BLOSC
              Buf back(src.size());
              ASSERT_EQ(blosc_decompress_ctx(enc.data(), back.data(), back.size(), 1), static_cast<int>(src.size()));
              ASSERT_EQ(back, src);
#endif
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 2 * 3 * 6 * 3 * 2 * 2);
  // memcpyed and empty
  BloscEncodeOptions m;
  m.memcpyed = true;
  const Buf data = random_bytes(1000, 4);
  EXPECT_EQ(decode(*codec, blosc_test_encode(data, m), data.size()), data);
  EXPECT_TRUE(decode(*codec, blosc_test_encode({}, BloscEncodeOptions{}), 0).empty());
}

}  // namespace
}  // namespace cs_codec_test
