//! One scratch folder per fuzzing process, made its current directory, so
//! relative `include` and `read_iolog` paths resolve inside it.

use std::path::PathBuf;
use std::sync::OnceLock;

pub fn sandbox() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("flashpath-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        std::env::set_current_dir(&dir).expect("enter the scratch folder");
        dir
    })
}
