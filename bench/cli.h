// Command-line flags of the benches, with CLI11 as rgtrain and rgrun use it: every flag
// and positional has a description and a default shown by --help (which exits 0); a bad
// flag or value prints "<bench>: <problem> (see <bench> --help)" and exits 2.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "core/cpu_capability.h"
#include "core/device_interface.h"
#include "core/error.h"

namespace rg::bench {

// Call before adding options: --help then shows every default.
inline void show_defaults(CLI::App& app) { app.option_defaults()->always_capture_default(); }

inline void parse_flags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    std::exit(0);
  } catch (const CLI::ParseError& e) {
    const std::string& name = app.get_name();
    std::fprintf(stderr, "%s: %s (see %s --help)\n", name.c_str(), e.what(), name.c_str());
    std::exit(2);
  }
  // Every bench names the CPU kernels' instruction set it measures (RG_CPU_CAPABILITY).
  try {
    std::printf("cpu capability: %s\n", rg::cpu_capability_description().c_str());
  } catch (const rg::Error& e) {
    std::fprintf(stderr, "%s: %s\n", app.get_name().c_str(), e.what());
    std::exit(2);
  }
}

// Exits 1 naming the bench and the device when `device` cannot run here (cuda without a GPU),
// before any work: not an uncaught rg::Error's abort, after building a model.
inline void require_device(const char* bench, const rg::Device& device) {
  if (rg::device_available(device.type)) return;
  std::fprintf(stderr, "%s: device %s: not available on this machine (no GPU or no driver)\n",
               bench, device.str().c_str());
  std::exit(1);
}

}  // namespace rg::bench
