// The start-up agreement check: before any training, the ranks exchange the settings that
// must be equal on all of them (model shape, seed, steps, batch sizes, optimizer settings:
// lr, betas, eps, weight decay and the no-decay set, clipping; every flag that changes the
// sequence of collectives (bucket size, bucket views, overlap, ZeRO, reduce dtype, checkpoint
// and trace schedule); world size, the data and init files' sizes and fingerprints). A difference
// is an error naming the setting and which ranks hold which value, on every rank at once, instead
// of ranks that silently train different models or read different data.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "apps/rgtrain/config.h"
#include "dist/process_group.h"

namespace rgtrain {

// (name, value) pairs, in a fixed order.
using Settings = std::vector<std::pair<std::string, std::string>>;

// The settings of this rank that every rank must share.
Settings shared_settings(const Args& a, int64_t world);

// Every rank's `bytes`, indexed by rank (all ranks must call it).
std::vector<std::string> allgather_bytes(rg::dist::ProcessGroup& group, const std::string& bytes);

// Throws UsageError on every rank when any setting differs between ranks.
void check_agreement(rg::dist::ProcessGroup& group, const Settings& mine);

// "size 1234 bytes, fnv1a 89ab..." of a file (read with read_file's checks), or "none".
std::string file_fingerprint(const std::string& path, const char* flag);

}  // namespace rgtrain
