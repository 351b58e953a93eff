//! One error type for bad input: it names the file, the line when there is
//! one, and what is wrong. Every user-facing failure of the core is one of
//! these; the model itself never panics on user input.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file (job file, profile, trace) or the pseudo-file `--set`,
    /// `command line`.
    pub file: String,
    /// 1-based line, when the problem has one.
    pub line: Option<u32>,
    pub message: String,
}

impl InputError {
    pub fn new(file: impl Into<String>, line: Option<u32>, message: impl Into<String>) -> Self {
        InputError {
            file: file.into(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file, line, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for InputError {}

pub type Result<T> = std::result::Result<T, InputError>;

/// A warning about input that was accepted (a fio quirk read as fio reads
/// it, an option listed as ignored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: String,
    pub line: Option<u32>,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: warning: {}", self.file, line, self.message),
            None => write!(f, "{}: warning: {}", self.file, self.message),
        }
    }
}

/// The valid name closest to `wrong` (Levenshtein distance), for "did you
/// mean" hints.
pub fn nearest<'a>(wrong: &str, valid: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    valid
        .into_iter()
        .map(|v| (levenshtein(wrong, v), v))
        .min()
        .filter(|(d, v)| *d <= (v.len().max(wrong.len()) / 2).max(2))
        .map(|(_, v)| v)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j + 1] + 1).min(cur[j] + 1).min(prev[j] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_finds_typo() {
        let valid = [
            "device.completion_nsec",
            "device.hw_queue_depth",
            "host.cpus",
        ];
        assert_eq!(
            nearest("device.completion_nsce", valid),
            Some("device.completion_nsec")
        );
        assert_eq!(nearest("zzzzzzzzzzzzzzzzzzzzzz", valid), None);
    }

    #[test]
    fn display_names_file_and_line() {
        let e = InputError::new("job.fio", Some(3), "bad option 'bz'");
        assert_eq!(e.to_string(), "job.fio:3: bad option 'bz'");
    }
}
