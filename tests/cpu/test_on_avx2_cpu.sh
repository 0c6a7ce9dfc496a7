#!/usr/bin/env bash
# The library on an AVX2 CPU without AVX-512 (an AMD Zen 1-3, an Intel desktop chip), on any
# x86-64 host: qemu-x86_64 -cpu max emulates one (AVX2, FMA, F16C, BMI, MOVBE; no AVX-512), and
# any AVX-512 instruction that runs there is an illegal instruction. So this proves that the
# library picks the avx2 kernels from cpuid by itself (no RG_CPU_CAPABILITY) and that nothing
# it runs -- kernels, the standard library's and Eigen's shared inline functions, static
# initialisers -- needs more than AVX2. Skipped (77) without qemu-x86_64-static.
# Usage: test_on_avx2_cpu.sh KERNELS_CPU_TEST EXACTNESS_TEST DDP_BENCH
set -u
kernels_cpu=$1 exactness=$2 ddp=$3
qemu=$(command -v qemu-x86_64-static || command -v qemu-x86_64 || true)
if [ -z "$qemu" ] || [ "$(uname -m)" != x86_64 ]; then
  echo "skipped: no qemu-x86_64-static (Debian's qemu-user-static) on this x86-64 host"
  exit 77
fi
unset RG_CPU_CAPABILITY
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
on_avx2() { "$qemu" -cpu max "$@"; }

# One round of the main measurement (--rounds 1): a step of this model takes ~2 s under qemu.
out=$(on_avx2 "$ddp" 1 16 1 --backend threads --rounds 1 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "bench/ddp 1 16 1 --backend threads --rounds 1 on the AVX2 CPU exited $rc: $out"
grep -q "^cpu capability: avx2 (cpu supports baseline, avx2)" <<<"$out" ||
  fail "bench/ddp did not pick avx2 by itself: $(grep 'cpu capability' <<<"$out")"
out=$(RG_CPU_CAPABILITY=avx512 on_avx2 "$ddp" 1 16 1 --backend threads 2>&1)
grep -q "RG_CPU_CAPABILITY=avx512: this CPU does not support avx512" <<<"$out" ||
  fail "RG_CPU_CAPABILITY=avx512 on the AVX2 CPU was not refused by name: $out"
# The guard-page test of the weight gradient is left to the native runs (kernels_cpu@avx2):
# qemu 7.2 emulates a scalar FMA with a memory operand (vfmadd231ss (mem), ...) by a wider
# load, which faults on the guard page where the CPU reads only the 4 bytes.
# The random-shape reduce sweep is left to the native runs too: under qemu it took 150 of
# this test's 185 s, and the reduce kernel's code paths (column, row and middle layouts, all
# dims, threads) run here in the cases that cover them one by one.
for test_program in "$kernels_cpu" "$exactness"; do
  out=$(on_avx2 "$test_program" \
    --test-case-exclude="*reads nothing past its operands*,reduce matches an f64 reference on random shapes*" 2>&1)
  rc=$?
  [ "$rc" -eq 0 ] || fail "$(basename "$test_program") on the AVX2 CPU exited $rc: $(tail -20 <<<"$out")"
done
if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "on an emulated AVX2 CPU: the avx2 kernels were chosen; bench/ddp, kernels_cpu and exactness passed"
