// core/hash.h: FNV-1a's published 64-bit test vectors, and chaining.
#include <doctest/doctest.h>

#include <string>

#include "core/hash.h"

TEST_CASE("fnv1a gives the published 64-bit FNV-1a values and chains over pieces") {
  auto h = [](const std::string& s) { return rg::fnv1a(s.data(), s.size()); };
  CHECK(h("") == 0xcbf29ce484222325ull);  // the offset basis
  CHECK(h("a") == 0xaf63dc4c8601ec8cull);
  CHECK(h("foobar") == 0x85944171f73967e8ull);
  CHECK(rg::fnv1a("bar", 3, h("foo")) == h("foobar"));
  CHECK(h("foobar") != h("foobaz"));
}
