//! Profile includes: a cycle names its files, `include` may be one string,
//! and a profile's own description wins over its includes'.

use flashpath::profile::Profile;

fn dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("flashpath-profile-inc-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn an_include_cycle_names_its_files() {
    let d = dir();
    std::fs::write(d.join("a.toml"), "[profile]\ninclude = [\"b.toml\"]\n").unwrap();
    std::fs::write(d.join("b.toml"), "[profile]\ninclude = [\"c.toml\"]\n").unwrap();
    std::fs::write(d.join("c.toml"), "[profile]\ninclude = [\"a.toml\"]\n").unwrap();
    // An unrelated file that includes the cycle is not blamed.
    std::fs::write(d.join("top.toml"), "[profile]\ninclude = [\"a.toml\"]\n").unwrap();
    let e = Profile::load(d.join("top.toml").to_str().unwrap())
        .unwrap_err()
        .to_string();
    let a = d.join("a.toml").display().to_string();
    let c = d.join("c.toml").display().to_string();
    assert!(
        e.starts_with(&format!("{c}: profile include cycle: {a} includes ")),
        "{e}"
    );
    assert!(
        e.contains("b.toml includes") && e.ends_with(&format!("includes {a}")),
        "{e}"
    );
    assert!(!e.contains("top.toml"), "{e}");
    // A file that includes itself.
    std::fs::write(
        d.join("self.toml"),
        "[profile]\ninclude = [\"self.toml\"]\n",
    )
    .unwrap();
    let s = d.join("self.toml").display().to_string();
    let e = Profile::load(&s).unwrap_err().to_string();
    assert!(e.contains(&format!("cycle: {s} includes {s}")), "{e}");
}

#[test]
fn include_may_be_one_string_and_other_types_are_named() {
    let d = dir();
    std::fs::write(d.join("h.toml"), "[profile]\ndescription = \"h\"\n").unwrap();
    std::fs::write(
        d.join("one.toml"),
        "[profile]\nname = \"one\"\ninclude = \"h.toml\"\n",
    )
    .unwrap();
    let p = Profile::load(d.join("one.toml").to_str().unwrap()).unwrap();
    assert_eq!(p.files.len(), 2);
    assert!(p.files[0].ends_with("h.toml"));
    std::fs::write(d.join("num.toml"), "[profile]\ninclude = 3\n").unwrap();
    let e = Profile::load(d.join("num.toml").to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("num.toml:2: include takes a list"), "{e}");
}

#[test]
fn a_profiles_own_description_wins_over_its_includes() {
    for name in ["nullblk", "brd", "rpi4-sdcard", "virtio-vda-fitted"] {
        let p = Profile::load(name).unwrap();
        let own = flashpath::profile::BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1
            .parse::<toml::Table>()
            .unwrap()["profile"]["description"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(p.description, own, "{name}");
        assert!(!p.description.contains("generic 2-core"), "{name}");
    }
    // Without its own, the included file's stays.
    let d = dir();
    std::fs::write(
        d.join("desc.toml"),
        "[profile]\ndescription = \"the host\"\n",
    )
    .unwrap();
    std::fs::write(
        d.join("bare.toml"),
        "[profile]\ninclude = [\"desc.toml\"]\n",
    )
    .unwrap();
    let p = Profile::load(d.join("bare.toml").to_str().unwrap()).unwrap();
    assert_eq!(p.description, "the host");
}
