// The CPU assemble stage (pipeline/assemble_piece and its fused row loops) against a scalar
// reference that converts one element at a time with decode_normalise, the per-element step
// of Selection::read, which the loader tests compare batches with and the GPU assemble kernel
// follows: every output byte equal, and bytes outside the piece untouched, over many random
// configs (element types, _Unsigned, missing values masking or not, scale_factor and
// add_offset present or not, normalisation on or off, NaN fill, output dtypes, pieces with
// transposed axes, broadcast dims, long rows and count-1 dims), for every instruction set
// level of the row loops this CPU runs; and quotients (v - mean) / std placed next to the
// points halfway between two float32s, where the AVX-512 loops' multiplication by 1/std
// would round otherwise than the division if its check failed.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cubestream/error.hpp"
#include "cubestream/store.hpp"
#include "pipeline/assemble.hpp"
#include "zarr/cf_decode.hpp"

namespace cubestream::pipeline {
namespace {

// A UnitSource of `dt`; the assemble stage reads only the array's dtype and the encoding.
UnitSource source_of(const DataType& dt, CFEncoding enc) {
  nlohmann::json meta = {{"zarr_format", 2}, {"shape", {4}},        {"chunks", {4}},    {"dtype", dt.numpy_str()},
                         {"compressor", nullptr}, {"fill_value", nullptr}, {"filters", nullptr}, {"order", "C"}};
  return UnitSource{Array::from_json(std::make_shared<MemoryStore>(), "v", meta, 2), std::move(enc), "v"};
}

std::size_t out_size(OutputDType d) { return d == OutputDType::kFloat32 ? 4 : 2; }

const char* isa_name(RowIsa isa) { return isa == RowIsa::kAvx512 ? "avx512" : isa == RowIsa::kAvx2 ? "avx2" : "base"; }

// The reference: the piece's elements one at a time, in no particular order, each through
// decode_normalise and the scalar casts.
void reference_assemble(const Piece& pc, const std::uint8_t* unit, const UnitSource& src, const Normalisation& norm,
                        std::optional<float> fill, OutputDType out, std::uint8_t* tensor) {
  const DataType& dt = src.array.dtype();
  const std::size_t nl = pc.count.size();
  std::int64_t total = 1;
  for (auto c : pc.count) total *= c;
  for (std::int64_t e = 0; e < total; ++e) {
    std::int64_t rest = e, so = pc.src_offset, dofs = pc.dst_offset;
    for (std::size_t l = nl; l-- > 0;) {
      const std::int64_t i = rest % pc.count[l];
      rest /= pc.count[l];
      so += i * pc.src_stride[l];
      dofs += i * pc.dst_stride[l];
    }
    float f;
    decode_normalise(unit + static_cast<std::size_t>(so) * dt.size, dt, 1, src.encoding, norm, fill, &f);
    std::uint8_t* d = tensor + static_cast<std::size_t>(dofs) * out_size(out);
    if (out == OutputDType::kFloat32) {
      std::memcpy(d, &f, 4);
    } else {
      const std::uint16_t h = out == OutputDType::kBFloat16 ? float_to_bfloat16(f) : float_to_float16(f);
      std::memcpy(d, &h, 2);
    }
  }
}

const std::vector<DataType>& element_types() {
  static const std::vector<DataType> types = [] {
    std::vector<DataType> t = {DataType::boolean(), DataType::int_(1),   DataType::int_(2),   DataType::int_(4),
                               DataType::int_(8),   DataType::uint_(1),  DataType::uint_(2),  DataType::uint_(4),
                               DataType::uint_(8),  DataType::float_(2), DataType::float_(4), DataType::float_(8)};
    t.push_back({DTypeKind::kDateTime, 8, "ns"});
    t.push_back({DTypeKind::kTimeDelta, 8, "s"});
    return t;
  }();
  return types;
}

// Random bits of one element, or (often) one of a few values shared by the whole unit, so
// that missing values find matches; floats get NaNs with payloads, signalling NaNs,
// infinities, subnormals and -0.
struct ElementSource {
  const DataType& dt;
  std::mt19937_64& rng;
  std::vector<std::uint64_t> pool;

  std::uint64_t special_float_bits() {
    const int w = dt.size * 8;
    const int mant = dt.size == 2 ? 10 : dt.size == 4 ? 23 : 52;
    const std::uint64_t sign = std::uint64_t{1} << (w - 1);
    const std::uint64_t exp_all = ((std::uint64_t{1} << (w - 1 - mant)) - 1) << mant;
    const std::uint64_t quiet = std::uint64_t{1} << (mant - 1);
    switch (rng() % 7) {
      case 0: return exp_all | quiet | (rng() & (quiet - 1));      // quiet NaN with payload
      case 1: return exp_all | 1 | (rng() & (quiet - 1));          // signalling NaN
      case 2: return exp_all;                                      // +inf
      case 3: return sign;                                         // -0
      case 4: return (rng() & ((std::uint64_t{1} << mant) - 1)) | 1;  // subnormal
      case 5: return sign | exp_all;                               // -inf
      default: return 0;
    }
  }
  std::uint64_t random_bits() {
    if (dt.kind == DTypeKind::kBool) return rng() % 4 == 0 ? rng() % 256 : rng() % 2;
    const std::uint64_t mask = dt.size == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * dt.size)) - 1;
    if (dt.kind == DTypeKind::kFloat && rng() % 4 == 0) return special_float_bits() & mask;
    if ((dt.kind == DTypeKind::kDateTime || dt.kind == DTypeKind::kTimeDelta) && rng() % 8 == 0)
      return std::uint64_t{1} << 63;  // NaT
    if (dt.kind != DTypeKind::kFloat && rng() % 3 == 0) return (rng() % 9) & mask;  // small integers
    return rng() & mask;
  }
  std::uint64_t next() {
    if (pool.empty())
      for (int i = 0; i < 5; ++i) pool.push_back(random_bits());
    return rng() % 3 == 0 ? pool[rng() % pool.size()] : random_bits();
  }
};

// The float64 that masking compares for element bits `b` (so that missing values can be
// chosen to match some elements): CF decoding with only _Unsigned.
double loaded_value(std::uint64_t b, const DataType& dt, const std::optional<bool>& is_unsigned) {
  std::uint8_t raw[8];
  std::memcpy(raw, &b, dt.size);  // little-endian host: the low bytes
  CFEncoding only_unsigned;
  only_unsigned.is_unsigned = is_unsigned;
  double v;
  zarr::cf_decode_values(raw, dt, 1, only_unsigned, &v);
  return v;
}

struct Config {
  DataType dt;
  CFEncoding enc;
  Normalisation norm;
  std::optional<float> fill;
  OutputDType out = OutputDType::kFloat32;
  std::string describe() const {
    std::ostringstream s;
    s << dt.name() << " unsigned=" << (enc.is_unsigned ? (*enc.is_unsigned ? "T" : "F") : "-") << " missing=[";
    for (double m : enc.missing_values) s << m << ",";
    s << "] scale=" << (enc.scale_factor ? std::to_string(*enc.scale_factor) : "-")
      << " offset=" << (enc.add_offset ? std::to_string(*enc.add_offset) : "-") << " mean=" << norm.mean
      << " std=" << norm.std << " fill=" << (fill ? std::to_string(*fill) : "-") << " out=" << static_cast<int>(out);
    return s.str();
  }
};

Config random_config(std::mt19937_64& rng, ElementSource& es) {
  Config c;
  c.dt = es.dt;
  auto coin = [&](int n) { return rng() % static_cast<std::uint64_t>(n) == 0; };
  if ((c.dt.kind == DTypeKind::kInt || c.dt.kind == DTypeKind::kUInt) && coin(3)) c.enc.is_unsigned = coin(2);
  const int nm = static_cast<int>(rng() % 7);  // up to 6: more than the fused loop's 4
  for (int i = 0; i < nm; ++i) {
    switch (rng() % 4) {
      case 0: c.enc.missing_values.push_back(std::numeric_limits<double>::quiet_NaN()); break;
      case 1: c.enc.missing_values.push_back(std::uniform_real_distribution<double>(-1e3, 1e3)(rng)); break;
      default: c.enc.missing_values.push_back(loaded_value(es.next(), c.dt, c.enc.is_unsigned)); break;
    }
  }
  const double scales[] = {1.0, 0.01, -2.5, 1e-7, 3.0};
  const double offsets[] = {0.0, -0.0, 250.0, -1e5, 0.5};
  if (coin(2)) c.enc.scale_factor = coin(3) ? scales[rng() % 5] : std::uniform_real_distribution<double>(-3, 3)(rng);
  if (coin(2)) c.enc.add_offset = coin(3) ? offsets[rng() % 5] : std::uniform_real_distribution<double>(-500, 500)(rng);
  switch (rng() % 5) {
    case 0: c.norm = {0.0, 1.0}; break;
    case 1: c.norm = {-0.0, 1.0}; break;
    case 2: c.norm = {std::uniform_real_distribution<double>(-300, 300)(rng), 1.0}; break;
    default:
      c.norm = {std::uniform_real_distribution<double>(-300, 300)(rng),
                std::exp(std::uniform_real_distribution<double>(-8, 8)(rng))};
  }
  if (coin(2)) c.fill = coin(2) ? 0.0f : std::uniform_real_distribution<float>(-5, 5)(rng);
  c.out = static_cast<OutputDType>(rng() % 3);
  return c;
}

// A random piece of a random unit: layout dims taken from the unit's axes in any order (or
// broadcast), a box inside the unit, written into a larger C-order tensor.
struct Geometry {
  std::vector<std::int64_t> unit_shape;
  Piece piece;
  std::int64_t tensor_elements = 0;
};

Geometry random_geometry(std::mt19937_64& rng) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  Geometry g;
  const std::size_t rank = static_cast<std::size_t>(pick(1, 4));
  for (std::size_t a = 0; a < rank; ++a) g.unit_shape.push_back(pick(1, 6));
  if (pick(0, 3) == 0) g.unit_shape[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(rank) - 1))] = pick(300, 9000);
  std::vector<std::int64_t> ustride(rank, 1);
  for (std::size_t a = rank; a-- > 1;) ustride[a - 1] = ustride[a] * g.unit_shape[a];
  std::vector<std::size_t> axes(rank);
  for (std::size_t a = 0; a < rank; ++a) axes[a] = a;
  std::shuffle(axes.begin(), axes.end(), rng);
  const std::size_t used = static_cast<std::size_t>(pick(1, static_cast<std::int64_t>(rank)));
  std::vector<std::int64_t> layout_axis;  // -1: broadcast
  for (std::size_t i = 0; i < used; ++i) layout_axis.push_back(static_cast<std::int64_t>(axes[i]));
  const auto broadcasts = pick(0, 2);
  for (std::int64_t i = 0; i < broadcasts; ++i) {
    layout_axis.insert(layout_axis.begin() + pick(0, static_cast<std::int64_t>(layout_axis.size())), -1);
  }
  Piece& pc = g.piece;
  // Unused axes sit at a fixed index; used ones get a box.
  for (std::size_t i = used; i < rank; ++i) pc.src_offset += pick(0, g.unit_shape[axes[i]] - 1) * ustride[axes[i]];
  const std::size_t nl = layout_axis.size();
  std::vector<std::int64_t> tshape(nl), tstart(nl);
  for (std::size_t l = 0; l < nl; ++l) {
    if (layout_axis[l] < 0) {
      pc.count.push_back(pick(1, 3));
      pc.src_stride.push_back(0);
    } else {
      const auto a = static_cast<std::size_t>(layout_axis[l]);
      const std::int64_t lo = pick(0, g.unit_shape[a] - 1);
      pc.count.push_back(pick(1, g.unit_shape[a] - lo));
      pc.src_stride.push_back(ustride[a]);
      pc.src_offset += lo * ustride[a];
    }
    tstart[l] = pick(0, 2);
    tshape[l] = tstart[l] + pc.count[l] + pick(0, 2);
  }
  pc.dst_stride.assign(nl, 1);
  for (std::size_t l = nl; l-- > 1;) pc.dst_stride[l - 1] = pc.dst_stride[l] * tshape[l];
  for (std::size_t l = 0; l < nl; ++l) pc.dst_offset += tstart[l] * pc.dst_stride[l];
  g.tensor_elements = pc.dst_stride[0] * tshape[0];
  return g;
}

// One random case of the tests below: an element type (round-robin), a config, a geometry, a
// unit of random elements and the size of the tensor the piece writes into.
struct RandomCase {
  Config cfg;
  Geometry g;
  std::int64_t unit_elems = 1;
  std::vector<std::uint8_t> unit;
  UnitSource src;
  std::size_t bytes = 0;
};

RandomCase random_case(std::mt19937_64& rng, int round) {
  const auto& types = element_types();
  const DataType& dt = types[static_cast<std::size_t>(round) % types.size()];
  ElementSource es{dt, rng, {}};
  Config cfg = random_config(rng, es);
  Geometry g = random_geometry(rng);
  std::int64_t unit_elems = 1;
  for (auto e : g.unit_shape) unit_elems *= e;
  std::vector<std::uint8_t> unit(static_cast<std::size_t>(unit_elems) * dt.size);
  for (std::int64_t i = 0; i < unit_elems; ++i) {
    const std::uint64_t b = es.next();
    std::memcpy(unit.data() + static_cast<std::size_t>(i) * dt.size, &b, dt.size);
  }
  UnitSource src = source_of(dt, cfg.enc);
  const std::size_t bytes = static_cast<std::size_t>(g.tensor_elements) * out_size(cfg.out);
  return RandomCase{std::move(cfg), std::move(g), unit_elems, std::move(unit), std::move(src), bytes};
}

// Equal bytes, or where the first difference is.
::testing::AssertionResult same_bytes(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want) {
  if (got == want) return ::testing::AssertionSuccess();
  std::size_t at = 0;
  while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
  return ::testing::AssertionFailure() << "first differing byte " << at;
}

TEST(Assemble, RandomPiecesEqualTheScalarReferenceBitForBit) {
  std::mt19937_64 rng(6);
  int masked_configs = 0, fallback_configs = 0;
  for (int round = 0; round < 1500; ++round) {
    const RandomCase rc = random_case(rng, round);
    const auto& [cfg, g, unit_elems, unit, src, bytes] = rc;
    std::vector<std::uint8_t> want(bytes, 0xA5);
    reference_assemble(g.piece, unit.data(), src, cfg.norm, cfg.fill, cfg.out, want.data());
    std::size_t non_nan = 0;
    for (double m : cfg.enc.missing_values) non_nan += !std::isnan(m);
    masked_configs += non_nan > 0;
    fallback_configs += non_nan > 4;
    for (RowIsa isa : supported_row_isas()) {
      std::vector<std::uint8_t> got(bytes, 0xA5);
      assemble_piece(g.piece, unit.data(), src, cfg.norm, cfg.fill, cfg.out, got.data(), isa);
      ASSERT_TRUE(same_bytes(got, want)) << "round " << round << " (" << isa_name(isa) << "): " << cfg.describe();
    }
  }
  // The configs reached the paths they are meant to.
  EXPECT_GT(masked_configs, 500);
  EXPECT_GT(fallback_configs, 20);
}

// Block assembly (assemble_piece_band): the unit cut into random bands of whole elements, each
// band handed over alone as a decoder's block would be, writes what assemble_piece writes from
// the whole unit, for the pieces whose rows are contiguous in the unit (the others are left to
// assemble_piece, and assemble_piece_band refuses them).
TEST(Assemble, BandsThatTileTheUnitEqualTheWholeUnit) {
  std::mt19937_64 rng(16);
  int contiguous = 0, refused = 0;
  for (int round = 0; round < 1500; ++round) {
    const RandomCase rc = random_case(rng, round);
    const auto& [cfg, g, unit_elems, unit, src, bytes] = rc;
    const DataType& dt = src.array.dtype();
    if (!piece_rows_contiguous(g.piece, 1)) {
      ++refused;
      std::vector<std::uint8_t> out(bytes);
      EXPECT_THROW(assemble_piece_band(g.piece, unit.data(), 0, unit_elems, src, cfg.norm, cfg.fill, cfg.out,
                                       out.data()),
                   Error);
      continue;
    }
    ++contiguous;
    std::vector<std::uint8_t> want(bytes, 0xA5);
    assemble_piece(g.piece, unit.data(), src, cfg.norm, cfg.fill, cfg.out, want.data());
    for (RowIsa isa : supported_row_isas()) {
      std::vector<std::uint8_t> got(bytes, 0xA5);
      // Bands of 1 element to the whole unit, each in a buffer of its own.
      std::uniform_int_distribution<std::int64_t> len(1, std::max<std::int64_t>(1, unit_elems / 3));
      for (std::int64_t first = 0; first < unit_elems;) {
        const std::int64_t n = std::min(unit_elems - first, round % 5 == 0 ? unit_elems : len(rng));
        const std::vector<std::uint8_t> band(unit.begin() + first * static_cast<std::int64_t>(dt.size),
                                             unit.begin() + (first + n) * static_cast<std::int64_t>(dt.size));
        assemble_piece_band(g.piece, band.data(), first, n, src, cfg.norm, cfg.fill, cfg.out, got.data(), isa);
        first += n;
      }
      ASSERT_TRUE(same_bytes(got, want)) << "round " << round << " (" << isa_name(isa) << "): " << cfg.describe();
    }
  }
  EXPECT_GT(contiguous, 300);
  EXPECT_GT(refused, 50);
}

// The reciprocal's check (assemble_rows.cpp, recip_needs_division): one float32 value x per
// case and std = RN(x / m) for a point m halfway between two float32s, so that x / std lies
// within a few float64 ulps of m; and std near 2^130, where x / std is a float32 subnormal.
// Every level must give the reference's bits; the test also counts the cases where the bare
// product rounds otherwise than the quotient, so that it is known to reach them.
TEST(Assemble, QuotientsNextToFloat32HalfwayPointsRoundAsTheDivision) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> xs(1.0f, 1000.0f), gs(0.01f, 100.0f);
  const UnitSource src = source_of(DataType::float_(4), {});
  Piece pc;
  pc.count = {1};
  pc.src_stride = {1};
  pc.dst_stride = {1};
  int product_differs = 0, cases = 0;
  for (int round = 0; round < 20000; ++round) {
    const float x = round % 2 ? -xs(rng) : xs(rng);
    double sd;
    if (round % 10 == 9) {
      sd = std::ldexp(std::uniform_real_distribution<double>(1.0, 2.0)(rng), 120 + static_cast<int>(rng() % 40));
    } else {
      const float g = gs(rng);
      const double m = (static_cast<double>(g) + static_cast<double>(std::nextafter(g, 1e9f))) / 2;  // halfway
      sd = std::fabs(static_cast<double>(x)) / m;
    }
    const Normalisation norm{0.0, sd};
    const double q = static_cast<double>(x) / sd, qm = static_cast<double>(x) * (1.0 / sd);
    product_differs += std::bit_cast<std::uint32_t>(static_cast<float>(q)) !=
                       std::bit_cast<std::uint32_t>(static_cast<float>(qm));
    ++cases;
    for (OutputDType out : {OutputDType::kFloat32, OutputDType::kBFloat16}) {
      std::uint8_t want[4] = {}, got[4] = {};
      reference_assemble(pc, reinterpret_cast<const std::uint8_t*>(&x), src, norm, std::nullopt, out, want);
      for (RowIsa isa : supported_row_isas()) {
        assemble_piece(pc, reinterpret_cast<const std::uint8_t*>(&x), src, norm, std::nullopt, out, got, isa);
        ASSERT_EQ(std::memcmp(got, want, 4), 0)
            << isa_name(isa) << " x=" << x << " std=" << sd << " out " << static_cast<int>(out);
      }
    }
  }
  EXPECT_GT(product_differs, cases / 100) << "the cases do not reach the products that round otherwise";
}

TEST(Assemble, EveryFloat16SourceValue) {
  std::vector<std::uint8_t> unit(65536 * 2);
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto v = static_cast<std::uint16_t>(h);
    std::memcpy(unit.data() + 2 * h, &v, 2);
  }
  Piece pc;
  pc.count = {256, 256};
  pc.src_stride = {256, 1};
  pc.dst_stride = {256, 1};
  const UnitSource src = source_of(DataType::float_(2), {});
  for (OutputDType out : {OutputDType::kFloat32, OutputDType::kBFloat16, OutputDType::kFloat16}) {
    for (const Normalisation norm : {Normalisation{0.0, 1.0}, Normalisation{0.25, 3.0}}) {
      std::vector<std::uint8_t> want(65536 * out_size(out), 0xA5);
      reference_assemble(pc, unit.data(), src, norm, std::nullopt, out, want.data());
      for (RowIsa isa : supported_row_isas()) {
        std::vector<std::uint8_t> got(want.size(), 0xA5);
        assemble_piece(pc, unit.data(), src, norm, std::nullopt, out, got.data(), isa);
        ASSERT_EQ(got, want) << isa_name(isa) << " out " << static_cast<int>(out) << " mean " << norm.mean;
      }
    }
  }
}

TEST(Assemble, ComplexSourcesAreRefused) {
  const UnitSource src = source_of({DTypeKind::kComplex, 8, {}}, {});
  std::vector<std::uint8_t> unit(64), tensor(64);
  Piece pc;
  pc.count = {4};
  pc.src_stride = {1};
  pc.dst_stride = {1};
  try {
    assemble_piece(pc, unit.data(), src, {}, std::nullopt, OutputDType::kFloat32, tensor.data());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  }
}

}  // namespace
}  // namespace cubestream::pipeline
