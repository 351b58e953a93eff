//! Embeds the shipped profiles (and scenario files) into the core, so an
//! installed flashpath carries them whatever the install layout.

use std::fs;
use std::path::Path;

fn collect(root: &Path, dir: &Path, ext: &str, out: &mut Vec<(String, String)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            collect(root, &path, ext, out);
        } else if path.extension().and_then(|e| e.to_str()) == Some(ext) {
            let rel = path.strip_prefix(root).unwrap().with_extension("");
            let name = rel.to_string_lossy().replace('\\', "/");
            out.push((name, path.canonicalize().unwrap().display().to_string()));
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

fn emit(name: &str, root: &Path, ext: &str) {
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(root, root, ext, &mut files);
    let mut code = String::from("&[\n");
    for (n, p) in files {
        code.push_str(&format!("    ({n:?}, include_str!({p:?})),\n"));
    }
    code.push(']');
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join(name);
    fs::write(out, code).unwrap();
}

fn main() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = manifest.join("../..");
    emit("builtin_profiles.rs", &repo.join("profiles"), "toml");
    emit("builtin_scenarios.rs", &repo.join("scenarios"), "toml");
}
