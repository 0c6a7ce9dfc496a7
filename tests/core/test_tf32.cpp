// round_to_tf32 (core/tf32.h): the mantissa cut to 10 bits, to nearest with ties to even,
// inf and NaN kept, as the sim cuBLAS shim and the sim warp mma use it.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "core/tf32.h"

using rg::round_to_tf32;

TEST_CASE("round_to_tf32 keeps 10 mantissa bits, to nearest, ties to even") {
  const float ulp = std::ldexp(1.0f, -10);  // TF32's spacing just above 1
  CHECK(round_to_tf32(1.0f) == 1.0f);
  CHECK(round_to_tf32(1.0f + ulp) == 1.0f + ulp);                // representable
  CHECK(round_to_tf32(1.0f + ulp / 4) == 1.0f);                  // below half: down
  CHECK(round_to_tf32(1.0f + 3 * ulp / 4) == 1.0f + ulp);        // above half: up
  CHECK(round_to_tf32(1.0f + ulp / 2) == 1.0f);                  // tie: to even (down)
  CHECK(round_to_tf32(1.0f + 3 * ulp / 2) == 1.0f + 2 * ulp);    // tie: to even (up)
  CHECK(round_to_tf32(-(1.0f + 3 * ulp / 4)) == -(1.0f + ulp));  // sign kept
  CHECK(round_to_tf32(0.0f) == 0.0f);
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(round_to_tf32(inf) == inf);
  CHECK(round_to_tf32(-inf) == -inf);
  CHECK(std::isnan(round_to_tf32(std::numeric_limits<float>::quiet_NaN())));
}
