#!/usr/bin/env python3
"""Add per-CPU counters to kernel/dma/swiotlb.c (6.12) for the experiment.

Usage: instrument.py IN OUT. Applied alike to the stock file and to the
reverted one (revert-55c54386.patch), so both kernels pay the same probes.
Counters are per CPU (this_cpu_add: no shared cache line, unlike the
debugfs total_used atomics), read from /sys/kernel/debug/swiotlb/fp_stats.
"""
import sys

src = open(sys.argv[1]).read()


def sub(old: str, new: str) -> None:
    global src
    if src.count(old) != 1:
        sys.exit(f"instrument.py: pattern found {src.count(old)} times: {old!r}")
    src = src.replace(old, new)


sub('#include <linux/types.h>\n', '''#include <linux/types.h>
#include <linux/percpu.h>
#include <linux/sched/clock.h>
#include <linux/seq_file.h>

/* Experiment counters (flashpath experiments/swiotlb-qemu), one set per CPU. */
struct fp_stat {
	unsigned long maps;	/* swiotlb_find_slots successes */
	unsigned long unmaps;	/* swiotlb_release_slots (non-transient) */
	unsigned long visits;	/* swiotlb_search_pool_area calls */
	unsigned long fastfail;	/* ... failed on the area->used check */
	unsigned long scanfail;	/* ... scanned the area and failed */
	unsigned long slots;	/* slots examined by the scan loop */
	unsigned long contended;	/* area lock not free at first try (map) */
	unsigned long ucontended;	/* area lock not free at first try (unmap) */
	unsigned long transient;	/* transient pools allocated */
	unsigned long grow;	/* schedule_work(dyn_alloc) calls */
	unsigned long fails;	/* mappings that failed */
	unsigned long find_ns;	/* local_clock() time in swiotlb_find_slots */
	unsigned long unmap_ns;	/* local_clock() time in swiotlb_release_slots */
};
static DEFINE_PER_CPU(struct fp_stat, fp_stat);
#define FP_ADD(f, v) this_cpu_add(fp_stat.f, (v))
''')

# Area search: count visits, lock contention, fast fails, slots scanned.
sub('''	spin_lock_irqsave(&area->lock, flags);
	if (unlikely(nslots > pool->area_nslabs - area->used))
		goto not_found;
''', '''	FP_ADD(visits, 1);
	slots_checked = 0;
	if (!spin_trylock_irqsave(&area->lock, flags)) {
		FP_ADD(contended, 1);
		spin_lock_irqsave(&area->lock, flags);
	}
	if (unlikely(nslots > pool->area_nslabs - area->used)) {
		FP_ADD(fastfail, 1);
		goto not_found;
	}
''')
sub('''		index = wrap_area_index(pool, index + stride);
		slots_checked += stride;
	}

not_found:
''', '''		index = wrap_area_index(pool, index + stride);
		slots_checked += stride;
	}
	FP_ADD(slots, slots_checked);
	FP_ADD(scanfail, 1);

not_found:
''')
sub('''found:
	/*
	 * If we find a slot that indicates we have 'nslots' number of''', '''found:
	FP_ADD(slots, slots_checked + 1);
	/*
	 * If we find a slot that indicates we have 'nslots' number of''')

# Whole search (dynamic variant): time, maps, growth, transient pools.
sub('''	if (alloc_size > IO_TLB_SEGSIZE * IO_TLB_SIZE)
		return -1;

''', '''	u64 fp_t0;

	if (alloc_size > IO_TLB_SEGSIZE * IO_TLB_SIZE)
		return -1;

	fp_t0 = local_clock();
''')
sub('''	schedule_work(&mem->dyn_alloc);
''', '''	schedule_work(&mem->dyn_alloc);
	FP_ADD(grow, 1);
''')
sub('''	if (!pool)
		return -1;

	index = swiotlb_search_pool_area(dev, pool, 0, orig_addr,''', '''	if (!pool) {
		FP_ADD(fails, 1);
		return -1;
	}

	index = swiotlb_search_pool_area(dev, pool, 0, orig_addr,''')
sub('''	inc_transient_used(mem, pool->nslabs);

found:
''', '''	inc_transient_used(mem, pool->nslabs);
	FP_ADD(transient, 1);

found:
	FP_ADD(find_ns, local_clock() - fp_t0);
	FP_ADD(maps, 1);
''')

# Release: count unmaps and lock contention there.
sub('''	int count, i;

	index = (tlb_addr - offset - mem->start) >> IO_TLB_SHIFT;''', '''	int count, i;
	u64 fp_t0 = local_clock();

	index = (tlb_addr - offset - mem->start) >> IO_TLB_SHIFT;''')
sub('''	BUG_ON(aindex >= mem->nareas);

	spin_lock_irqsave(&area->lock, flags);
''', '''	BUG_ON(aindex >= mem->nareas);

	if (!spin_trylock_irqsave(&area->lock, flags)) {
		FP_ADD(ucontended, 1);
		spin_lock_irqsave(&area->lock, flags);
	}
''')
sub('''	area->used -= nslots;
	spin_unlock_irqrestore(&area->lock, flags);

	dec_used(dev->dma_io_tlb_mem, nslots);
''', '''	area->used -= nslots;
	spin_unlock_irqrestore(&area->lock, flags);

	dec_used(dev->dma_io_tlb_mem, nslots);
	FP_ADD(unmaps, 1);
	FP_ADD(unmap_ns, local_clock() - fp_t0);
''')

# debugfs: one line per possible CPU.
sub('''static int __init swiotlb_create_default_debugfs(void)
{
	swiotlb_create_debugfs_files(&io_tlb_default_mem, "swiotlb");
''', '''static int fp_stats_show(struct seq_file *m, void *v)
{
	int cpu;

	seq_puts(m, "cpu maps unmaps visits fastfail scanfail slots contended ucontended transient grow fails find_ns unmap_ns\\n");
	for_each_possible_cpu(cpu) {
		struct fp_stat *s = per_cpu_ptr(&fp_stat, cpu);

		seq_printf(m, "%d %lu %lu %lu %lu %lu %lu %lu %lu %lu %lu %lu %lu %lu\\n",
			   cpu, s->maps, s->unmaps, s->visits, s->fastfail,
			   s->scanfail, s->slots, s->contended, s->ucontended,
			   s->transient, s->grow, s->fails, s->find_ns,
			   s->unmap_ns);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(fp_stats);

static int __init swiotlb_create_default_debugfs(void)
{
	swiotlb_create_debugfs_files(&io_tlb_default_mem, "swiotlb");
	debugfs_create_file("fp_stats", 0400, io_tlb_default_mem.debugfs,
			    NULL, &fp_stats_fops);
''')
open(sys.argv[2], "w").write(src)
