"""Theoretical occupancy per architecture: the rules of NVIDIA's occupancy calculator.

The algorithm follows ``cuda_occupancy.h`` (shipped with the CUDA toolkit, 13.0:
``cudaOccMaxActiveBlocksPerMultiprocessor`` and its helpers
``cudaOccMaxBlocksPerSMWarpsLimit``, ``...RegsLimit``, ``...SmemLimit``,
``...BlockBarrierLimit``): the active blocks per SM are the minimum of the warp, block,
register, shared-memory and barrier limits.

- Registers are allocated per warp: ``regs * 32`` rounded up to the allocation unit
  (256). The register file is split evenly over the SM's sub-partitions (4; 2 on sm_60),
  and warps are placed per sub-partition, so ``warps/SM = sub-partitions *
  floor(regs_per_SM / sub-partitions / regs_per_warp)``. A block also needs
  ``regs_per_warp * roundup(warps, sub-partitions) <= regs_per_block``.
- Shared memory: static + dynamic + the driver's reserved bytes per block (1 KB since
  sm_80), rounded up to the allocation unit (256 bytes up to sm_7x, 128 since sm_80).
  The carveout is chosen by the driver; with no preference it can grow to the full
  shared memory per SM, which is what is used here.
- Warps: ``floor(max warps/SM / warps per block)``; blocks: the per-SM block limit.
- Barriers: ``ptxas`` reports the named barriers a kernel uses; more than one limits the
  blocks to ``barrier slots / barriers used``.

The per-architecture limits (:data:`ARCHS`, one table, one place) are the CUDA C++
Programming Guide's "Technical Specifications per Compute Capability" table (maximum
resident warps and blocks per SM, 32-bit registers per SM and per block, maximum
registers per thread, shared memory per SM and per block, "opt-in" maximum per block)
and ``cuda_occupancy.h`` (allocation granularities, sub-partitions, reserved shared
memory per block = ``cudaDevAttrReservedSharedMemoryPerBlock``, 1 KB since sm_80, and
the barrier slots). sm_90 is checked point by point against
``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` on an H100 (``fixtures/CL303/
truth.json``, written by ``tools/gputruth/occupancy.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

KB = 1024
WARP = 32


@dataclass(frozen=True)
class ArchLimits:
    arch: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256            # registers, allocated per warp
    sub_partitions: int = 4
    smem_per_sm: int = 64 * KB           # largest carveout
    smem_per_block: int = 48 * KB        # without opt-in
    smem_per_block_optin: int = 48 * KB  # cudaFuncAttributeMaxDynamicSharedMemorySize
    smem_reserved_per_block: int = 0
    smem_alloc_unit: int = 256
    barrier_slots_per_block: int = 2     # barriers available = blocks limit * this
    max_threads_per_block: int = 1024

    @property
    def max_threads_per_sm(self) -> int:
        return self.max_warps_per_sm * WARP


def _a(arch: str, warps: int, blocks: int, **kw) -> ArchLimits:
    return ArchLimits(arch, warps, blocks, **kw)


# CUDA C++ Programming Guide, "Technical Specifications per Compute Capability";
# cuda_occupancy.h (CUDA 13.0) for granularities, sub-partitions, reserved smem, barriers.
ARCHS: dict[str, ArchLimits] = {a.arch: a for a in (
    _a("sm_50", 64, 32, smem_per_sm=64 * KB),
    _a("sm_52", 64, 32, regs_per_block=32768, smem_per_sm=96 * KB),
    _a("sm_53", 64, 32, regs_per_block=32768, smem_per_sm=64 * KB),
    _a("sm_60", 64, 32, sub_partitions=2, smem_per_sm=64 * KB),
    _a("sm_61", 64, 32, smem_per_sm=96 * KB),
    _a("sm_62", 64, 32, regs_per_block=32768, smem_per_sm=64 * KB),
    _a("sm_70", 64, 32, smem_per_sm=96 * KB, smem_per_block_optin=96 * KB),
    _a("sm_72", 64, 32, smem_per_sm=96 * KB, smem_per_block_optin=96 * KB),
    _a("sm_75", 32, 16, smem_per_sm=64 * KB, smem_per_block_optin=64 * KB),
    _a("sm_80", 64, 32, smem_per_sm=164 * KB, smem_per_block_optin=163 * KB,
       smem_reserved_per_block=KB, smem_alloc_unit=128),
    _a("sm_86", 48, 16, smem_per_sm=100 * KB, smem_per_block_optin=99 * KB,
       smem_reserved_per_block=KB, smem_alloc_unit=128, barrier_slots_per_block=1),
    _a("sm_87", 48, 16, smem_per_sm=164 * KB, smem_per_block_optin=163 * KB,
       smem_reserved_per_block=KB, smem_alloc_unit=128, barrier_slots_per_block=1),
    _a("sm_89", 48, 24, smem_per_sm=100 * KB, smem_per_block_optin=99 * KB,
       smem_reserved_per_block=KB, smem_alloc_unit=128, barrier_slots_per_block=1),
    _a("sm_90", 64, 32, smem_per_sm=228 * KB, smem_per_block_optin=227 * KB,
       smem_reserved_per_block=KB, smem_alloc_unit=128),
    _a("sm_100", 64, 32, smem_per_sm=228 * KB, smem_per_block_optin=227 * KB,
       smem_reserved_per_block=KB, smem_alloc_unit=128),
    _a("sm_101", 48, 24, smem_per_sm=228 * KB, smem_per_block_optin=227 * KB,
       smem_reserved_per_block=KB, smem_alloc_unit=128, barrier_slots_per_block=1),
    _a("sm_103", 64, 32, smem_per_sm=228 * KB, smem_per_block_optin=227 * KB,
       smem_reserved_per_block=KB, smem_alloc_unit=128),
    _a("sm_110", 48, 24, smem_per_sm=228 * KB, smem_per_block_optin=227 * KB,
       smem_reserved_per_block=KB, smem_alloc_unit=128, barrier_slots_per_block=1),
    _a("sm_120", 48, 24, smem_per_sm=100 * KB, smem_per_block_optin=99 * KB,
       smem_reserved_per_block=KB, smem_alloc_unit=128, barrier_slots_per_block=1),
    _a("sm_121", 48, 24, smem_per_sm=100 * KB, smem_per_block_optin=99 * KB,
       smem_reserved_per_block=KB, smem_alloc_unit=128, barrier_slots_per_block=1),
)}


def limits_for(arch: str) -> ArchLimits | None:
    """Limits of ``sm_90``, ``sm_90a``, ``compute_90``, ``90``; None when unknown."""
    a = arch.strip().lower().replace("compute_", "sm_")
    if not a.startswith("sm_"):
        a = "sm_" + a
    a = a.rstrip("af")
    return ARCHS.get(a)


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    arch: str
    registers: int
    block: int                   # threads per block
    smem_per_block: int          # static + dynamic, as the kernel asks (bytes)
    active_blocks: int
    active_warps: int
    max_warps: int
    limiter: str                 # "registers" | "shared memory" | "warps" | "blocks" | ...
    limits: dict                 # blocks allowed by each resource

    @property
    def occupancy(self) -> float:
        return self.active_warps / self.max_warps if self.max_warps else 0.0


def occupancy(arch: str | ArchLimits, registers: int, block: int, smem: int = 0,
              dynamic_smem: int = 0, barriers: int = 0, optin: bool = True,
              max_threads_per_block: int | None = None) -> Occupancy:
    """Active blocks/warps per SM for a kernel; ``smem`` static, ``dynamic_smem`` at launch.

    ``optin``: the kernel raised ``cudaFuncAttributeMaxDynamicSharedMemorySize`` as far as
    needed (the per-block limit is then the opt-in maximum, else the 48 KB default).
    ``max_threads_per_block``: the kernel's own limit (``__launch_bounds__``); a larger
    block does not launch.
    """
    lim = arch if isinstance(arch, ArchLimits) else limits_for(arch)
    if lim is None:
        raise ValueError(f"unknown architecture {arch!r}")
    warps_per_block = -(-block // WARP)
    limits: dict[str, int] = {}
    big = 1 << 30
    # warps
    kernel_max = min(lim.max_threads_per_block, max_threads_per_block or 1 << 30)
    limits["warps"] = 0 if block > kernel_max or block <= 0 else \
        lim.max_warps_per_sm // warps_per_block
    limits["blocks"] = lim.max_blocks_per_sm
    # registers
    regs_warp = _round_up(max(registers, 0) * WARP, lim.reg_alloc_unit)
    regs_assumed = regs_warp * _round_up(warps_per_block, lim.sub_partitions)
    if registers > lim.max_regs_per_thread + 1 or regs_assumed > lim.regs_per_block or \
            regs_warp * warps_per_block > lim.regs_per_block:
        limits["registers"] = 0
    elif regs_warp == 0:
        limits["registers"] = big
    else:
        per_part = (lim.regs_per_sm // lim.sub_partitions) // regs_warp
        limits["registers"] = per_part * lim.sub_partitions // warps_per_block
    # shared memory
    total = smem + dynamic_smem + lim.smem_reserved_per_block
    alloc = _round_up(total, lim.smem_alloc_unit)
    per_block_limit = (lim.smem_per_block_optin if optin and smem + dynamic_smem >
                       lim.smem_per_block else lim.smem_per_block) + lim.smem_reserved_per_block
    if alloc > per_block_limit:
        limits["shared memory"] = 0
    elif alloc == 0:
        limits["shared memory"] = big
    else:
        limits["shared memory"] = lim.smem_per_sm // alloc
    # named barriers
    if barriers > 0:
        limits["barriers"] = lim.max_blocks_per_sm * lim.barrier_slots_per_block // barriers
    blocks = min(limits.values())
    order = ("registers", "shared memory", "barriers", "warps", "blocks")
    limiter = next(k for k in order if k in limits and limits[k] == blocks)
    return Occupancy(arch=lim.arch, registers=registers, block=block,
                     smem_per_block=smem + dynamic_smem, active_blocks=blocks,
                     active_warps=blocks * warps_per_block, max_warps=lim.max_warps_per_sm,
                     limiter=limiter, limits=limits)


def registers_for_next_step(arch: str | ArchLimits, registers: int, block: int,
                            smem: int = 0, dynamic_smem: int = 0, barriers: int = 0
                            ) -> tuple[int, Occupancy] | None:
    """The largest register count that gives more active warps than ``registers`` does
    (one step up), with the occupancy it gives; None if fewer registers would not help."""
    now = occupancy(arch, registers, block, smem, dynamic_smem, barriers)
    for regs in range(registers - 1, 0, -1):
        occ = occupancy(arch, regs, block, smem, dynamic_smem, barriers)
        if occ.active_warps > now.active_warps:
            return regs, occ
    return None


def launch_bounds_register_cap(arch: str | ArchLimits, max_threads: int | None,
                               min_blocks: int | None) -> int | None:
    """The registers per thread ``__launch_bounds__(max_threads, min_blocks)`` leaves:
    the register file shared by ``min_blocks`` blocks of ``max_threads`` threads, per
    thread, rounded down to the allocation step (8 registers = 256 per warp)."""
    lim = arch if isinstance(arch, ArchLimits) else limits_for(arch)
    if lim is None or not max_threads or max_threads <= 0:
        return None
    blocks = max(min_blocks or 1, 1)
    warps = -(-max_threads // WARP)
    if warps > lim.max_warps_per_sm:
        # more threads than an SM holds: ptxas warns "Value of threads per SM ... is out
        # of range. .minnctapersm and .maxntid will be ignored" (nvcc 13.0, sm_90: 2049
        # and 2147483647 ignored; 2048 caps registers at 32)
        return None
    if blocks * warps > lim.max_warps_per_sm:
        blocks = 1   # ptxas: "threads per SM out of range, .minnctapersm will be ignored"
    per_thread = lim.regs_per_sm // (blocks * warps * WARP)
    step = lim.reg_alloc_unit // WARP
    return min(lim.max_regs_per_thread, per_thread - per_thread % step)


def occupancy_table(arch: str, block: int, smem: int = 0, dynamic_smem: int = 0,
                    barriers: int = 0) -> list[tuple[int, int, int, float, str]]:
    """(registers from, registers to, active warps, occupancy, limiter) for every range of
    register counts that gives the same occupancy: the plot of occupancy vs registers."""
    rows: list[tuple[int, int, int, float, str]] = []
    lim = limits_for(arch)
    if lim is None:
        raise ValueError(f"unknown architecture {arch!r}")
    for regs in range(1, lim.max_regs_per_thread + 1):
        occ = occupancy(lim, regs, block, smem, dynamic_smem, barriers)
        if rows and rows[-1][2] == occ.active_warps and rows[-1][4] == occ.limiter:
            rows[-1] = (rows[-1][0], regs, *rows[-1][2:])
        else:
            rows.append((regs, regs, occ.active_warps, occ.occupancy, occ.limiter))
    return rows
