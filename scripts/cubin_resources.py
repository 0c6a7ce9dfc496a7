#!/usr/bin/env python3
"""Per-kernel resources read from the sm_90 cubins inside the built library, for sim-check's
occupancy column (bench/kernels --sim-check): registers per thread and static shared bytes
per block of every entry function, as `ptxas -v` reports them, without compiling anything.

nvcc embeds each kernel file's cubin, uncompressed, in the object's fatbin, and the linker
keeps it in libringgrad.so. A cubin is an ELF file (e_machine 190, EM_CUDA):
  - the registers: the `.nv.info` section's EIATTR_REGCOUNT attributes (0x2f), each a pair
    (symbol index, registers) naming the entry function through `.symtab`;
  - the static shared memory: the size of the `.nv.shared.<function>` section, less the
    1 KiB per block that sm_80 and later reserve for the system and that the section includes
    (ptxas -v reports the size without it).
scripts/test_cubin_resources.py checks both against `ptxas -v` on the same PTX.

It writes a C++ table, one row per entry function: its demangled signature with the backend
namespace removed (so that the sim build's `rg::sim::` and the cuda build's `rg::cuda::`
names meet), registers and static shared bytes. Without --library (no CUDA) the table is
empty.

usage: cubin_resources.py --output FILE [--library libringgrad.so --cxxfilt CXXFILT]
"""
import argparse
import os
import struct
import subprocess

EM_CUDA = 190
EIATTR_REGCOUNT = 0x2F
EIFMT_SVAL = 4  # an attribute with a u16 size and that many bytes of value
RESERVED_SHARED = 1024  # sm_80+: cudaDevAttrReservedSharedMemoryPerBlock
SHT_SYMTAB = 2


def embedded_cubins(blob):
    """Every EM_CUDA ELF image inside `blob` (the library's fatbins hold them as they are)."""
    at = 0
    while (at := blob.find(b"\x7fELF\x02\x01", at)) >= 0:
        machine = struct.unpack_from("<H", blob, at + 18)[0]
        shoff = struct.unpack_from("<Q", blob, at + 40)[0]
        shentsize, shnum = struct.unpack_from("<HH", blob, at + 58)
        end = shoff + shentsize * shnum
        if machine == EM_CUDA and at + end <= len(blob):
            yield blob[at:at + end]
            at += end
        else:
            at += 4


class Elf:
    def __init__(self, image):
        self.image = image
        shoff = struct.unpack_from("<Q", image, 40)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", image, 58)
        # (name offset, type, offset, size, link) of each section
        self.sections = [struct.unpack_from("<II16xQQI", image, shoff + k * shentsize)
                         for k in range(shnum)]
        self.names = self.sections[shstrndx][2]

    def string(self, table_offset, at):
        start = table_offset + at
        return self.image[start:self.image.index(b"\0", start)].decode()

    def section_name(self, section):
        return self.string(self.names, section[0])

    def symbol_names(self):
        symtab = next(s for s in self.sections if s[1] == SHT_SYMTAB)
        strtab = self.sections[symtab[4]][2]
        return [self.string(strtab, struct.unpack_from("<I", self.image, symtab[2] + i)[0])
                for i in range(0, symtab[3], 24)]


def registers(elf):
    """{function: registers} from .nv.info's EIATTR_REGCOUNT entries (none without it)."""
    info = next((s for s in elf.sections if elf.section_name(s) == ".nv.info"), None)
    if info is None:
        return {}
    symbols = elf.symbol_names()
    out, at, end = {}, info[2], info[2] + info[3]
    while at < end:
        fmt, attr = elf.image[at], elf.image[at + 1]
        size = struct.unpack_from("<H", elf.image, at + 2)[0] if fmt == EIFMT_SVAL else 0
        if attr == EIATTR_REGCOUNT and fmt == EIFMT_SVAL:
            symbol, count = struct.unpack_from("<II", elf.image, at + 4)
            out[symbols[symbol]] = count
        at += 4 + size
    return out


def resources(cubin):
    """(mangled name, registers, static shared bytes) of each entry function of a cubin."""
    elf = Elf(cubin)
    shared = {}
    for s in elf.sections:
        name = elf.section_name(s)
        if name.startswith(".nv.shared.") and not name.startswith(".nv.shared.reserved."):
            shared[name[len(".nv.shared."):]] = max(0, s[3] - RESERVED_SHARED)
    kernels = [elf.section_name(s)[len(".text."):] for s in elf.sections
               if elf.section_name(s).startswith(".text.")]
    regs = registers(elf)
    return [(k, regs[k], shared.get(k, 0)) for k in kernels if k in regs]


def table_key(demangled):
    """The name both builds agree on: the demangled signature without the backend namespace
    (bench/kernels_occupancy.cpp removes it from the sim build's names the same way)."""
    return demangled.replace("rg::cuda::", "rg::").replace("rg::sim::", "rg::")


def library_rows(path):
    with open(path, "rb") as f:
        blob = f.read()
    rows = {}
    for cubin in embedded_cubins(blob):
        for name, regs, smem in resources(cubin):
            rows[name] = (regs, smem)
    return sorted((name, regs, smem) for name, (regs, smem) in rows.items())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--output", required=True)
    ap.add_argument("--library")
    ap.add_argument("--cxxfilt", default="c++filt")
    args = ap.parse_args()
    rows = library_rows(args.library) if args.library else []
    names = subprocess.run([args.cxxfilt], input="\n".join(r[0] for r in rows), text=True,
                           capture_output=True, check=True).stdout.splitlines() if rows else []
    lines = ["// Generated by scripts/cubin_resources.py from the library's sm_90 cubins: do not edit.",
             "// {function (demangled, no backend namespace), registers, static smem bytes}"]
    for (_mangled, regs, smem), name in sorted(zip(rows, names), key=lambda x: x[1]):
        lines.append(f'{{"{table_key(name)}", {regs}, {smem}}},')
    tmp = args.output + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, args.output)


if __name__ == "__main__":
    main()
