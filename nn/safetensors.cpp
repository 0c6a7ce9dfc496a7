// safetensors writer and validating reader; see safetensors.h. The JSON header is parsed and
// written with nlohmann-json (ordered, so tensors keep their order); what safetensors adds on
// top of JSON (no duplicate keys, non-negative integers only, the entry fields, offsets that
// tile the data buffer) is checked here.
#include "nn/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "data/read_file.h"

namespace rg::nn {
namespace {

using Json = nlohmann::ordered_json;

static_assert(std::endian::native == std::endian::little, "safetensors is little-endian");
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // as the reference implementation
constexpr int kMaxDepth = 32;

// ---- dtypes
struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kDTypeNames[] = {{DType::f32, "F32"},   {DType::f64, "F64"},
                                     {DType::bf16, "BF16"}, {DType::i32, "I32"},
                                     {DType::i64, "I64"},   {DType::b8, "BOOL"}};

const char* safetensors_name(DType dtype) {
  for (const auto& d : kDTypeNames)
    if (d.dtype == dtype) return d.name;
  RG_FAIL("safetensors: no name for dtype ", dtype);
}

// ---- writing: header, then each tensor's bytes, through `sink`
using Sink = std::function<void(const void*, size_t)>;

std::string header_text(const Json& header) {
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception&) {  // strict: names and metadata must be UTF-8
    RG_FAIL("save_safetensors: a tensor name or metadata string is not valid UTF-8");
  }
  while (text.size() % 8 != 0) text += ' ';  // data buffer starts 8-byte aligned
  return text;
}

void emit(const NamedTensors& tensors, const SafetensorsMetadata& metadata, const Sink& sink) {
  std::vector<Tensor> host;
  host.reserve(tensors.size());
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = Json(metadata);
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, tensor] = tensors[i];
    RG_CHECK(!name.empty() && name != "__metadata__", "save_safetensors: tensor ", i,
             " has the invalid name '", name, "'");
    RG_CHECK(!header.contains(name), "save_safetensors: duplicate tensor name '", name, "'");
    RG_CHECK(tensor.defined(), "save_safetensors: tensor '", name, "' is undefined");
    Tensor t = tensor.detach().to(kCPU).contiguous();
    header[name] = {{"dtype", safetensors_name(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
    host.push_back(std::move(t));
  }
  const std::string text = header_text(header);
  const uint64_t n = text.size();
  sink(&n, 8);
  sink(text.data(), text.size());
  for (const Tensor& t : host)
    if (t.nbytes() > 0) sink(t.data_ptr(), t.nbytes());
}

// ---- reading
// Parses the header; rejects duplicate keys (JSON allows them, safetensors does not) and
// deep nesting while parsing.
Json parse_header(const std::string& header, const std::string& where) {
  std::vector<std::set<std::string>> keys;  // per open object
  auto check = [&](int depth, Json::parse_event_t event, Json& parsed) {
    RG_CHECK(depth <= kMaxDepth, "safetensors: ", where, ": bad JSON header: nested too deeply");
    if (event == Json::parse_event_t::object_start) keys.emplace_back();
    if (event == Json::parse_event_t::object_end) keys.pop_back();
    if (event == Json::parse_event_t::key && !keys.empty()) {
      const std::string key = parsed.get<std::string>();
      RG_CHECK(keys.back().insert(key).second, "safetensors: ", where, ": duplicate key '", key,
               "'");
    }
    return true;
  };
  try {
    return Json::parse(header, check);
  } catch (const Json::parse_error& e) {
    RG_FAIL("safetensors: ", where, ": bad JSON header at byte ", e.byte, ": ", e.what());
  }
}

// A non-negative integer of the header; `what` names it in errors.
uint64_t header_integer(const Json& v, const std::string& what) {
  RG_CHECK(!v.is_number_float(), what, ": only integers are valid in a safetensors header");
  RG_CHECK(!v.is_number_integer() || v.is_number_unsigned(), what,
           ": negative numbers are not valid here");
  RG_CHECK(v.is_number_unsigned(), what, " must be integers");
  return v.get<uint64_t>();
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

DType parse_dtype(const Json& info, const std::string& what) {
  auto it = info.find("dtype");
  RG_CHECK(it != info.end() && it->is_string(), what, ": missing or non-string \"dtype\"");
  const std::string& name = it->get_ref<const std::string&>();
  for (const auto& d : kDTypeNames)
    if (name == d.name) return d.dtype;
  RG_FAIL(what, ": unknown dtype '", name, "' (supported: F32, F64, BF16, I32, I64, BOOL)");
}

Entry parse_entry(const std::string& name, const Json& info, const std::string& where) {
  const std::string what = where + ": tensor '" + name + "'";
  RG_CHECK(info.is_object(), what, ": entry is not a JSON object");
  Entry e{name, parse_dtype(info, what), {}, 0, 0};
  auto shape = info.find("shape");
  auto offsets = info.find("data_offsets");
  RG_CHECK(shape != info.end() && shape->is_array(), what, ": missing or non-array \"shape\"");
  RG_CHECK(offsets != info.end() && offsets->is_array() && offsets->size() == 2, what,
           ": \"data_offsets\" must be an array of two integers");
  uint64_t numel = 1;
  for (const Json& dim : *shape) {
    const uint64_t d = header_integer(dim, what + ": shape entries");
    RG_CHECK(d <= (1ull << 48) && (d == 0 || numel <= (1ull << 48) / d), what,
             ": shape is too large");
    numel *= d;
    e.shape.push_back(static_cast<int64_t>(d));
  }
  e.begin = header_integer((*offsets)[0], what + ": data_offsets");
  e.end = header_integer((*offsets)[1], what + ": data_offsets");
  RG_CHECK(e.begin <= e.end, what, ": data_offsets [", e.begin, ", ", e.end, "] are reversed");
  const uint64_t expected = numel * itemsize(e.dtype);
  RG_CHECK(e.end - e.begin == expected, what, ": shape ", shape_str(e.shape), " x ",
           safetensors_name(e.dtype), " needs ", expected, " bytes but data_offsets [", e.begin,
           ", ", e.end, "] hold ", e.end - e.begin);
  return e;
}

void parse_metadata(const Json& value, const std::string& where, SafetensorsMetadata& out) {
  RG_CHECK(value.is_object(), "safetensors: ", where, ": __metadata__ is not an object");
  for (const auto& [key, v] : value.items()) {
    RG_CHECK(v.is_string(), "safetensors: ", where, ": __metadata__['", key, "'] is not a string");
    out[key] = v.get<std::string>();
  }
}

// The byte ranges must tile the data buffer exactly: in range, no overlap, no hole.
void check_tiling(const std::vector<Entry>& entries, uint64_t buffer, const std::string& where) {
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry* e : by_offset) {
    RG_CHECK(e->end <= buffer, "safetensors: ", where, ": tensor '", e->name, "' data_offsets [",
             e->begin, ", ", e->end, "] go beyond the data buffer (", buffer,
             " bytes): truncated file?");
    RG_CHECK(e->begin >= covered, "safetensors: ", where, ": tensors '", previous->name, "' and '",
             e->name, "' overlap (", e->name, " starts at ", e->begin, ", before ", covered, ")");
    RG_CHECK(e->begin == covered, "safetensors: ", where, ": bytes [", covered, ", ", e->begin,
             ") of the data buffer belong to no tensor");
    covered = e->end;
    previous = e;
  }
  RG_CHECK(covered == buffer, "safetensors: ", where, ": bytes [", covered, ", ", buffer,
           ") of the data buffer belong to no tensor");
}

Tensor read_tensor(const Entry& e, const char* data, const std::string& where) {
  Tensor t = empty(e.shape, e.dtype);
  const size_t nbytes = e.end - e.begin;
  if (nbytes > 0) std::memcpy(t.data_ptr(), data + e.begin, nbytes);
  if (e.dtype == DType::b8) {
    const unsigned char* b = reinterpret_cast<const unsigned char*>(data + e.begin);
    for (size_t i = 0; i < nbytes; ++i)
      RG_CHECK(b[i] <= 1, "safetensors: ", where, ": BOOL tensor '", e.name, "' has byte ",
               int(b[i]), " at element ", i);
  }
  return t;
}

}  // namespace

// ---- public API
std::string serialize_safetensors(const NamedTensors& tensors,
                                  const SafetensorsMetadata& metadata) {
  std::string out;
  emit(tensors, metadata,
       [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); });
  return out;
}

void write_safetensors(AtomicFile& file, const NamedTensors& tensors,
                       const SafetensorsMetadata& metadata) {
  emit(tensors, metadata, [&](const void* p, size_t n) { file.write(p, n); });
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const SafetensorsMetadata& metadata) {
  AtomicFile file(path);
  write_safetensors(file, tensors, metadata);
  file.commit();
}

SafetensorsContents parse_safetensors(const std::string& bytes, const std::string& source) {
  const std::string where = "'" + source + "'";
  RG_CHECK(bytes.size() >= 8, "safetensors: ", where, " is truncated: ", bytes.size(),
           " bytes, less than the 8-byte header length");
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  RG_CHECK(n <= bytes.size() - 8, "safetensors: ", where, ": header length ", n,
           " goes beyond the file (", bytes.size(), " bytes): truncated or not safetensors");
  RG_CHECK(n <= kMaxHeaderBytes, "safetensors: ", where, ": header length ", n,
           " exceeds the limit of ", kMaxHeaderBytes);
  const std::string header = bytes.substr(8, n);
  RG_CHECK(!header.empty() && header[0] == '{', "safetensors: ", where,
           ": header does not start with '{': not safetensors");
  const Json root = parse_header(header, where);
  RG_CHECK(root.is_object(), "safetensors: ", where, ": header is not a JSON object");

  SafetensorsContents out;
  std::vector<Entry> entries;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__")
      parse_metadata(value, where, out.metadata);
    else
      entries.push_back(parse_entry(key, value, "safetensors: " + where));
  }
  check_tiling(entries, bytes.size() - 8 - n, where);
  const char* data = bytes.data() + 8 + n;
  for (const Entry& e : entries) out.tensors.emplace_back(e.name, read_tensor(e, data, where));
  return out;
}

SafetensorsContents load_safetensors(const std::string& path) {
  return parse_safetensors(data::read_file(path, "load_safetensors"), path);
}

}  // namespace rg::nn
