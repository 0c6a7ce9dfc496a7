// Loads a GPT-2 written in HuggingFace's layout by an independent writer
// (tests/nn/gpt2_hf_reference.py: the `safetensors` package and NumPy) with rg::nn::load_gpt2,
// runs its forward pass on the reference's tokens and compares the logits with the ones
// NumPy computed in float64. Exits 0 when they agree to 1e-5 of the largest logit, else 1.
//   gpt2_hf_check MODEL.safetensors REFERENCE.safetensors N_HEAD
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "nn/gpt2_loader.h"
#include "nn/safetensors.h"
#include "ringgrad.h"

namespace {

rg::Tensor tensor_named(const rg::nn::SafetensorsContents& file, const std::string& name) {
  for (const auto& [n, t] : file.tensors)
    if (n == name) return t;
  RG_FAIL("the reference file has no tensor '", name, "'");
}

int check(const std::string& model_path, const std::string& reference_path, int64_t n_head) {
  auto model = rg::nn::load_gpt2(model_path, n_head);
  model->eval();
  const auto reference = rg::nn::load_safetensors(reference_path);
  const rg::Tensor ids = tensor_named(reference, "input_ids");
  const rg::Tensor expected = tensor_named(reference, "logits");
  rg::NoGradGuard no_grad;
  const rg::Tensor logits = model->forward(ids).to(rg::DType::f64);
  if (logits.shape() != expected.shape()) {
    std::printf("FAIL: logits of shape %s, the reference's %s\n",
                rg::shape_str(logits.shape()).c_str(), rg::shape_str(expected.shape()).c_str());
    return 1;
  }
  const double scale = expected.abs().max().item();
  const double diff = rg::max_abs_diff(logits, expected);
  const bool ok = diff <= 1e-5 * scale;
  std::printf(
      "%s: %d layers, %d heads, width %d; logits %s differ from NumPy's by %.3g "
      "(largest logit %.3g, bound 1e-5 of it)\n",
      ok ? "ok" : "FAIL", int(model->config().n_layer), int(model->config().n_head),
      int(model->config().n_embd), rg::shape_str(logits.shape()).c_str(), diff, scale);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: gpt2_hf_check MODEL REFERENCE N_HEAD\n");
    return 2;
  }
  try {
    return check(argv[1], argv[2], std::atoll(argv[3]));
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
