//! A slab of in-flight objects addressed by a small integer key. Freed slots
//! are reused (last freed, first reused), so a run that keeps at most N
//! requests in flight touches N slots and allocates only while growing.

pub struct Slab<T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl<T> Slab<T> {
    pub fn with_capacity(capacity: usize) -> Self {
        Slab {
            slots: Vec::with_capacity(capacity),
            free: Vec::with_capacity(capacity),
            live: 0,
        }
    }

    pub fn insert(&mut self, value: T) -> u32 {
        self.live += 1;
        if let Some(key) = self.free.pop() {
            self.slots[key as usize] = Some(value);
            key
        } else {
            self.slots.push(Some(value));
            (self.slots.len() - 1) as u32
        }
    }

    /// Remove and return the object; a stale key is a model bug.
    pub fn remove(&mut self, key: u32) -> T {
        let value = self.slots[key as usize]
            .take()
            .expect("slab: key removed twice");
        self.free.push(key);
        self.live -= 1;
        value
    }

    pub fn get(&self, key: u32) -> &T {
        self.slots[key as usize].as_ref().expect("slab: stale key")
    }

    pub fn get_mut(&mut self, key: u32) -> &mut T {
        self.slots[key as usize].as_mut().expect("slab: stale key")
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn keys_are_unique_while_live(ops in proptest::collection::vec(any::<bool>(), 1..500)) {
            let mut slab = Slab::with_capacity(2);
            let mut live: Vec<u32> = Vec::new();
            for (i, insert) in ops.into_iter().enumerate() {
                if insert || live.is_empty() {
                    let k = slab.insert(i);
                    prop_assert!(!live.contains(&k));
                    live.push(k);
                } else {
                    let k = live.swap_remove(i % live.len());
                    slab.remove(k);
                }
                prop_assert_eq!(slab.len(), live.len());
            }
        }
    }
}
