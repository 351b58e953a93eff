//! How physically contiguous an I/O buffer is, which decides how many
//! scatterlist segments `blk_rq_map_sg` makes of a request (and so how many
//! separate mappings `dma_map_sg` asks swiotlb for).
//!
//! fio allocates all of a job's I/O buffers as one block (fio memory.c
//! `allocate_io_mem`, `td->orig_buffer_size = max_bs * iodepth` in
//! backend.c `init_io_u`) with the `mem=` method. Private anonymous memory
//! (malloc, mmap) is backed by transparent huge pages when THP is "always"
//! and the block spans a whole PMD extent; otherwise it is order-0 pages,
//! which the page allocator hands out physically scattered. hugetlb memory
//! (shmhuge, mmaphuge) is huge pages; shared memory (shm, mmapshared) is
//! shmem, which THP leaves at 4 KiB by default (`shmem_enabled=never`).
//! Page-cache pages (buffered I/O) are order-0 in this model.

use super::PAGE_SIZE;

/// `HPAGE_PMD_SIZE` with 4 KiB pages (x86-64, arm64): 2 MiB.
pub const HPAGE_PMD_SIZE: u64 = 2 << 20;

/// `/sys/kernel/mm/transparent_hugepage/enabled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThpMode {
    /// Every large enough anonymous mapping (CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS).
    Always,
    /// Only regions given MADV_HUGEPAGE (fio gives none).
    Madvise,
    /// Off, or not built in (CONFIG_TRANSPARENT_HUGEPAGE unset).
    Never,
}

impl crate::profile::Choice for ThpMode {
    const NAMES: &'static [&'static str] = &["always", "madvise", "never"];
    fn from_name(name: &str) -> Option<Self> {
        ThpMode::parse(name)
    }
}

crate::params! {
    /// The memory-management keys of the host.
    pub struct ThpParams {
        /// `/sys/kernel/mm/transparent_hugepage/enabled`: how many DMA
        /// segments a request's buffer makes; only a bouncing DMA path
        /// needs it.
        pub thp: ThpMode = default(ThpMode::Never) choice("host.thp", ThpMode),
    }
}

impl ThpMode {
    pub fn parse(s: &str) -> Option<ThpMode> {
        match s {
            "always" => Some(ThpMode::Always),
            "madvise" => Some(ThpMode::Madvise),
            "never" => Some(ThpMode::Never),
            _ => None,
        }
    }
}

/// fio's `mem=` (alias `iomem`) methods (fio options.c, memory.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoMem {
    /// malloc (the default).
    Malloc,
    /// SysV shmget.
    Shm,
    /// shmget with SHM_HUGETLB.
    ShmHuge,
    /// mmap of anonymous memory (or of a file).
    Mmap,
    /// mmap of a hugetlbfs file.
    MmapHuge,
    /// mmap MAP_SHARED anonymous.
    MmapShared,
}

impl IoMem {
    /// The value as fio reads it: the method, then an optional `:file`
    /// for the mmap ones.
    pub fn parse(s: &str) -> Option<IoMem> {
        let method = s.split(':').next().unwrap_or(s);
        match method {
            "malloc" => Some(IoMem::Malloc),
            "shm" => Some(IoMem::Shm),
            "shmhuge" => Some(IoMem::ShmHuge),
            "mmap" => Some(IoMem::Mmap),
            "mmaphuge" => Some(IoMem::MmapHuge),
            "mmapshared" => Some(IoMem::MmapShared),
            _ => None,
        }
    }
}

/// The physically contiguous extent (bytes, a power of two) behind fio's
/// I/O buffers of `buffer_bytes` in all: a request's buffer splits into a
/// scatterlist segment per extent it touches. The buffer is taken to start
/// on an extent boundary (anonymous mappings of 2 MiB or more are
/// PMD-aligned since Linux 6.7, commit efa7df3e3bb5 "mm: align larger
/// anonymous mappings on THP boundaries"; fio's own page alignment of the
/// first buffer is not modelled).
pub fn io_buffer_contiguous_bytes(mem: IoMem, thp: ThpMode, buffer_bytes: u64) -> u64 {
    match mem {
        IoMem::ShmHuge | IoMem::MmapHuge => HPAGE_PMD_SIZE,
        IoMem::Malloc | IoMem::Mmap if thp == ThpMode::Always && buffer_bytes >= HPAGE_PMD_SIZE => {
            HPAGE_PMD_SIZE
        }
        _ => PAGE_SIZE,
    }
}

/// The scatterlist segments (count) of a `len`-byte buffer that starts on
/// an extent boundary, `contiguous` bytes per extent.
pub fn segments(len: u64, contiguous: u64) -> u64 {
    len.div_ceil(contiguous.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_only_where_the_kernel_gives_huge_pages() {
        let (big, small) = (16 << 20, 1 << 20);
        let table = [
            (IoMem::Malloc, ThpMode::Always, big, HPAGE_PMD_SIZE),
            // Less than a PMD extent: no huge page can back it.
            (IoMem::Malloc, ThpMode::Always, small, PAGE_SIZE),
            (IoMem::Malloc, ThpMode::Madvise, big, PAGE_SIZE),
            (IoMem::MmapShared, ThpMode::Always, big, PAGE_SIZE),
            (IoMem::MmapHuge, ThpMode::Never, small, HPAGE_PMD_SIZE),
        ];
        for (mem, thp, bytes, want) in table {
            assert_eq!(
                io_buffer_contiguous_bytes(mem, thp, bytes),
                want,
                "{mem:?} {thp:?}"
            );
        }
    }

    #[test]
    fn segments_per_extent() {
        assert_eq!(segments(4096, PAGE_SIZE), 1);
        assert_eq!(segments(65536, PAGE_SIZE), 16);
        assert_eq!(segments(65536, HPAGE_PMD_SIZE), 1);
        assert_eq!(segments(6144, PAGE_SIZE), 2);
    }

    #[test]
    fn fio_mem_values() {
        assert_eq!(
            IoMem::parse("mmaphuge:/hugetlbfs/file"),
            Some(IoMem::MmapHuge)
        );
        assert_eq!(IoMem::parse("malloc"), Some(IoMem::Malloc));
        assert_eq!(IoMem::parse("cudamalloc"), None);
        assert_eq!(ThpMode::parse("madvise"), Some(ThpMode::Madvise));
        assert_eq!(ThpMode::parse("sometimes"), None);
    }
}
