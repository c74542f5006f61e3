# SPDX-License-Identifier: MIT
"""Figures out of raw outputs: one parser per measurement.

Each parser reads one Result (resultfile.py) and returns its figures as a
flat dictionary of strings, keyed "scenario.policy.column" and the like;
keys starting with "table." hold a whole Markdown table.  A figure keeps
the digits the program printed: nothing is rounded here, so the rendered
documents show exactly what the recorded files hold.  A line that does not
read as expected raises ResultError (the renderer stops).
"""

import re
from typing import Callable, Dict, List, Tuple

from resultfile import Result, ResultError, need

Values = Dict[str, str]

POLICIES = ('naive', 'before', 'linux', 'default', 'custom')
SIM_COLS = ('irq_sent', 'irq_recv', 'flushes', 'pages', 'full', 'flush_miss', 'ms',
            'metric', 'viol', 'x_before', 'x_linux')
NUM = r'-?[\d.]+|inf|nan'
TAG_COLS = ('tag_loads', 'tag_flushes', 'tag_all', 'rollovers', 'bcast', 'moves', 'reopened',
            'foreign')


def table(head: List[str], rows: List[List[str]]) -> str:
    out = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    out += ['| ' + ' | '.join(r) + ' |' for r in rows]
    return '\n'.join(out)


def parse_sim(res: Result, _sim: Values) -> Values:
    """tlbpol-sim's scenario tables (no argument, or scenarios and options)."""
    v: Values = {}
    scen = ''
    order: List[str] = []
    for ln in res.lines():
        m = re.match(r'tlbpol-sim: (\d+) CPUs on (\d+) nodes, TLB (\S+) entries, libtlbpol (\S+)$',
                     ln)
        if m:
            v['cpus'], v['nodes'], v['tlb'], v['version'] = m.groups()
            continue
        m = re.match(r'(\S+) \u2014 (.*?)(?: \(Linux ([0-9a-f]+)\))?$', ln)
        if m:
            scen = m.group(1)
            order.append(scen)
            v[scen + '.desc'] = m.group(2)
            if m.group(3):
                v[scen + '.commit'] = m.group(3)
            continue
        m = re.match(r'  policy .*modelled ms\s+(.*?)\s+viol ', ln)
        if m and scen:
            v[scen + '.metric'] = m.group(1)
            continue
        m = re.match(r'  tags \(--tags (.*)\): loads, ', ln)
        if m:
            v['tags'] = m.group(1)
            continue
        f = ln.split()
        # --tags: loads, tag flushes, flushes of all, rollovers, broadcasts,
        # moves, reopened, foreign hits (after "tags (" only: 9 fields).
        if scen and 'tags' in v and len(f) == 9 and f[0] in POLICIES and \
                all(x.isdigit() for x in f[1:]):
            for col, val in zip(TAG_COLS, f[1:]):
                v['%s.%s.%s' % (scen, f[0], col)] = val
            continue
        if scen and len(f) == 12 and f[0] in POLICIES and \
                all(re.fullmatch(NUM, x) for x in f[1:]):
            for col, val in zip(SIM_COLS, f[1:]):
                v['%s.%s.%s' % (scen, f[0], col)] = val
            v[scen + '.policies'] = ' '.join(
                filter(None, [v.get(scen + '.policies', ''), f[0]]))
            continue
        m = re.match(r'wall time ([\d.]+) s; (\d+) stale-TLB violations under every policy$', ln)
        if m:
            v['wall'], v['violations'] = m.groups()
    need(order, res, 'no scenario table')
    need('wall' in v, res, 'no "wall time" line')
    for s in order:
        need(s + '.policies' in v, res, 'scenario %s has no policy rows' % s)
    v['scenarios'] = ' '.join(order)
    v['count'] = str(len(order))
    rows = []
    for s in order:
        for p in v[s + '.policies'].split():
            k = '%s.%s.' % (s, p)
            rows.append([s if p == v[s + '.policies'].split()[0] else '', p,
                         v[k + 'irq_sent'], v[k + 'irq_recv'], v[k + 'flushes'],
                         v[k + 'ms'], v[k + 'metric'], v[k + 'viol'], v[k + 'x_linux']])
        v['table.' + s] = table(['scenario', 'policy', 'interrupts sent', 'received',
                                 'flushes', 'modelled ms', v[s + '.metric'],
                                 'violations', 'time x linux'],
                                rows[-len(v[s + '.policies'].split()):])
    if 'tags' in v:
        v['table.tags'] = table(
            ['scenario', 'policy', 'interrupts', 'broadcasts', 'modelled ms', 'time x linux',
             'tag loads', 'tag flushes', 'flushes of all', 'rollovers', 'moves to global',
             'reopened', 'violations'],
            [[s if p == v[s + '.policies'].split()[0] else '', p] +
             [v['%s.%s.%s' % (s, p, c)] for c in ('irq_sent', 'bcast', 'ms', 'x_linux') +
              TAG_COLS[:4] + ('moves', 'reopened', 'viol')]
             for s in order for p in v[s + '.policies'].split()])
    v['table.all'] = table(['scenario', 'policy', 'interrupts sent', 'received', 'flushes',
                            'modelled ms', 'figure of merit', 'violations', 'time x linux'],
                           rows)
    v['table.scenarios'] = table(['scenario', 'what runs', 'figure of merit'],
                                 [['`%s`' % s, v[s + '.desc'], v[s + '.metric']]
                                  for s in order])
    return v


def parse_scale(res: Result, _sim: Values) -> Values:
    """tlbpol-sim --scale SCENARIO: interrupts and time by CPU count."""
    v: Values = {}
    pols: List[str] = []
    rows = []
    for ln in res.lines():
        m = re.match(r'(\S+): interrupts sent and modelled time \(ms\) by CPU count$', ln)
        if m:
            v['scenario'] = m.group(1)
            continue
        if ln.split()[:1] == ['cpus']:
            pols = [w for w in ln.split()[1:] if w not in ('irq', 'ms')]
            continue
        f = ln.split()
        if pols and len(f) == 1 + 2 * len(pols) and f[0].isdigit():
            for i, p in enumerate(pols):
                v['%s.%s.irq' % (f[0], p)] = f[1 + 2 * i]
                v['%s.%s.ms' % (f[0], p)] = f[2 + 2 * i]
            for i, p in enumerate(pols):
                v['max.%s.irq' % p], v['max.%s.ms' % p] = f[1 + 2 * i], f[2 + 2 * i]
            rows.append(f)
            v['max_cpus'] = f[0]
            v.setdefault('min_cpus', f[0])
    need(rows, res, 'no scaling rows')
    head = ['CPUs'] + ['%s %s' % (p, c) for p in pols for c in ('interrupts', 'ms')]
    v['table.scale'] = table(head, rows)
    return v


def parse_backends(res: Result, _sim: Values) -> Values:
    """tlbpol-sim --scale SCENARIO --backend B, for each B: the cost model's
    choice beside interrupts only and B always."""
    v: Values = {}
    rows = []
    worst: Dict[str, float] = {}
    wins: Dict[str, int] = {}
    bk = ''
    for ln in res.lines():
        m = re.match(r'(\S+), policy default, backend (\S+): ', ln)
        if m:
            v['scenario'], bk = m.group(1), m.group(2)
            continue
        f = ln.split()
        if bk and len(f) == 9 and f[0].isdigit() and re.fullmatch(NUM, f[8]):
            ipi_ms, fixed_ms, choice_ms = float(f[2]), float(f[4]), float(f[7])
            worst[bk] = max(worst.get(bk, 0.0), float(f[8]))
            # Better than each fixed one: faster than both by 0.1% or more.
            wins[bk] = wins.get(bk, 0) + (choice_ms < 0.999 * min(ipi_ms, fixed_ms))
            rows.append([bk] + f)
    need(rows, res, 'no backend rows')
    for b in worst:
        v['%s.worst' % b] = '%.3f' % worst[b]
        v['%s.wins' % b] = str(wins[b])
    v['worst'] = '%.3f' % max(worst.values())
    v['wins'] = str(sum(wins.values()))
    v['backends'] = ', '.join(worst)
    v['table.backends'] = table(
        ['backend', 'CPUs', 'interrupts only: irq', 'ms', 'fixed: broadcasts', 'ms',
         'choice: irq', 'broadcasts', 'ms', 'choice / best fixed'], rows)
    return v


def parse_replay(res: Result, _sim: Values) -> Values:
    """lab/validate/run.sh --replay-only: predicted against measured, by program."""
    v: Values = {}
    rows = []
    progs: List[str] = []
    for ln in res.lines():
        # One table per machine set, the newest first: read only that one.
        if ln.startswith('machine ') and rows:
            break
        f = ln.split()
        if len(f) == 9 and re.fullmatch(r'\d+', f[5]) and re.fullmatch(NUM, f[7]):
            prog = f[0]
            progs.append(prog)
            for k, val in zip(('tlb_row', 'own', 'calls', 'baseline', 'events', 'linux',
                               'ratio', 'status'), f[1:]):
                v['%s.%s' % (prog, k)] = val
            rows.append(f)
            continue
        m = re.match(r'  (\S+): .*\[expected-out: (.*)\]$', ln)
        if m:
            v['expected'] = v.get('expected', '') + '- `%s`: %s\n' % m.groups()
            continue
        m = re.match(r'  (\S+): (?:IPIs/op )?predicted (\S+), measured \(own\) (\S+);', ln)
        if m:
            v[m.group(1) + '.predicted'], v[m.group(1) + '.measured'] = m.group(2, 3)
            continue
        m = re.match(r'  tlb_flush2 2T/1T throughput \(run by run\): measured (\S+); '
                     r'model (\S+) ', ln)
        if m:
            v['tf2.ratio_measured'], v['tf2.ratio_model'] = m.groups()
            continue
        m = re.match(r'  violations under every policy: (.*)$', ln)
        if m:
            v['violations'] = str(sum(int(x.split('=')[1]) for x in m.group(1).split()))
    need(rows, res, 'no program rows')
    need('violations' in v, res, 'no violations line')
    v['programs'] = ' '.join(progs)
    v['count'] = str(len(progs))
    v['ok'] = str(sum(1 for r in rows if r[8] == 'ok'))
    v['expected'] = v.get('expected', '- none\n').rstrip('\n')
    v['table.programs'] = table(
        ['program', 'kernel: TLB row', 'own IPIs', 'flush calls', 'trace events',
         'linux predicts', 'predicted / measured', 'status'],
        [[r[0], r[1], r[2], r[3], r[5], r[6], r[7], r[8]] for r in rows])
    return v


STAMP_CELL = re.compile(r'(\S+):\s+(\d+) ->\s+(\d+) \(([^)]*)\), all\s+(\d+) ->\s+(\d+)$')


def parse_stamps(res: Result, _sim: Values) -> Values:
    """validate.py stamps: unmap-caused interrupts, linux -> default, by allocator."""
    v: Values = {}
    rows = []
    tags: List[str] = []
    on = False
    for ln in res.lines():
        if ln.startswith('unmap-caused interrupts'):
            on = True
            continue
        if not on or not ln.startswith('  '):
            continue
        prog, _, rest = ln.strip().partition(' ')
        row = [prog]
        for cell in rest.split(';'):
            m = STAMP_CELL.match(cell.strip())
            need(m, res, 'cannot read %r' % cell)
            assert m
            tag = m.group(1)
            if tag not in tags:
                tags.append(tag)
            for k, val in zip(('unmap_linux', 'unmap_default', 'gain', 'all_linux',
                               'all_default'), m.groups()[1:]):
                v['%s.%s.%s' % (prog, tag, k)] = val
            row.append('%s → %s; all %s → %s' % m.group(2, 3, 5, 6))
        rows.append(row)
    need(rows, res, 'no "unmap-caused interrupts" block')
    v['table.unmap'] = table(['program'] + ['allocator %s' % t for t in tags], rows)
    return v


def parse_stress(res: Result, _sim: Values) -> Values:
    m = re.search(r'^grand total: runs=(\d+) events=(\d+) violations=(\d+) failed_runs=(\d+) '
                  r'seed=(\d+) time=(\d+)s$', res.out, re.M)
    need(m, res, 'no "grand total" line')
    assert m
    v = dict(zip(('runs', 'events', 'violations', 'failed', 'seed', 'time'), m.groups()))
    m = re.search(r'^stress.sh: (\d+) runs x (\d+) rule masks x (\d+) events', res.out, re.M)
    need(m, res, 'no "stress.sh: N runs" line')
    assert m
    v['masks'], v['per_config'] = m.group(2, 3)
    return v


def parse_mutants(res: Result, _sim: Values) -> Values:
    """lab/mutants/run.py: one verdict line per planted bug, then the sums."""
    m = re.search(r'^killed by a safety checker: (\d+) of (\d+); '
                  r'killed by anything: (\d+) of (\d+)$', res.out, re.M)
    need(m, res, 'no "killed by a safety checker" line')
    assert m
    v = dict(zip(('safety', 'total', 'any'), m.group(1, 2, 3)))
    # Before the runner left its own tests out of its unit checker, the
    # anchor test (which fails on every mutated tree, the mutant's text
    # being gone) was one unit kill of every mutant: taken off here.
    anchor = "unit checker: the unit suite without the runner's own tests" not in res.out
    v['note'] = ('Recorded before the runner left its own tests out of its unit checker: '
                 'its anchor test, which fails on every mutated tree, counted one unit kill '
                 'of each planted bug; the counts here are one less, and a bug killed by '
                 'that alone shows SURVIVED.' if anchor else '')
    rows = []
    for name, verdict, by in re.findall(
            r'^(\S+): (KILLED \(oracle\)|killed \(assert/hang only\)|SURVIVED|STALE|'
            r'does not build)(?:: (.*))?$', res.out, re.M):
        # Each checker with its count, the violation kinds left out.
        cks = [re.sub(r'\(.*?\)', '', c) for c in by.split()]
        if anchor:
            cks = [('unit:%d' % (int(c[5:]) - 1) if c.startswith('unit:') else c)
                   for c in cks if c != 'unit:1']
            if verdict.startswith('killed') and not cks:
                verdict = 'SURVIVED'
        rows.append(['`%s`' % name, verdict, ' '.join(cks)])
    need(len(rows) == int(v['total']), res, 'a verdict line per mutant')
    if anchor:
        v['any'] = str(sum(r[1].lower().startswith('killed') for r in rows))
    v['table'] = table(['planted bug', 'verdict', 'checkers that caught it (count)'], rows)
    return v


def parse_softmmu(res: Result, _sim: Values) -> Values:
    v: Values = {}
    cols = ('wall', 'macc', 'mm_ops', 'kicks', 'flushes', 'full', 'pages', 'stale',
            'kicks_naive', 'kicks_linux', 'wall_naive', 'wall_linux')
    rows = []
    for ln in res.lines():
        f = ln.split()
        if len(f) == 13 and f[0] in POLICIES and all(re.fullmatch(NUM, x) for x in f[1:]):
            for c, val in zip(cols, f[1:]):
                v['%s.%s' % (f[0], c)] = val
            rows.append(f)
        elif len(f) == 4 and f[0] in POLICIES and all(x.isdigit() for x in f[1:]):
            for c, val in zip(('stamped', 'reused', 'waited'), f[1:]):
                v['%s.%s' % (f[0], c)] = val
    last = [ln for ln in res.lines() if ln.strip()]
    v['verdict'] = last[-1] if last else ''
    need(rows, res, 'no policy rows')
    v['table.policies'] = table(['policy', 'wall s', 'M accesses/s', 'mm ops', 'kicks',
                                 'flushes', 'stale', 'kicks / naive', 'kicks / linux',
                                 'wall / naive', 'wall / linux'],
                                [r[:6] + [r[8]] + r[9:] for r in rows])
    return v


def parse_unikernel(res: Result, sim: Values) -> Values:
    """The test kernel's table (its workloads named as tlbpol-sim's
    scenarios where they are the same)."""
    v: Values = {}
    cols: List[str] = []
    rows: List[List[str]] = []
    wl = ''
    for ln in res.lines():
        left = ln.split('|')[0].split()
        if left[:2] == ['workload', 'rules']:
            cols = left[2:]
            continue
        if not cols or not left:
            continue
        if left[0] not in POLICIES:
            wl = left[0]
            left = left[1:]
        if len(left) == 1 + len(cols) and left[0] in POLICIES and \
                all(re.fullmatch(NUM, x) for x in left[1:]):
            for c, val in zip(cols, left[1:]):
                v['%s.%s.%s' % (wl, left[0], c)] = val
            rows.append([wl if not rows or rows[-1][-1] != wl else '', left[0]] + left[1:])
            rows[-1].append(wl)
    need(rows, res, 'no workload table')
    need('stale' in cols and 'IPIs-sent' in cols, res, 'no stale or IPIs-sent column')
    # flush2_stamp's settles, by rules: frames stamped / reused / settles that
    # waited; settle cycles mean, p50 and p99 (upper bounds of log2 buckets).
    for m in re.finditer(r'^\s+(\w+)\s+(\d+) / (\d+) / (\d+); (\d+), < (\d+), < (\d+) cycles;'
                         r' IPIs (\d+)$', res.out, re.M):
        for k, val in zip(('stamped', 'reused', 'waited', 'mean', 'p50', 'p99', 'ipis'),
                          m.groups()[1:]):
            v['settle.%s.%s' % (m.group(1), k)] = val
    m = re.search(r'^params: (.*)$', res.out, re.M)
    v['params'] = m.group(1) if m else '?'
    v['stale'] = str(sum(int(v['%s.%s.stale' % (r[-1], r[1])]) for r in rows))
    v['workloads'] = str(len({r[-1] for r in rows}))
    m = re.search(r'^run.sh: (.*)$', res.err, re.M)
    v['machine'] = m.group(1) if m else '?'
    pick = [cols.index(c) for c in ('ops', 'IPIs-sent', 'invlpg', 'full-fl', 'stale')
            if c in cols]
    v['table.workloads'] = table(['workload', 'rules'] + [cols[i] for i in pick],
                                 [r[:2] + [r[2 + i] for i in pick] for r in rows])
    return v


def parse_kvm_emulation(res: Result, _sim: Values) -> Values:
    """kvm_emulation.sh: emulated instructions per rule set, and where."""
    v: Values = {}
    for ln in res.lines():
        f = ln.split('\t')
        if f[0] != 'emulated':
            continue
        r = dict(kv.split('=', 1) for kv in f[1:])
        v[r['rules'] + '.all'] = r['all']
        v[r['rules'] + '.prot64'] = r['prot64']
        v[r['rules'] + '.top'] = ', '.join('`%s` %s' % tuple(t.split(':'))
                                           for t in r['top'].split(',') if t)
    need('linux.all' in v and 'default.all' in v, res, 'no "emulated" line for linux and default')
    m = re.search(r'^# dmesg: \[[^]]*\] (.*)$', res.out, re.M)
    v['hypervisor'] = m.group(1) if m else '?'
    return v


def parse_bench(res: Result, _sim: Values) -> Values:
    v: Values = {}
    goal = '?'
    rows = []
    for ln in res.lines():
        m = re.match(r'  (\d) (.*?)\s{2,}([\d.]+)\s+([\d.]+)\s+([\d.]+)x$', ln)
        if m:
            rows.append(list(m.groups()))
            continue
        m = re.match(r'  (.*) within ([\d.]+)x of an empty call:$', ln)
        if m:
            goal = m.group(2)
            continue
        m = re.match(r'\s+(submit|decide|pages 2 apart|adjacent pages) ([\d.]+)x (\S+)', ln)
        if m:
            k = m.group(1).replace(' ', '_')
            v[k + '.ratio'], v[k + '.target'] = m.group(2, 3)
            v[k + '.goal'] = goal
            continue
        m = re.match(r'\s+2-thread scaling >= ([\d.]+)x: ([\d.]+)x (\S+)', ln)
        if m:
            v['scaling.goal'], v['scaling.ratio'], v['scaling.target'] = m.groups()
            continue
        m = re.match(r'samples retaken because the CPU was shared: (\d+)', ln)
        if m:
            v['retaken'] = m.group(1)
    need(rows, res, 'no operation rows')
    for k in ('submit.ratio', 'decide.ratio', 'pages_2_apart.ratio', 'scaling.ratio'):
        need(k in v, res, 'no %s in the targets' % k)
    v['table.ops'] = table(['operation', 'ns/op', 'empty call ns', 'ratio'],
                           [[r[1], r[2], r[3], r[4] + 'x'] for r in rows])
    return v


def parse_memory(res: Result, _sim: Values) -> Values:
    v: Values = {}
    rows = []
    # Each size's line, then (tests/test_layout.c) what the last CPU adds:
    # the per-CPU cost, without the state that does not grow with the CPUs;
    # then the bytes per CPU with a tag allocator (6 slots, 64 global tags).
    for m in re.finditer(r'^# (\d+) CPUs: (\d+) bytes, ([\d.]+) KiB per CPU\n'
                         r'(?:#\s+\d+ bytes per CPU, (\d+) for the last one\n)?'
                         r'(?:#\s+with the tag allocator: (\d+) bytes per CPU)?', res.out, re.M):
        v['%s.bytes' % m.group(1)], v['%s.kib_per_cpu' % m.group(1)] = m.group(2, 3)
        rows.append([m.group(1), m.group(2), m.group(3), m.group(4) or '-', m.group(5) or '-'])
    need(rows, res, 'no "# N CPUs: B bytes" lines')
    v['summary'] = '; '.join('%s CPUs: %s bytes (%s KiB per CPU; one CPU more: %s bytes; '
                             'with tags: %s bytes per CPU)' % tuple(r) for r in rows)
    v['table.size'] = table(['CPUs', 'tlbpol_engine_size() bytes', 'KiB per CPU',
                             'bytes the last CPU adds',
                             'bytes per CPU with a tag allocator (6 slots, 64 global)'], rows)
    return v


def parse_kernel_counts(res: Result, _sim: Values) -> Values:
    v: Values = {}
    rows = []
    for ln in res.lines():
        r = dict(kv.split('=', 1) for kv in ln.split('\t'))
        p = r['program']
        v[p + '.measured'] = '%s-%s' % (r['measured_min'], r['measured_max'])
        v[p + '.cpu_s'] = r['cpu_s']
        rows.append([p, r['runs'], r['calls'], r['cpu_s'], r['desc']])
    v['count'] = str(len(rows))
    v['table.programs'] = table(['program', 'TLB row per run', 'flush calls per run',
                                 'CPU s per run', 'what runs'], rows)
    return v


def parse_tcg(res: Result, _sim: Values) -> Values:
    v: Values = {}
    r2: List[str] = []
    ipis: List[str] = []
    for m in re.finditer(r'^summary run=\d+ ratio_2t_1t=(\S+) ratio_apart_1t=\S+ '
                         r'ipis_per_op_2t=(\S+)', res.out, re.M):
        r2.append(m.group(1))
        ipis.append(m.group(2))
    need(r2, res, 'no "summary run=" lines')
    v['runs'] = str(len(r2))
    v['ratio_2t_1t'] = '%s-%s' % (min(r2, key=float), max(r2, key=float))
    v['ipis_per_op_2t'] = '%s-%s' % (min(ipis, key=float), max(ipis, key=float))
    med = re.search(r'^summary ipi_rtt_median rtt_ns=(\d+) recv_ns=(\d+) mutual_rtt_ns=(\d+)',
                    res.out, re.M)
    need(med, res, 'no "summary ipi_rtt_median" line')
    assert med
    v['rtt_ns'], v['recv_ns'], v['mutual_rtt_ns'] = med.groups()
    v['qemu'] = res.head['qemu']
    return v


def parse_cited(res: Result, _sim: Values) -> Values:
    v: Values = {}
    for ln in res.lines():
        scen, patch, reported = ln.split('\t')
        v[scen + '.patch'], v[scen + '.reported'] = patch, reported
    need(v, res, 'no lines')
    v['count'] = str(len(v) // 2)
    return v


def parse_traces(res: Result, _sim: Values) -> Values:
    """The trace files' headers: one row per trace."""
    heads: Dict[str, Dict[str, str]] = {}
    for ln in res.lines():
        path, key, val = ln.split('\t')
        heads.setdefault(path, {})[key] = val
    need(heads, res, 'no trace files')
    rows = []
    for path, h in heads.items():
        for key in ('recorded', 'program', 'events'):
            need(key in h, res, '%s: no "# %s:" line' % (path, key))
        rows.append(['`%s`' % path, h['program'], h['recorded'], h['events'].split(' ')[0],
                     h.get('threads', '?')])
    return {'count': str(len(rows)),
            'table.traces': table(['trace', 'program', 'recorded', 'events', 'threads'],
                                  rows)}


VERSUS_COLS = ('kind', 'name', 'cpus', 'nodes', 'events', 'runs', 'linux_irq', 'default_irq',
               'irq_x', 'linux_time', 'default_time', 'time_x', 'verdict')


def parse_versus(res: Result, _sim: Values) -> Values:
    """lab/results/versus.py sim|kernel: default against linux, one row per
    scenario and size, replayed program or test-kernel workload."""
    v: Values = {}
    rows: List[Tuple[List[str], str]] = []
    skipped: List[str] = []
    for ln in res.lines():
        left, _, note = ln.partition(' # ')
        f = left.split()
        if len(f) == len(VERSUS_COLS) and f[-1] in ('ok', 'behind', 'FAIL'):
            rows.append((f, note))
            for c, val in zip(VERSUS_COLS[6:], f[6:]):
                v['%s.%s.%s.%s' % (f[0], f[1], f[2], c)] = val
            continue
        m = re.match(r'versus: (\w+) skipped: (.*)$', ln)
        if m:
            skipped.append('`%s` skipped: %s' % m.groups())
            continue
        m = re.match(r'versus: (\d+) rows: (\d+) ok, (\d+) behind, (\d+) FAIL$', ln)
        if m:
            v['rows'], v['ok'], v['behind'], v['fail'] = m.groups()
            continue
        m = re.match(r'versus: .*S = 1\.\.(\d+);', ln) or \
            re.match(r'versus: .*, (\d+) boots each;', ln)
        if m:
            v['runs'] = m.group(1)
    need(rows, res, 'no versus rows')
    need('rows' in v and int(v['rows']) == len(rows), res, 'no "versus: N rows" line to match')

    def cell(f: List[str], note: str) -> List[str]:
        verdict = '**%s**' % f[12] if f[12] != 'ok' else f[12]
        if note:
            verdict += ': ' + note.replace('|', '\\|')
        return [f[6], f[7], f[8], f[9], f[10], f[11], verdict]

    pol = ['linux', 'default', 'default / linux']
    sc = [r for r in rows if r[0][0] == 'scenario']
    if sc:
        v['table.scenarios'] = table(
            ['scenario', 'CPUs (nodes)', '--events'] + ['interrupts ' + p for p in pol] +
            ['modelled ms ' + p for p in pol] + ['verdict'],
            [['`%s`' % f[1], '%s (%s)' % (f[2], f[3]), f[4].replace('-', 'default')] +
             cell(f, n) for f, n in sc])
    rp = [r for r in rows if r[0][0] == 'replay']
    if rp:
        v['table.replays'] = table(
            ['program', 'CPUs'] + ['interrupts ' + p for p in pol] +
            ['modelled ms ' + p for p in pol] + ['verdict'],
            [[f[1], f[2]] + cell(f, n) for f, n in rp])
    kr = [r for r in rows if r[0][0] in ('kvm', 'tcg')]
    if kr:
        v['table.kernel'] = table(
            ['accelerator', 'workload', 'ops'] + ['IPIs ' + p for p in pol] +
            ['cyc/op ' + p for p in pol] + ['verdict'],
            [[f[0].upper(), f[1], f[4]] + cell(f, n) for f, n in kr]) + \
            ''.join('\n\n' + s + '.' for s in skipped)
    for kind in ('scenario', 'replay', 'kvm', 'tcg'):
        mine = [f for f, _ in rows if f[0] == kind]
        for verdict in ('ok', 'behind', 'FAIL'):
            v['%s.%s' % (kind, verdict.lower())] = str(sum(1 for f in mine if f[12] == verdict))
        v[kind + '.rows'] = str(len(mine))
    return v


# name -> (topic, parser); topic '' is a file of lab/validate/data.
Parser = Callable[[Result, Values], Values]
PARSERS: Dict[str, Tuple[str, Parser]] = {
    'sim-main': ('sim', parse_sim),
    'sim-scale-reclaim': ('sim', parse_scale),
    'sim-backends-reclaim': ('sim', parse_backends),
    'sim-backends-dontneed': ('sim', parse_backends),
    'sim-tags-invlpgb': ('sim', parse_sim),
    'sim-tags-scarce': ('sim', parse_sim),
    'sim-1024': ('sim', parse_sim),
    'sim-dontneed-vm2': ('sim', parse_sim),
    'sim-lazy-stamps': ('sim', parse_sim),
    'replay': ('programs', parse_replay),
    'stamps': ('programs', parse_stamps),
    'stress': ('safety', parse_stress),
    'mutants': ('safety', parse_mutants),
    'softmmu': ('safety', parse_softmmu),
    'unikernel-tcg': ('safety', parse_unikernel),
    'unikernel-kvm': ('kernel', parse_unikernel),
    'unikernel-kvm-reuse-now': ('kernel', parse_unikernel),
    'versus': ('sim', parse_versus),
    'versus-kernel': ('kernel', parse_versus),
    'kvm-emulation': ('kernel', parse_kvm_emulation),
    'bench': ('overhead', parse_bench),
    'engine-memory': ('overhead', parse_memory),
    'kernel-counts': ('', parse_kernel_counts),
    'kernel-tcg': ('', parse_tcg),
    'cited': ('', parse_cited),
    'traces': ('', parse_traces),
}


def parse(res: Result, sim: Values) -> Values:
    """res's figures; sim: the main job's, which name the patches' scenarios."""
    try:
        return PARSERS[res.name][1](res, sim)
    except (KeyError, IndexError, ValueError) as e:
        raise ResultError('%s: cannot read it: %r' % (res.path, e)) from e
