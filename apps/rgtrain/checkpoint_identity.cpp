// A checkpoint's identity and the checks of its optimizer state; see checkpoint_identity.h.
#include "apps/rgtrain/checkpoint_identity.h"

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <random>

#include "apps/rgtrain/util.h"
#include "core/hash.h"

namespace rgtrain {
namespace {

std::string field_of(const rg::nn::SafetensorsMetadata& md, const char* key) {
  auto it = md.find(key);
  return it == md.end() ? "(none)" : it->second;
}

std::string optional_count(std::optional<int64_t> v) { return v ? std::to_string(*v) : "(none)"; }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The step count a step entry holds; fails naming the file and the tensor when it is not one.
int64_t step_count(const std::string& file, const std::string& name, const rg::Tensor& t) {
  const double v = t.numel() == 1 ? t.item() : -1;
  if (!(std::isfinite(v) && v >= 0 && v <= 9e15 && v == std::floor(v)))
    fail(file, ": optimizer tensor '", name, "' is not a step count (shape ",
         rg::shape_str(t.shape()), t.numel() == 1 ? ", value " + fmt("%g", v) : std::string(), ")");
  return static_cast<int64_t>(v);
}

// The first element of `t` (contiguous, on the cpu) that is NaN or infinite, or -1.
int64_t first_non_finite(const rg::Tensor& t) {
  const int64_t n = t.numel();
  if (t.dtype() == rg::DType::f32) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(p[i])) return i;
  } else if (t.dtype() == rg::DType::f64) {
    const double* p = t.data<double>();
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(p[i])) return i;
  } else {
    const std::vector<double> v = t.to_vector<double>();
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(v[i])) return i;
  }
  return -1;
}

}  // namespace

std::string new_run_id() {
  std::random_device device;
  const uint64_t clock =
      static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  std::mt19937_64 gen((uint64_t(device()) << 32 ^ device()) ^ clock);
  char id[17];
  std::snprintf(id, sizeof id, "%016" PRIx64, gen());
  return id;
}

std::string CheckpointIdentity::ckpt_id() const { return run_id + "-step-" + std::to_string(step); }

void put_identity(rg::nn::SafetensorsMetadata& md, const CheckpointIdentity& id) {
  md["run_id"] = id.run_id;
  md["ckpt_id"] = id.ckpt_id();
  md["step"] = std::to_string(id.step);
  if (id.optimizer_step) md["optimizer_step"] = std::to_string(*id.optimizer_step);
}

void check_belongs(const std::string& file, const rg::nn::SafetensorsMetadata& md,
                   const CheckpointIdentity& expected, const std::string& ckpt_path) {
  auto differs = [&](const char* key, const std::string& want) {
    if (field_of(md, key) != want)
      fail(file, " does not belong to ", ckpt_path, ": its ", key, " is '", field_of(md, key),
           "', the checkpoint's is '", want, "'");
  };
  differs("ckpt_id", expected.ckpt_id());
  differs("run_id", expected.run_id);
  differs("step", std::to_string(expected.step));
  differs("optimizer_step", optional_count(expected.optimizer_step));
}

std::string ShardRecord::encode() const { return file + " " + std::to_string(bytes) + " " + fnv1a; }

std::string shard_record_key(int64_t rank) { return "zero_shard." + std::to_string(rank); }

ShardRecord shard_record(const std::string& ckpt_path, const rg::nn::SafetensorsMetadata& md,
                         int64_t rank) {
  const std::string key = shard_record_key(rank);
  const std::string text = field_of(md, key.c_str());
  char file[256] = {}, hash[17] = {};
  long long bytes = -1;
  int end = 0;
  const int n = std::sscanf(text.c_str(), "%255s %lld %16[0-9a-f]%n", file, &bytes, hash, &end);
  if (n != 3 || size_t(end) != text.size() || bytes < 0 || std::string(hash).size() != 16)
    fail(ckpt_path, ": metadata '", key, "' is '", text,
         "', not a shard record '<file> <bytes> <fnv1a>'");
  return {file, bytes, hash};
}

std::string fnv1a_hex(const std::string& bytes) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016" PRIx64, rg::fnv1a(bytes.data(), bytes.size()));
  return hash;
}

std::optional<int64_t> optimizer_step_of(const rg::nn::StateDict& state) {
  std::optional<int64_t> largest;
  for (const auto& [name, t] : state)
    if (name == "step" || ends_with(name, ".step")) {
      const int64_t v = step_count("optimizer state", name, t);
      largest = largest ? std::max(*largest, v) : v;
    }
  return largest;
}

std::optional<int64_t> optimizer_step_field(const std::string& file,
                                            const rg::nn::SafetensorsMetadata& md) {
  auto it = md.find("optimizer_step");
  if (it == md.end()) return std::nullopt;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || v < 0)
    fail(file, ": metadata 'optimizer_step' is '", it->second, "', not a count");
  return v;
}

void check_optimizer_state(const std::string& file, const rg::nn::NamedTensors& tensors,
                           const std::string& prefix, std::optional<int64_t> optimizer_step,
                           rg::DType moment_dtype) {
  std::optional<int64_t> largest;
  std::string largest_name;
  for (const auto& [name, t] : tensors) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string key = name.substr(prefix.size());
    if (key == "step" || ends_with(key, ".step")) {
      const int64_t v = step_count(file, name, t);
      if (!largest || v > *largest) largest = v, largest_name = name;
      continue;
    }
    if (t.dtype() != moment_dtype)
      fail(file, ": optimizer tensor '", name, "' has dtype ", rg::dtype_name(t.dtype()),
           ", this run's optimizer state is ", rg::dtype_name(moment_dtype));
    if (key.rfind("piece.", 0) == 0 && t.dim() != 1)
      fail(file, ": optimizer tensor '", name, "' has shape ", rg::shape_str(t.shape()),
           ", a piece of the moments is one-dimensional");
    if (const int64_t at = first_non_finite(t); at >= 0)
      fail(file, ": optimizer tensor '", name, "' holds a non-finite value (",
           fmt("%g", t.reshape({-1}).narrow(0, at, 1).item()), " at element ", at, ")");
  }
  if (largest && optimizer_step && *largest != *optimizer_step)
    fail(file, ": optimizer tensor '", largest_name, "' is at step ", *largest,
         ", but the file's metadata says optimizer_step ", *optimizer_step);
}

}  // namespace rgtrain
