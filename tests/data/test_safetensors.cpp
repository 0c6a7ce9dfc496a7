// safetensors: bit-identical round trips for every dtype, metadata, each kind of corrupt
// file -> one rg::Error, and atomic saves that never damage the previous good file.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "data/read_file.h"
#include "nn/safetensors.h"
#include "ops/ops.h"
#include "temp_dir.h"

using rg::DType;
using rg::Tensor;
using namespace rg::nn;

namespace {

// A tensor of `dtype` whose bytes are a fixed pseudo-random pattern (bool: 0/1).
Tensor patterned(const rg::Shape& shape, DType dtype, uint32_t seed) {
  Tensor t = rg::empty(shape, dtype);
  auto* bytes = static_cast<unsigned char*>(t.data_ptr());
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < t.nbytes(); ++i) {
    x = x * 1664525u + 1013904223u;
    bytes[i] = dtype == DType::b8 ? (x >> 24) & 1 : static_cast<unsigned char>(x >> 24);
  }
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()) == 0;
}

std::string file_bytes(const std::string& header, const std::string& data) {
  uint64_t n = header.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + header + data;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

NamedTensors every_dtype() {
  NamedTensors out;
  uint32_t seed = 1;
  for (DType d : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64, DType::b8})
    out.emplace_back(std::string("t_") + rg::dtype_name(d), patterned({3, 5}, d, seed++));
  return out;
}

}  // namespace

TEST_CASE("safetensors: every dtype round trips bit-identically, in order") {
  rg::test::TempDir dir;
  NamedTensors tensors = every_dtype();
  Tensor special =
      rg::tensor(std::vector<float>{0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::quiet_NaN(), 1e-45f});
  tensors.emplace_back("special", special);
  tensors.emplace_back("scalar", rg::scalar_tensor(3.5, DType::f64));
  tensors.emplace_back("empty", rg::zeros({0, 4}, DType::i32));
  tensors.emplace_back("a.b/c \"quoted\"", patterned({2, 2, 2}, DType::f32, 99));
  save_safetensors(dir.file("m.safetensors"), tensors);
  SafetensorsContents loaded = load_safetensors(dir.file("m.safetensors"));
  REQUIRE(loaded.tensors.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    CAPTURE(tensors[i].first);
    CHECK(loaded.tensors[i].first == tensors[i].first);
    CHECK(same_bytes(loaded.tensors[i].second, tensors[i].second));
  }
  CHECK(loaded.metadata.empty());
  // The data buffer starts 8-byte aligned.
  std::string bytes = rg::data::read_file(dir.file("m.safetensors"), "test");
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);
}

TEST_CASE("safetensors: non-contiguous tensors are saved by value") {
  Tensor t = patterned({3, 4}, DType::f32, 5);
  Tensor tt = t.transpose(0, 1);
  auto loaded = parse_safetensors(serialize_safetensors({{"tt", tt}}));
  CHECK(loaded.tensors[0].second.shape() == rg::Shape{4, 3});
  CHECK(rg::equal(loaded.tensors[0].second, tt.contiguous()));
}

TEST_CASE("safetensors: metadata round trips, escapes included") {
  SafetensorsMetadata meta = {{"format", "pt"},
                              {"step", "1200"},
                              {"note", "quote \" backslash \\ newline \n tab \t ctl \x01 é ✓"}};
  auto loaded = parse_safetensors(serialize_safetensors(every_dtype(), meta));
  CHECK(loaded.metadata == meta);
  // \u escapes written by other writers (Python's json.dumps) decode to UTF-8.
  auto other = parse_safetensors(file_bytes(
      R"({"__metadata__":{"k":"caf\u00e9 \ud83d\ude00 \/"},"x":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})",
      std::string(4, '\0')));
  CHECK(other.metadata.at("k") == "café 😀 /");
}

TEST_CASE("safetensors: a truncated file is an rg::Error at every cut") {
  const std::string good = serialize_safetensors(every_dtype(), {{"a", "b"}});
  uint64_t n;
  std::memcpy(&n, good.data(), 8);
  for (size_t cut : {size_t{0}, size_t{4}, size_t{7}, size_t{8}, size_t{8 + n / 2}, size_t{8 + n},
                     size_t{8 + n + 1}, good.size() / 2 + 40, good.size() - 1}) {
    CAPTURE(cut);
    CHECK_THROWS_AS(parse_safetensors(good.substr(0, cut)), rg::Error);
  }
  rg::test::TempDir dir;
  write_bytes(dir.file("cut"), good.substr(0, good.size() - 3));
  CHECK_THROWS_WITH_AS(load_safetensors(dir.file("cut")), doctest::Contains("cut"), rg::Error);
  CHECK_THROWS_WITH_AS(load_safetensors(dir.file("missing")), doctest::Contains("cannot open"),
                       rg::Error);
}

TEST_CASE("safetensors: each malformed header is one clear rg::Error") {
  const std::string f32x2(8, '\0');
  auto rejects = [](const std::string& bytes, const char* needle) {
    CHECK_THROWS_WITH_AS(parse_safetensors(bytes, "case"), doctest::Contains(needle), rg::Error);
  };
  // header length beyond the file, and absurdly large
  std::string huge = file_bytes("{}", "");
  uint64_t big = 1ull << 40;
  std::memcpy(huge.data(), &big, 8);
  rejects(huge, "beyond the file");
  // bad JSON, in several ways
  rejects(file_bytes("{\"x\":{\"dtype\":\"F32\",", f32x2), "bad JSON");
  rejects(file_bytes("{\"x\" {}}", f32x2), "bad JSON");
  rejects(file_bytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", f32x2),
          "only integers");
  rejects(file_bytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", f32x2),
          "negative");
  rejects(file_bytes("[1,2]", ""), "not start with '{'");
  rejects(file_bytes("{} trailing", ""), "expected end of input");
  rejects(file_bytes("{\"x\":\"unterminated}", ""), "missing closing quote");
  rejects(file_bytes(std::string(40, '[').insert(0, "{\"x\":"), ""), "nested too deeply");
  // unknown dtype, missing fields, shape x dtype mismatch
  rejects(file_bytes("{\"x\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]}}", f32x2),
          "unknown dtype 'F16'");
  rejects(file_bytes("{\"x\":{\"shape\":[2],\"data_offsets\":[0,8]}}", f32x2), "dtype");
  rejects(file_bytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", f32x2),
          "needs 12 bytes");
  // offsets: out of range, reversed, overlapping, hole, duplicate names
  rejects(file_bytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", f32x2),
          "beyond the data buffer");
  rejects(file_bytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", f32x2),
          "reversed");
  rejects(file_bytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                     "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                     f32x2),
          "overlap");
  rejects(file_bytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", f32x2),
          "belong to no tensor");
  rejects(file_bytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", f32x2),
          "belong to no tensor");
  rejects(file_bytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                     "\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                     f32x2),
          "duplicate key 'x'");
  // metadata must map strings to strings; BOOL bytes must be 0 or 1
  rejects(file_bytes("{\"__metadata__\":{\"k\":1}}", ""), "is not a string");
  rejects(file_bytes("{\"b\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}",
                     std::string("\x01\x02", 2)),
          "BOOL tensor 'b' has byte 2");
}

TEST_CASE("safetensors: bad tensor lists are rejected before touching the file") {
  CHECK_THROWS_WITH_AS(serialize_safetensors({{"a", rg::zeros({1})}, {"a", rg::zeros({1})}}),
                       doctest::Contains("duplicate tensor name 'a'"), rg::Error);
  CHECK_THROWS_AS(serialize_safetensors({{"", rg::zeros({1})}}), rg::Error);
  CHECK_THROWS_AS(serialize_safetensors({{"__metadata__", rg::zeros({1})}}), rg::Error);
}

TEST_CASE("safetensors: a failed save leaves the previous good file intact") {
  rg::test::TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  NamedTensors good = every_dtype();
  save_safetensors(path, good, {{"step", "1"}});
  const std::string good_bytes = rg::data::read_file(path, "test");
  auto only_the_good_file = [&] {
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      (void)entry;
      ++files;
    }
    CHECK(files == 1);  // no temp file left behind
    CHECK(rg::data::read_file(path, "test") == good_bytes);
    auto loaded = load_safetensors(path);
    CHECK(loaded.metadata.at("step") == "1");
    CHECK(same_bytes(loaded.tensors[0].second, good[0].second));
  };

  SUBCASE("exception mid-write (an undefined tensor after a good one)") {
    CHECK_THROWS_WITH_AS(save_safetensors(path, {{"ok", rg::ones({1000})}, {"bad", Tensor()}}),
                         doctest::Contains("'bad' is undefined"), rg::Error);
    only_the_good_file();
  }
  SUBCASE("the disk fills up mid-write (file size limit)") {
    struct rlimit old;
    REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
    auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = 64 * 1024;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
    bool threw = false;
    try {
      save_safetensors(path, {{"big", rg::zeros({1 << 20})}});  // 4 MiB
    } catch (const rg::Error& e) {
      threw = true;
      CHECK(std::string(e.what()).find("error writing") != std::string::npos);
    }
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    CHECK(threw);
    only_the_good_file();
  }
  SUBCASE("a directory that does not exist") {
    CHECK_THROWS_WITH_AS(save_safetensors(dir.file("no/such/dir/x.safetensors"), good),
                         doctest::Contains("cannot create"), rg::Error);
    only_the_good_file();
  }
  SUBCASE("a successful save replaces the file completely") {
    save_safetensors(path, {{"new", rg::ones({2})}}, {{"step", "2"}});
    auto loaded = load_safetensors(path);
    CHECK(loaded.tensors.size() == 1);
    CHECK(loaded.metadata.at("step") == "2");
  }
}
