// safetensors I/O (https://github.com/huggingface/safetensors), the checkpoint format:
//   [8 bytes] N, little-endian uint64: length of the header
//   [N bytes] JSON object: for each tensor  "name": {"dtype": "F32", "shape": [2, 3],
//             "data_offsets": [begin, end]}  (byte range within the data buffer), plus an
//             optional "__metadata__": {string: string}; may be padded with spaces
//   [rest]    data buffer: each tensor's elements, row-major, little-endian
// Dtypes: F32, F64, BF16, I32, I64, BOOL (ringgrad's six). The writer pads the header to a
// multiple of 8 bytes and lays tensors out in the order given, so a round trip keeps order.
// save is atomic (core/atomic_file.h): on any failure `path` is left untouched.
// load validates everything (sizes, JSON, dtypes, offsets: in range, no overlap, no hole,
// matching shape x dtype, BOOL bytes 0/1) and throws one rg::Error naming the file.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/atomic_file.h"
#include "core/tensor.h"

namespace rg::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using SafetensorsMetadata = std::map<std::string, std::string>;

struct SafetensorsContents {
  NamedTensors tensors;  // in header order, on the cpu
  SafetensorsMetadata metadata;
};

// Tensors may live on any device and be non-contiguous; they are copied to the host.
// Names must be unique, non-empty and not "__metadata__".
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const SafetensorsMetadata& metadata = {});
SafetensorsContents load_safetensors(const std::string& path);

// The same on bytes in memory; `source` names them in errors.
std::string serialize_safetensors(const NamedTensors& tensors,
                                  const SafetensorsMetadata& metadata = {});
SafetensorsContents parse_safetensors(const std::string& bytes,
                                      const std::string& source = "<memory>");

// Writes the file's bytes into `file` without committing it: a caller that commits later
// (rgtrain) controls when the checkpoint appears. save_safetensors = this + commit().
void write_safetensors(AtomicFile& file, const NamedTensors& tensors,
                       const SafetensorsMetadata& metadata = {});

}  // namespace rg::nn
