// What binds the files of one checkpoint together, and the checks of the optimizer state a
// resume reads.
//
// Each rgtrain run draws a run id (16 hex digits, drawn by rank 0 and shared by every rank).
// Every file of a checkpoint (ckpt.safetensors and, with --zero 1, 2 or 3, each rank's shard)
// carries in its metadata
//   run_id          the run that wrote it
//   ckpt_id         "<run_id>-step-<S>": the checkpoint it belongs to
//   step            S
//   optimizer_step  the largest step count in the optimizer state it holds (absent without)
// and ckpt.safetensors records each shard r of N as
//   zero_shard.<r> = "<file name> <bytes> <fnv1a of the file, 16 hex digits>"
// A resume checks each shard against its record and its metadata against the ckpt's, and
// names the file that does not belong. Shard files carry the run id in their names
// (zero_checkpoint.h), so no later run writes a file a committed ckpt names.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "nn/safetensors.h"
#include "nn/state_dict.h"
#include "ringgrad.h"

namespace rgtrain {

// 16 random hex digits.
std::string new_run_id();

struct CheckpointIdentity {
  std::string run_id;
  int64_t step = 0;
  std::optional<int64_t> optimizer_step;  // none: the file holds no optimizer state
  std::string ckpt_id() const;            // "<run_id>-step-<step>"
};

// Writes the identity into a file's metadata (run_id, ckpt_id, step, optimizer_step).
void put_identity(rg::nn::SafetensorsMetadata& md, const CheckpointIdentity& id);

// Fails naming `file` (a shard of `ckpt_path`) when its metadata's run_id, ckpt_id, step or
// optimizer_step differ from `expected`'s.
void check_belongs(const std::string& file, const rg::nn::SafetensorsMetadata& md,
                   const CheckpointIdentity& expected, const std::string& ckpt_path);

// One shard as ckpt.safetensors records it.
struct ShardRecord {
  std::string file;  // name in the checkpoint's directory
  int64_t bytes = 0;
  std::string fnv1a;  // 16 hex digits
  std::string encode() const;
};
std::string shard_record_key(int64_t rank);  // "zero_shard.<rank>"
// Parses the record of shard `rank` from the metadata of `ckpt_path`; fails naming the ckpt
// when it is missing or malformed.
ShardRecord shard_record(const std::string& ckpt_path, const rg::nn::SafetensorsMetadata& md,
                         int64_t rank);
std::string fnv1a_hex(const std::string& bytes);

// The largest step entry of an optimizer state ("step", "state.N.step"), none without one.
std::optional<int64_t> optimizer_step_of(const rg::nn::StateDict& state);

// Checks the optimizer state in `file` (its entries whose names start with `prefix`) as the
// weights are checked: every step entry one number, a whole count, the largest equal to
// `optimizer_step` (the metadata's); every other entry of dtype `moment_dtype` (the
// parameters'), finite, and for the sharded pieces one-dimensional. Fails naming the file
// and the tensor.
void check_optimizer_state(const std::string& file, const rg::nn::NamedTensors& tensors,
                           const std::string& prefix, std::optional<int64_t> optimizer_step,
                           rg::DType moment_dtype);

// The metadata's optimizer_step of `file` (none when absent); fails when it is not a count.
std::optional<int64_t> optimizer_step_field(const std::string& file,
                                            const rg::nn::SafetensorsMetadata& md);

}  // namespace rgtrain
