"""Tests scripts/cubin_resources.py against ptxas's own report: a kernel file with a known
static shared array and register appetite is compiled by nvcc for sm_90 with `-Xptxas -v`,
and what the script reads from the object's cubin must equal what ptxas printed, function by
function (registers and static shared bytes).

usage: test_cubin_resources.py NVCC"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cubin_resources import embedded_cubins, resources  # noqa: E402

SOURCE = r"""
__global__ void shared_tile(float* out) {
  __shared__ float tile[1000];  // 4000 bytes
  tile[threadIdx.x] = out[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[999 - threadIdx.x];
}
template <int N>
__global__ void many_live_values(double* out, const double* in) {
  double acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = in[threadIdx.x * N + i] * (i + 1);
  double s = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) s += acc[i] * acc[(i * 7) % N];
  out[threadIdx.x] = s;
}
template __global__ void many_live_values<4>(double*, const double*);
template __global__ void many_live_values<48>(double*, const double*);
"""


def ptxas_report(log):
    """(mangled name, registers, static shared bytes) per entry function of a -v log."""
    rows, name = [], None
    for line in log.splitlines():
        if "Compiling entry function '" in line:
            name = line.split("'")[1]
        elif "Used " in line and name:
            regs = int(line.split("Used ")[1].split()[0])
            smem = int(line.split(" bytes smem")[0].split()[-1]) if "bytes smem" in line else 0
            rows.append((name, regs, smem))
            name = None
    return sorted(rows)


def main():
    nvcc = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        source, obj = os.path.join(work, "k.cu"), os.path.join(work, "k.o")
        with open(source, "w") as f:
            f.write(SOURCE)
        done = subprocess.run([nvcc, "-c", "-O3", "-gencode=arch=compute_90,code=[sm_90,compute_90]",
                               "-Xptxas", "-v", source, "-o", obj], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"test_cubin_resources: nvcc failed:\n{done.stderr}")
        want = ptxas_report(done.stdout + done.stderr)
        with open(obj, "rb") as f:
            got = sorted(row for cubin in embedded_cubins(f.read()) for row in resources(cubin))
    if len(want) != 3 or got != want:
        sys.exit(f"test_cubin_resources: read from the cubin {got}\nptxas -v said {want}")
    for name, regs, smem in got:
        print(f"ok: {name}: {regs} registers, {smem} bytes of static shared memory, as ptxas says")


if __name__ == "__main__":
    main()
