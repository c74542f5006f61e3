#!/bin/sh
# SPDX-License-Identifier: MIT
# check_causality.sh TLBPOL-SIM: an interrupt handler's acknowledgement is
# seen no earlier than the handler runs in modelled time, and a waiting CPU
# looks at its acknowledgements between two interrupts.
#
# munmap on 2 guest CPUs whose every interrupt costs the receiver 100 us of
# exits before its handler (vm_irq_exit_ns=100000): CPU 0 unmaps in a loop
# and waits for CPU 1's acknowledgement each time; CPU 1 reads.  Each
# round then lasts at least the 100 us, and CPU 1 reads during CPU 0's own
# work between rounds: about 7 us of its time per read (6964 ns).  When the
# handler ran at the interrupt's arrival and acknowledged before the exits
# had passed (lab/sim before the catch-up in clock.c serve_irq()), CPU 0
# ran ahead of its acknowledgements, CPU 1 served interrupts back to back
# and read little: 35958 ns per read.  The bound is twice the right value.
set -u
sim=$1
out=$("$sim" munmap --cpus 2 --nodes 1 --vm --cost vm_irq_exit_ns=100000 --policy linux \
	--events 1000 --csv) || { echo "FAIL: tlbpol-sim exited $?"; exit 1; }
echo "$out"
ns=$(printf '%s\n' "$out" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "metric") c = i; next }
	{ print $c }')
ipis=$(printf '%s\n' "$out" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ipis") c = i; next }
	{ print $c }')
echo "ns per remote read: $ns (bound 14000), interrupts: $ipis"
awk -v n="$ns" -v i="$ipis" 'BEGIN { exit !(n > 0 && n < 14000 && i == 1000) }' || {
	echo "FAIL: an acknowledgement was seen before its handler ran in modelled time"
	exit 1
}

# A wait looks at its acknowledgements between two interrupts.  Two guest
# CPUs shooting each other down with 1-page operations (ipi_rtt -d -m's
# loop on the measured Xeon profile): each CPU's operation is shorter than
# the other's 16 us of exits, so interrupts arrive back to back.  When a
# wait served every interrupt due before looking again, CPU 1 served CPU
# 0's stream for the whole run with its own request long acknowledged,
# and tlbpol-sim stopped: "cpu 1 waited 23.898 ms for acknowledgements".
out=$("$sim" dontneed --pages 1 --cpus 2 --nodes 1 --vm --threads 2 --policy linux \
	--cost vm_irq_exit_ns=15075 --cost vm_ipi_factor=7.86 --csv 2>&1) || {
	echo "$out"
	echo "FAIL: a waiting CPU did not get out of a stream of interrupts"
	exit 1
}
echo "$out"
echo "ok"
