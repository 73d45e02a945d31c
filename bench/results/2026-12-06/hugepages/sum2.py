# Four memory configurations in alternating runs (run.sh): rxpath's pools
# on 4 KiB pages (RXP_NO_HUGEPAGE) or THP, DPDK on 4 KiB pages
# (RXP_BENCH_DPDK_NO_HUGE) or hugepages. Medians over the runs of each
# side's ns/fragment, and of the per-run ratio (DPDK / rxpath).
import csv, glob, statistics as st, collections, sys
base = sys.argv[1] if len(sys.argv) > 1 else '.'
ns = collections.defaultdict(list); ratio = collections.defaultdict(list); groups = []
for f in sorted(glob.glob(base + '/[01][01].*/defrag.csv')):
    c = f.split('/')[-2].split('.')[0]
    for r in csv.DictReader(open(f)):
        if r['group'] not in groups: groups.append(r['group'])
        side = 'dpdk' if r['variant'].startswith('dpdk') else 'rx'
        ns[(r['group'], c, side)].append(float(r['median']))
        if side == 'rx': ratio[(r['group'], c)].append(float(r['ratio_to_baseline']))
cfgs = ['00', '10', '01', '11']
name = {'00': 'rx 4K / DPDK 4K', '10': 'rx THP / DPDK 4K', '01': 'rx 4K / DPDK huge', '11': 'rx THP / DPDK huge'}
print('row | ' + ' | '.join(name[c] for c in cfgs))
for g in groups:
    out = []
    for c in cfgs:
        out.append('%.0f / %.0f ns, %.2fx (%.2f-%.2f)' % (st.median(ns[(g,c,'rx')]), st.median(ns[(g,c,'dpdk')]),
                   st.median(ratio[(g,c)]), min(ratio[(g,c)]), max(ratio[(g,c)])))
    print(g + ' | ' + ' | '.join(out))
print('runs per configuration:', len(ratio[(groups[0], '00')]))
