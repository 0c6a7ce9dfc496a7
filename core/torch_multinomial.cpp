// torch.multinomial's CPU algorithms over TorchGenerator (core/torch_generator.h).
// Without replacement, or one sample: q ~ Exp(1) for every probability (row-major, in the
// probabilities' dtype), and the samples are the indices of the largest p / q, largest first
// (the Gumbel-max trick with exp applied). With replacement: per row, the cumulative sums in the
// dtype divided by their total, the last set to 1, and a binary search for each double uniform.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/torch_generator.h"

namespace rg {

namespace {
template <typename T>
void check_rows(const T* probs, int64_t rows, int64_t categories) {
  for (int64_t r = 0; r < rows; ++r) {
    T sum = 0;
    for (int64_t c = 0; c < categories; ++c) {
      T p = probs[r * categories + c];
      RG_CHECK(p >= 0 && std::isfinite(p),
               "multinomial: probability tensor contains either inf, nan or element < 0 (", p,
               " in row ", r, ")");
      sum += p;
    }
    RG_CHECK(sum > 0, "multinomial: invalid distribution (sum of probabilities <= 0 in row ", r,
             ")");
  }
}
}  // namespace

template <typename T>
void TorchGenerator::multinomial_with_replacement(const T* probs, int64_t rows, int64_t categories,
                                                  int64_t samples, int64_t* out) {
  std::vector<T> cumulative(static_cast<size_t>(categories));
  for (int64_t r = 0; r < rows; ++r) {
    T sum = 0;
    for (int64_t c = 0; c < categories; ++c) cumulative[c] = sum += probs[r * categories + c];
    for (T& value : cumulative) value /= sum;
    cumulative[categories - 1] = 1;
    for (int64_t s = 0; s < samples; ++s) {
      double u = uniform_double();
      int64_t left = 0, right = categories;
      while (right > left) {
        int64_t mid = left + (right - left) / 2;
        if (cumulative[mid] < u)
          left = mid + 1;
        else
          right = mid;
      }
      out[r * samples + s] = left;
    }
  }
}

template <typename T>
void TorchGenerator::multinomial(const T* probs, int64_t rows, int64_t categories, int64_t samples,
                                 bool replacement, int64_t* out) {
  RG_CHECK(categories > 0, "multinomial: expected at least one category");
  RG_CHECK(samples > 0, "multinomial: cannot sample ", samples, " <= 0 samples");
  RG_CHECK(replacement || samples <= categories, "multinomial: cannot sample ", samples, " > ",
           categories, " samples without replacement");
  check_rows(probs, rows, categories);
  if (replacement && samples > 1) {
    multinomial_with_replacement(probs, rows, categories, samples, out);
    return;
  }
  std::vector<T> ratio(static_cast<size_t>(rows * categories));
  exponential(ratio.data(), rows * categories, 1.0);
  for (size_t i = 0; i < ratio.size(); ++i) ratio[i] = probs[i] / ratio[i];
  std::vector<int64_t> order(static_cast<size_t>(categories));
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = ratio.data() + r * categories;
    std::iota(order.begin(), order.end(), int64_t{0});
    std::partial_sort(
        order.begin(), order.begin() + samples, order.end(),
        [row](int64_t a, int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    std::copy(order.begin(), order.begin() + samples, out + r * samples);
  }
}

template void TorchGenerator::multinomial(const float*, int64_t, int64_t, int64_t, bool, int64_t*);
template void TorchGenerator::multinomial(const double*, int64_t, int64_t, int64_t, bool, int64_t*);

}  // namespace rg
