// safetensors writer and validating reader, with the small JSON subset the header needs;
// see safetensors.h.
#include "nn/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>

#include "core/error.h"
#include "data/read_file.h"

namespace rg::nn {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors is little-endian");
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // as the reference implementation

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

// ---- JSON: objects (key order kept), arrays, strings, non-negative integers, literals.
struct Json {
  enum Kind { null, boolean, integer, string, array, object } kind = null;
  bool flag = false;
  uint64_t number = 0;
  std::string text;
  std::vector<Json> items;        // array elements, or object values
  std::vector<std::string> keys;  // object keys, parallel to items
};

class JsonParser {
 public:
  JsonParser(const std::string& text, const std::string& where) : s_(text), where_(where) {}

  Json parse_document() {
    Json value = parse_value(0);
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text after the top-level value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    RG_FAIL("safetensors: ", where_, ": bad JSON header at byte ", pos_, ": ", why);
  }
  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  char peek() {
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end");
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool literal(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }

  Json parse_value(int depth) {
    if (depth > 32) fail("nested too deeply");
    Json v;
    const char c = peek();
    if (c == '{') {
      v.kind = Json::object;
      ++pos_;
      if (peek() == '}') return ++pos_, v;
      while (true) {
        if (peek() != '"') fail("expected a string key");
        v.keys.push_back(parse_string());
        expect(':');
        v.items.push_back(parse_value(depth + 1));
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::array;
      ++pos_;
      if (peek() == ']') return ++pos_, v;
      while (true) {
        v.items.push_back(parse_value(depth + 1));
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::string;
      v.text = parse_string();
      return v;
    }
    if (c >= '0' && c <= '9') {
      v.kind = Json::integer;
      v.number = parse_integer();
      return v;
    }
    if (literal("true")) return v.kind = Json::boolean, v.flag = true, v;
    if (literal("false")) return v.kind = Json::boolean, v;
    if (literal("null")) return v;
    fail(c == '-' ? "negative numbers are not valid here" : "unexpected character");
  }

  uint64_t parse_integer() {
    uint64_t value = 0;
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      const uint64_t digit = static_cast<uint64_t>(s_[pos_] - '0');
      if (value > (UINT64_MAX - digit) / 10) fail("integer overflows 64 bits");
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ - start > 1 && s_[start] == '0') fail("leading zero in a number");
    if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E'))
      fail("only integers are valid in a safetensors header");
    return value;
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      value <<= 4;
      if (h >= '0' && h <= '9')
        value |= h - '0';
      else if (h >= 'a' && h <= 'f')
        value |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F')
        value |= h - 'A' + 10;
      else
        fail("bad hex digit in \\u escape");
    }
    return value;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // high surrogate: a low one must follow
            if (!literal("\\u")) fail("unpaired surrogate in \\u escape");
            const uint32_t low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("unpaired surrogate in \\u escape");
          }
          append_utf8(out, cp);
          break;
        }
        default:
          fail(std::string("bad escape \\") + e);
      }
    }
  }

  const std::string& s_;
  const std::string& where_;
  size_t pos_ = 0;
};

void write_json_string(std::string& out, const std::string& s) {
  out.push_back('"');
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      static const char* hex = "0123456789abcdef";
      out += "\\u00";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
}

// ---- writing: header, then each tensor's bytes, through `sink`
using Sink = std::function<void(const void*, size_t)>;

void emit(const NamedTensors& tensors, const SafetensorsMetadata& metadata, const Sink& sink) {
  std::vector<Tensor> host;
  host.reserve(tensors.size());
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      if (!first) header += ",";
      first = false;
      write_json_string(header, key);
      header += ":";
      write_json_string(header, value);
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, tensor] = tensors[i];
    RG_CHECK(!name.empty() && name != "__metadata__", "save_safetensors: tensor ", i,
             " has the invalid name '", name, "'");
    for (size_t j = 0; j < i; ++j)
      RG_CHECK(tensors[j].first != name, "save_safetensors: duplicate tensor name '", name, "'");
    RG_CHECK(tensor.defined(), "save_safetensors: tensor '", name, "' is undefined");
    Tensor t = tensor.detach().to(kCPU).contiguous();
    if (header.size() > 1) header += ",";
    write_json_string(header, name);
    header += ":{\"dtype\":\"";
    header += safetensors_name(t.dtype());
    header += "\",\"shape\":[";
    for (size_t d = 0; d < t.shape().size(); ++d) {
      if (d > 0) header += ',';
      header += std::to_string(t.shape()[d]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + ",";
    offset += t.nbytes();
    header += std::to_string(offset) + "]}";
    host.push_back(std::move(t));
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';  // data buffer starts 8-byte aligned
  const uint64_t n = header.size();
  sink(&n, 8);
  sink(header.data(), header.size());
  for (const Tensor& t : host)
    if (t.nbytes() > 0) sink(t.data_ptr(), t.nbytes());
}

// ---- reading
const Json* member(const Json& object, const char* key) {
  for (size_t i = 0; i < object.keys.size(); ++i)
    if (object.keys[i] == key) return &object.items[i];
  return nullptr;
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

Entry parse_entry(const std::string& name, const Json& info, const std::string& where) {
  const std::string what = where + ": tensor '" + name + "'";
  RG_CHECK(info.kind == Json::object, what, ": entry is not a JSON object");
  const Json* dtype = member(info, "dtype");
  const Json* shape = member(info, "shape");
  const Json* offsets = member(info, "data_offsets");
  RG_CHECK(dtype && dtype->kind == Json::string, what, ": missing or non-string \"dtype\"");
  RG_CHECK(shape && shape->kind == Json::array, what, ": missing or non-array \"shape\"");
  RG_CHECK(offsets && offsets->kind == Json::array && offsets->items.size() == 2, what,
           ": \"data_offsets\" must be an array of two integers");
  Entry e{name, DType::f32, {}, 0, 0};
  bool known = false;
  for (const auto& d : kDTypeNames)
    if (dtype->text == d.name) e.dtype = d.dtype, known = true;
  RG_CHECK(known, what, ": unknown dtype '", dtype->text,
           "' (supported: F32, F64, BF16, I32, I64, BOOL)");
  uint64_t numel = 1;
  for (const Json& dim : shape->items) {
    RG_CHECK(dim.kind == Json::integer, what, ": shape entries must be integers");
    RG_CHECK(dim.number <= (1ull << 48) && (dim.number == 0 || numel <= (1ull << 48) / dim.number),
             what, ": shape is too large");
    numel *= dim.number;
    e.shape.push_back(static_cast<int64_t>(dim.number));
  }
  for (const Json& o : offsets->items)
    RG_CHECK(o.kind == Json::integer, what, ": data_offsets must be integers");
  e.begin = offsets->items[0].number;
  e.end = offsets->items[1].number;
  RG_CHECK(e.begin <= e.end, what, ": data_offsets [", e.begin, ", ", e.end, "] are reversed");
  const uint64_t expected = numel * itemsize(e.dtype);
  RG_CHECK(e.end - e.begin == expected, what, ": shape ", shape_str(e.shape), " x ", dtype->text,
           " needs ", expected, " bytes but data_offsets [", e.begin, ", ", e.end, "] hold ",
           e.end - e.begin);
  return e;
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
  const Json root = JsonParser(header, where).parse_document();
  RG_CHECK(root.kind == Json::object, "safetensors: ", where, ": header is not a JSON object");

  SafetensorsContents out;
  std::vector<Entry> entries;
  for (size_t i = 0; i < root.keys.size(); ++i) {
    const std::string& key = root.keys[i];
    const Json& value = root.items[i];
    for (size_t j = 0; j < i; ++j)
      RG_CHECK(root.keys[j] != key, "safetensors: ", where, ": duplicate key '", key, "'");
    if (key == "__metadata__") {
      RG_CHECK(value.kind == Json::object, "safetensors: ", where,
               ": __metadata__ is not an object");
      for (size_t k = 0; k < value.keys.size(); ++k) {
        RG_CHECK(value.items[k].kind == Json::string, "safetensors: ", where, ": __metadata__['",
                 value.keys[k], "'] is not a string");
        out.metadata[value.keys[k]] = value.items[k].text;
      }
      continue;
    }
    entries.push_back(parse_entry(key, value, "safetensors: " + where));
  }

  // The byte ranges must tile the data buffer exactly: in range, no overlap, no hole.
  const uint64_t buffer = bytes.size() - 8 - n;
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

  const char* data = bytes.data() + 8 + n;
  for (const Entry& e : entries) {
    Tensor t = empty(e.shape, e.dtype);
    const size_t nbytes = e.end - e.begin;
    if (nbytes > 0) std::memcpy(t.data_ptr(), data + e.begin, nbytes);
    if (e.dtype == DType::b8) {
      const unsigned char* b = reinterpret_cast<const unsigned char*>(data + e.begin);
      for (size_t i = 0; i < nbytes; ++i)
        RG_CHECK(b[i] <= 1, "safetensors: ", where, ": BOOL tensor '", e.name, "' has byte ",
                 int(b[i]), " at element ", i);
    }
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

SafetensorsContents load_safetensors(const std::string& path) {
  return parse_safetensors(data::read_file(path, "load_safetensors"), path);
}

}  // namespace rg::nn
