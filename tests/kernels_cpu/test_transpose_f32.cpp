// transpose_f32: every element lands transposed, for shapes made of whole 16 x 16 blocks (the
// AVX-512 path), with partial blocks on either side, and with strides wider than the rows;
// nothing outside the target block is written.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/transpose_f32.h"

TEST_CASE("transpose_f32 transposes whole and partial 16 x 16 blocks") {
  for (int64_t rows : {1, 15, 16, 17, 64, 128})
    for (int64_t cols : {1, 16, 20, 32, 64}) {
      CAPTURE(rows);
      CAPTURE(cols);
      const int64_t ld_src = cols + 3, ld_dst = rows + 5;
      std::vector<float> src(rows * ld_src), dst(cols * ld_dst, -1.f);
      for (size_t i = 0; i < src.size(); ++i) src[i] = float(i);
      rg::cpu::RG_CPU_CAP::transpose_f32(dst.data(), ld_dst, src.data(), ld_src, rows, cols);
      int64_t wrong = 0, outside = 0;
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t r = 0; r < ld_dst; ++r) {
          const float got = dst[c * ld_dst + r];
          if (r < rows)
            wrong += got != src[r * ld_src + c];
          else
            outside += got != -1.f;
        }
      CHECK(wrong == 0);
      CHECK(outside == 0);
    }
}
