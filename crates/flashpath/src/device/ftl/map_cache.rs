//! The controller's cache of L2P map pages (MQSim's "CMT", cached mapping
//! table, `CMU-SAFARI/MQSim:src/ssd/Address_Mapping_Unit_Page_Level.cpp`;
//! DFTL, Gupta et al., ASPLOS'09), here at map-page granularity: SRAM holds
//! `capacity` map pages, replaced LRU. A dirty page (entries changed by
//! writes or GC) must be written back to NAND when evicted.
//!
//! Intrusive doubly linked list over fixed arrays: no allocation after
//! construction, O(1) per access.

const NIL: u32 = u32::MAX;

/// What an access did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Hit,
    /// The page was not cached; it is now (unless capacity is 0). `evicted`
    /// is the map page pushed out, with whether it was dirty.
    Miss {
        evicted: Option<(u32, bool)>,
    },
}

#[derive(Clone, Debug)]
pub struct MapCache {
    capacity: u32,
    /// Slot of each map page, or NIL. One u32 per map page: the map of the
    /// map, 1/4096 of the L2P, so it is allocated up front.
    slot_of: Vec<u32>,
    page: Vec<u32>,
    prev: Vec<u32>,
    next: Vec<u32>,
    dirty: Vec<bool>,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
    len: u32,
}

impl MapCache {
    pub fn new(capacity: u32, map_pages: u32) -> Self {
        let c = capacity as usize;
        MapCache {
            capacity,
            slot_of: vec![NIL; map_pages as usize],
            page: vec![NIL; c],
            prev: vec![NIL; c],
            next: vec![NIL; c],
            dirty: vec![false; c],
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }

    /// Bytes of its arrays (their capacities): the model's own memory,
    /// not the simulated DRAM's.
    pub fn model_bytes(&self) -> usize {
        (self.slot_of.capacity()
            + self.page.capacity()
            + self.prev.capacity()
            + self.next.capacity())
            * std::mem::size_of::<u32>()
            + self.dirty.capacity()
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn contains(&self, mp: u32) -> bool {
        self.slot_of[mp as usize] != NIL
    }

    pub fn is_dirty(&self, mp: u32) -> bool {
        let s = self.slot_of[mp as usize];
        s != NIL && self.dirty[s as usize]
    }

    /// Drop every cached page (power cycle); dirty state is lost, which is
    /// only right after the caller has accounted for it.
    pub fn clear(&mut self) {
        while self.tail != NIL {
            let s = self.tail;
            self.unlink(s);
            self.slot_of[self.page[s as usize] as usize] = NIL;
        }
        self.len = 0;
    }

    #[inline]
    fn unlink(&mut self, s: u32) {
        let (p, n) = (self.prev[s as usize], self.next[s as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
    }

    #[inline]
    fn push_front(&mut self, s: u32) {
        self.prev[s as usize] = NIL;
        self.next[s as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = s;
        } else {
            self.tail = s;
        }
        self.head = s;
    }

    /// Look up map page `mp`, make it most recently used, and mark it dirty
    /// if `make_dirty`. On a miss it is loaded (the caller pays the NAND
    /// read), evicting the LRU page when full.
    #[inline]
    pub fn access(&mut self, mp: u32, make_dirty: bool) -> Access {
        let s = self.slot_of[mp as usize];
        if s != NIL {
            if self.head != s {
                self.unlink(s);
                self.push_front(s);
            }
            self.dirty[s as usize] |= make_dirty;
            return Access::Hit;
        }
        if self.capacity == 0 {
            return Access::Miss { evicted: None };
        }
        let (slot, evicted) = if self.len < self.capacity {
            self.len += 1;
            (self.len - 1, None)
        } else {
            let v = self.tail;
            self.unlink(v);
            let old = self.page[v as usize];
            self.slot_of[old as usize] = NIL;
            (v, Some((old, self.dirty[v as usize])))
        };
        self.page[slot as usize] = mp;
        self.dirty[slot as usize] = make_dirty;
        self.slot_of[mp as usize] = slot;
        self.push_front(slot);
        Access::Miss { evicted }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_order_and_dirty_eviction() {
        let mut c = MapCache::new(2, 10);
        assert_eq!(c.access(1, false), Access::Miss { evicted: None });
        assert_eq!(c.access(2, true), Access::Miss { evicted: None });
        assert_eq!(c.access(1, false), Access::Hit);
        // 2 is LRU now, and dirty.
        assert_eq!(
            c.access(3, false),
            Access::Miss {
                evicted: Some((2, true))
            }
        );
        assert!(!c.contains(2));
        assert_eq!(
            c.access(4, false),
            Access::Miss {
                evicted: Some((1, false))
            }
        );
        assert_eq!(c.len(), 2);
        c.clear();
        assert!(c.is_empty());
        assert!(!c.contains(3));
    }

    #[test]
    fn zero_capacity_always_misses() {
        let mut c = MapCache::new(0, 4);
        assert_eq!(c.access(1, true), Access::Miss { evicted: None });
        assert_eq!(c.access(1, true), Access::Miss { evicted: None });
    }
}
