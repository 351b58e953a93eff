#!/usr/bin/env python3
"""Make one kernel/dma/swiotlb.c (6.12) that runs either search order.

Usage: both-orders.py STOCK REVERTED OUT. The boot parameter
fp_swiotlb_order=pool-first runs the order from before commit 55c543865b76
(the reverted file's swiotlb_pool_find_slots loop); without it the stock
area-first order runs. One kernel build serves both sides of the
comparison: the two differ only in this branch, taken once per mapping.
"""
import sys

stock = open(sys.argv[1]).read()
reverted = open(sys.argv[2]).read()

start = reverted.index("/**\n * swiotlb_pool_find_slots() - search for slots in one memory pool")
end = reverted.index("/**\n * swiotlb_find_slots() - search for slots in the whole swiotlb")
pool_find = reverted[start:end]

anchor = "/**\n * swiotlb_search_area() - search one memory area in all pools"
assert stock.count(anchor) == 1
param = '''/* Experiment switch: fp_swiotlb_order=pool-first restores the old order. */
static bool fp_pool_first;
static int __init fp_setup_order(char *str)
{
	fp_pool_first = !strcmp(str, "pool-first");
	pr_info("search order: %s\\n", fp_pool_first ? "pool-first" : "area-first");
	return 1;
}
__setup("fp_swiotlb_order=", fp_setup_order);

'''
out = stock.replace(anchor, param + pool_find + anchor)

loop = '''	cpu = raw_smp_processor_id();
	for (i = 0; i < default_nareas; ++i) {
		index = swiotlb_search_area(dev, cpu, i, orig_addr, alloc_size,
					    alloc_align_mask, &pool);
		if (index >= 0)
			goto found;
	}
'''
both = '''	if (fp_pool_first) {
		rcu_read_lock();
		list_for_each_entry_rcu(pool, &mem->pools, node) {
			index = swiotlb_pool_find_slots(dev, pool, orig_addr,
							alloc_size, alloc_align_mask);
			if (index >= 0) {
				rcu_read_unlock();
				goto found;
			}
		}
		rcu_read_unlock();
	} else {
		cpu = raw_smp_processor_id();
		for (i = 0; i < default_nareas; ++i) {
			index = swiotlb_search_area(dev, cpu, i, orig_addr,
						    alloc_size, alloc_align_mask,
						    &pool);
			if (index >= 0)
				goto found;
		}
	}
'''
assert out.count(loop) == 1
out = out.replace(loop, both)
open(sys.argv[3], "w").write(out)
