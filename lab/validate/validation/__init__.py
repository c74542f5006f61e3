# SPDX-License-Identifier: MIT
"""lab/validate: tlbpol-sim against the real kernel (../README.md).

The command is ../validate.py (run by ../run.sh and the meson test
validate-replay); its modes and options are in cli.py.  One module per
concern:

    config     paths, bounds, the options of a run (Config) and the
               simulator to replay with (Sim)
    machine    this machine: the TLB row of /proc/interrupts, CPU times,
               waiting for a quiet second, its name, SCHED_RR for the runs
    perf       the perf events that count a program's own shootdowns, and
               where they came from (call chains); its page faults
    programs   the real programs measured, and how each is prepared
    measuring  runs of one program: counted, attributed, recorded under strace
    measure    the measure mode: every program, then data/ and the replay
    converter  lab/trace/strace2trace.py, through its command line
    profile    the machine profile (ipi_rtt -> tlbpol-sim --cost-file) and
               the modelled tlb_flush2 throughput
    data       data/measured.txt and data/expected-out.txt, one set per
               machine (data/ itself, earlier ones in data/machines/ID/)
    replay     the replay mode: each trace through tlbpol-sim, the bounds
    report     the replay's table and notes
    stamps     the stamps mode: flush stamps on the replayed programs
    cli        the command line
"""
