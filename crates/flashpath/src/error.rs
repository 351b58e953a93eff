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
    /// The file name and message are made safe to print here, whatever
    /// they quote: control characters escaped, overlong text cut
    /// ([`printable`]).
    pub fn new(file: impl Into<String>, line: Option<u32>, message: impl Into<String>) -> Self {
        InputError {
            file: printable(&file.into(), MAX_FILE_CHARS).into_owned(),
            line,
            message: printable(&message.into(), MAX_MESSAGE_CHARS).into_owned(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The fields are public: print them through the same filter.
        let file = printable(&self.file, MAX_FILE_CHARS);
        let message = printable(&self.message, MAX_MESSAGE_CHARS);
        match self.line {
            Some(line) => write!(f, "{file}:{line}: {message}"),
            None => write!(f, "{file}: {message}"),
        }
    }
}

/// The longest user input a message quotes, in characters: enough to
/// recognise a value or a line, and a megabyte-long line stays one line of
/// message.
pub const MAX_QUOTE_CHARS: usize = 80;
/// The longest message and file name kept whole, in characters; longer
/// ones (text quoted without [`quote`]) keep their start and their end.
const MAX_MESSAGE_CHARS: usize = 1000;
const MAX_FILE_CHARS: usize = 300;

/// User input quoted for a message: in single quotes, control and
/// bidirectional-format characters escaped (`rw=\e[31m` must not colour
/// the terminal that prints the error), cut to [`MAX_QUOTE_CHARS`] with
/// the number of characters left out. Every message that echoes input
/// goes through here (or [`clip`]) so none prints raw bytes or megabytes.
pub fn quote(input: &str) -> String {
    format!("'{}'", clip(input))
}

/// [`quote`] without the quotes, for formats that bracket input
/// themselves (fio's `<...>`).
pub fn clip(input: &str) -> String {
    let total = input.chars().count();
    let mut out = escape(&input.chars().take(MAX_QUOTE_CHARS).collect::<String>()).into_owned();
    if total > MAX_QUOTE_CHARS {
        out.push_str(&format!(
            "... ({} more characters)",
            total - MAX_QUOTE_CHARS
        ));
    }
    out
}

/// Characters that change what a terminal shows rather than show
/// themselves: C0/C1 controls (ESC starts colour and cursor sequences) and
/// the bidirectional and zero-width format characters that reorder or hide
/// text (Unicode TR #9; "Trojan Source", CVE-2021-42574).
fn is_unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// `\n`, `\t`, `\r` as such, any other unprintable character as `\u{..}`.
fn escape(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(is_unprintable) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if is_unprintable(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A whole message or file name made safe to print: escaped as [`quote`]
/// does, and past `max` characters cut in the middle (the start names the
/// place, the end usually says what is wrong). Idempotent, so printing an
/// error built by [`InputError::new`] changes nothing.
fn printable(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    let escaped = escape(s);
    let total = escaped.chars().count();
    if total <= max {
        return escaped;
    }
    let head = max * 2 / 3;
    let tail = max - head - 40;
    let start: String = escaped.chars().take(head).collect();
    let end: String = escaped.chars().skip(total - tail).collect();
    std::borrow::Cow::Owned(format!(
        "{start} [... {} characters cut ...] {end}",
        total - head - tail
    ))
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
        let file = printable(&self.file, MAX_FILE_CHARS);
        let message = printable(&self.message, MAX_MESSAGE_CHARS);
        match self.line {
            Some(line) => write!(f, "{file}:{line}: warning: {message}"),
            None => write!(f, "{file}: warning: {message}"),
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
    fn quoted_input_is_escaped_and_cut() {
        assert_eq!(quote("rw=\u{1b}[31m"), "'rw=\\u{1b}[31m'");
        assert_eq!(quote("a\tb\n"), "'a\\tb\\n'");
        // A right-to-left override would reorder the rest of the line.
        assert_eq!(quote("x\u{202e}y"), "'x\\u{202e}y'");
        let long = "z".repeat(5000);
        let q = quote(&long);
        assert!(q.len() < 200, "{q}");
        assert!(q.ends_with("(4920 more characters)'"), "{q}");
    }

    #[test]
    fn every_error_is_printable_whatever_it_quotes() {
        let raw = format!("bad value {}\u{1b}[0m end", "v".repeat(1 << 20));
        let e = InputError::new("job\u{7}.fio", Some(2), raw);
        let shown = e.to_string();
        assert!(shown.len() < 1200, "{} bytes", shown.len());
        assert!(!shown.chars().any(is_unprintable), "{shown:?}");
        assert!(
            shown.starts_with("job\\u{7}.fio:2: bad value vvv"),
            "{shown}"
        );
        assert!(shown.ends_with("\\u{1b}[0m end"), "{shown}");
        assert!(shown.contains("characters cut"), "{shown}");
        // Printing is idempotent: the stored fields are already safe.
        assert_eq!(printable(&e.message, MAX_MESSAGE_CHARS), e.message);
        let d = Diagnostic {
            file: "f".into(),
            line: None,
            message: "\u{1b}]0;title\u{7}".into(),
        };
        assert_eq!(d.to_string(), "f: warning: \\u{1b}]0;title\\u{7}");
    }

    #[test]
    fn display_names_file_and_line() {
        let e = InputError::new("job.fio", Some(3), "bad option 'bz'");
        assert_eq!(e.to_string(), "job.fio:3: bad option 'bz'");
    }
}
