# SPDX-License-Identifier: MIT
"""The tlbpol-trace tools (FORMAT.md): strace2trace.py's converter from
strace output and checktrace.py's format checker.  Standard library only.

    uapi       the Linux flag values and call names the converter needs
    strace     reading strace lines and the calls in them
    aspace     the address-space model and the memory calls' records
    tasks      traced tasks and thread groups
    trace      the trace being written: ids, --max-events, the text
    converter  strace lines to records: tasks, process and memory calls
    cli        strace2trace.py's command line
    check      checktrace.py: the format checker (imports none of the above)
    selftest   both self-tests, over the data in ../selftest/
"""
