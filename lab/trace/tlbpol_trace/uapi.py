# SPDX-License-Identifier: MIT
"""The Linux system-call facts the converter relies on: flag values of the
UAPI headers (generic and x86-64), the record kinds of the trace format
and which calls block.

The flag tables serve both strace's symbolic names and the numbers it
prints with -X raw or for unknown bits."""

from typing import Dict, FrozenSet, Tuple

PAGE_SHIFT = 12
PAGE = 1 << PAGE_SHIFT

FORMAT_HEADER_V1 = '# tlbpol-trace v1'
FORMAT_HEADER_V2 = '# tlbpol-trace v2'
FORMAT_HEADER_V3 = '# tlbpol-trace v3'
KINDS_V1: Tuple[str, ...] = ('mmap', 'munmap', 'mprotect', 'dontneed',
                             'mremap')
KINDS_V2: Tuple[str, ...] = KINDS_V1 + ('clone', 'fork', 'exec', 'exit',
                                        'block')
KINDS_V3: Tuple[str, ...] = KINDS_V2 + ('fault',)
# A fault record's last field (FORMAT.md "Page faults").
FAULT_HOWS: Tuple[str, ...] = ('read', 'write', 'cow')
# The x86 page-fault error code (arch/x86/include/asm/trap_pf.h).
PF_PROT = 1 << 0        # the page was present: a protection fault
PF_WRITE = 1 << 1       # the access was a write
PF_USER = 1 << 2        # from user mode
BLOCK_MIN_NS = 50000    # default --block-min-ns
MAX_LINE = 511          # bytes per line, newline excluded (FORMAT.md)

# include/uapi/asm-generic/mman-common.h
PROT = {'PROT_NONE': 0, 'PROT_READ': 1, 'PROT_WRITE': 2, 'PROT_EXEC': 4}
MAP_FIXED = 0x10
MAP_FIXED_NOREPLACE = 0x100000
MAP = {'MAP_FIXED': MAP_FIXED, 'MAP_FIXED_NOREPLACE': MAP_FIXED_NOREPLACE}
MADV_DONTNEED = 4
MADV_FREE = 8
MADV = {'MADV_DONTNEED': MADV_DONTNEED, 'MADV_FREE': MADV_FREE}
# include/uapi/linux/mman.h
MREMAP_FIXED = 2
MREMAP_DONTUNMAP = 4
MREMAP = {'MREMAP_MAYMOVE': 1, 'MREMAP_FIXED': MREMAP_FIXED,
          'MREMAP_DONTUNMAP': MREMAP_DONTUNMAP}
# include/uapi/linux/sched.h
CLONE_VM = 0x100
CLONE_VFORK = 0x4000
CLONE_THREAD = 0x10000
CLONE = {'CLONE_VM': CLONE_VM, 'CLONE_VFORK': CLONE_VFORK,
         'CLONE_THREAD': CLONE_THREAD}

CLONE_NAMES: Tuple[str, ...] = ('clone', 'clone3', 'fork', 'vfork')
EXEC_NAMES: Tuple[str, ...] = ('execve', 'execveat')
# Any of these in a recording means it was made with -e trace=process.
PROCESS_NAMES: Tuple[str, ...] = CLONE_NAMES + EXEC_NAMES + ('exit',
                                                             'exit_group')


def _reasons() -> Dict[str, str]:
    table = {'futex': 'futex'}
    table.update(dict.fromkeys(
        ('poll', 'ppoll', 'select', 'pselect6', 'epoll_wait', 'epoll_pwait',
         'epoll_pwait2'), 'poll'))
    table.update(dict.fromkeys(
        ('nanosleep', 'clock_nanosleep', 'pause', 'rt_sigsuspend',
         'rt_sigtimedwait'), 'sleep'))
    table.update(dict.fromkeys(('wait4', 'waitid'), 'wait'))
    table.update(dict.fromkeys(
        ('read', 'pread64', 'readv', 'recvfrom', 'recvmsg', 'accept',
         'accept4'), 'read'))
    return table


# System calls that block, and the reason word of their block records.
BLOCK_REASON = _reasons()

# futex operations that wait (include/uapi/linux/futex.h, FUTEX_CMD_MASK'd
# numbers for -X raw): WAIT 0, LOCK_PI 6, WAIT_BITSET 9,
# WAIT_REQUEUE_PI 11, LOCK_PI2 13.
FUTEX_WAIT_OPS: FrozenSet[int] = frozenset({0, 6, 9, 11, 13})
FUTEX_WAIT_NAMES: FrozenSet[str] = frozenset({
    'FUTEX_WAIT', 'FUTEX_WAIT_BITSET', 'FUTEX_LOCK_PI', 'FUTEX_LOCK_PI2',
    'FUTEX_WAIT_REQUEUE_PI'})
FUTEX_CMD_MASK = 0x7f
