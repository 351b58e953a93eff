//! Parameter declarations: each component states its profile keys once, in
//! one list (key, unit family, range and why, required or optional, doc
//! line), and the [`params!`](crate::params) macro makes from that list
//! the component's parameter struct, the code that fills it from a
//! profile, and the table `flashpath profile show` and
//! `docs/parameters.md` print (`crate::parameters` gathers every table).
//! Nothing else reads a raw key, so no key is read in two places and no
//! key's range or meaning is stated twice.

use super::Range;

/// Text on one line, runs of white space as one space.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What a parameter holds, as its declaration reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// A number of a unit family (`time`, `bytes`, `rate`, `frequency`,
    /// `ratio`, `count`), checked against a range in the base unit.
    Number(&'static str),
    /// true/false (or 0/1).
    Flag,
    /// One of a fixed set of names ([`Choice::NAMES`]).
    Choice(&'static [&'static str]),
    /// Free text, read by the component's own parser.
    Text,
    /// A list of numbers of a unit family, each within the range, at most
    /// this many.
    List(&'static str, usize),
}

/// One parameter's declaration.
#[derive(Clone, Copy, Debug)]
pub struct Decl {
    /// The dotted key (`device.completion_nsec`).
    pub key: &'static str,
    pub kind: Kind,
    /// The values accepted, in the family's base unit, and why.
    pub range: Option<Range>,
    /// Whether a profile for this component must give it; an optional
    /// parameter's doc says what its absence means.
    pub required: bool,
    /// The value an absent optional parameter takes, as its declaration
    /// states it (base unit), when it has one: the component gets the
    /// value, not an `Option` it would fill in itself.
    pub default: Option<&'static str>,
    /// What it is (the field's doc comment).
    pub doc: &'static str,
}

impl Decl {
    /// The unit family, as the profile's `unit` must name one of it.
    pub fn family(&self) -> String {
        match self.kind {
            Kind::Number(f) => f.to_string(),
            Kind::Flag => "bool".to_string(),
            Kind::Choice(_) => "enum".to_string(),
            Kind::Text => "name".to_string(),
            Kind::List(f, _) => format!("list of {f}"),
        }
    }

    /// The doc comment as one line.
    pub fn doc_line(&self) -> String {
        one_line(self.doc)
    }

    /// What values it accepts, in words: the range (base unit) and why, or
    /// the names.
    pub fn accepts(&self) -> String {
        match (self.kind, self.range) {
            (Kind::Choice(names), _) => format!("one of {}", names.join(", ")),
            (Kind::Flag, _) => "true or false".to_string(),
            (Kind::Text, _) => "text".to_string(),
            (Kind::List(fam, n), Some(r)) => format!(
                "at most {n} values, each {}: {}",
                show_range(&r, fam),
                one_line(r.why)
            ),
            (Kind::Number(fam), Some(r)) => {
                format!("{}: {}", show_range(&r, fam), one_line(r.why))
            }
            (_, None) => String::new(),
        }
    }
}

/// A range bound as people read it: whole numbers below a million as
/// they are, others in the shortest exponent form (`1e9`, `1.8e19`).
pub fn show_bound(x: f64) -> String {
    if x.abs() < 1e6 {
        return format!("{x}");
    }
    let s = format!("{x:e}");
    match s.split_once('e') {
        // f64's full expansion of u64::MAX and the like: three decimals.
        Some((m, e)) if m.len() > 5 => {
            let m = format!("{:.3}", m.parse::<f64>().unwrap_or(0.0));
            let m = m.trim_end_matches('0').trim_end_matches('.');
            format!("{m}e{e}")
        }
        _ => s,
    }
}

/// `min to max unit` of a range in the family's base unit.
pub fn show_range(r: &Range, family: &str) -> String {
    let unit = base_unit(family);
    let sep = if unit.is_empty() { "" } else { " " };
    format!("{} to {}{sep}{unit}", show_bound(r.min), show_bound(r.max))
}

/// The base unit of a family, in which ranges are given.
pub fn base_unit(family: &str) -> &'static str {
    match family {
        "time" => "ns",
        "bytes" => "B",
        "rate" => "B/s",
        "frequency" => "Hz",
        "ratio" => "(ratio)",
        _ => "",
    }
}

/// A parameter whose value is one of a fixed set of names, read into an
/// enum by [`Profile::choice`]: the accepted names are the type's, so no
/// caller matches a string again.
pub trait Choice: Sized {
    /// The names a profile may give, for messages and docs.
    const NAMES: &'static [&'static str];
    /// The value a name stands for; `None` for a name not accepted.
    fn from_name(name: &str) -> Option<Self>;
}

/// An enum whose variants are the accepted names of a [`Choice`]
/// parameter:
///
/// ```ignore
/// choice_enum! {
///     /// doc
///     pub enum Timing { Hs200 = "hs200", Hs400 = "hs400" }
/// }
/// ```
#[macro_export]
macro_rules! choice_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
        }
        impl $crate::profile::Choice for $name {
            const NAMES: &'static [&'static str] = &[$($text),+];
            fn from_name(name: &str) -> Option<Self> {
                match name {
                    $( $text => Some($name::$variant), )+
                    _ => None,
                }
            }
        }
        impl $name {
            /// The name a profile gives for this value.
            #[allow(dead_code)]
            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $text ),+
                }
            }
        }
    };
}

/// A component's parameter struct, declared once:
///
/// ```ignore
/// params! {
///     /// The struct's doc.
///     pub struct NvmeParams {
///         /// The field's doc, also the parameter's doc line.
///         pub depth: u32 = required count_u32("driver.queue_depth", QUEUE_DEPTH),
///         /// Absent: no polling.
///         pub poll: Option<u64> = optional ns("driver.poll", COST),
///         /// Absent: 0 (no cache).
///         pub cache: u64 = default(0) bytes("device.cache", CACHE),
///         pub timing: Timing = required choice("mmc.bus.timing", Timing),
///         pub exit: Vec<f64> = required list("host.idle.psci.exit", "time", R, 64),
///     }
/// }
/// ```
///
/// makes the struct, `NvmeParams::DECLS` (the declarations) and
/// `NvmeParams::read(&Profile)`, which reads every field with the
/// profile's accessor of that name (`ns`, `ns_f`, `bytes`, `rate`, `hz`,
/// `ratio`, `count`, `count_u32`, `signed`, `flag`, `choice`, `text`,
/// `list`) against the declared range. Ranges are constants. A `required`
/// field must be in the profile; an `optional` one is `None` when absent
/// (its absence means something no value says: a feature not there); a
/// `default(value)` one takes the declared value when absent, and the
/// declaration (`Decl::default`, `profile show`, docs/parameters.md)
/// states it.
#[macro_export]
macro_rules! params {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:literal])+
                $fvis:vis $field:ident : $ty:ty =
                    $pres:ident $( ( $def:expr ) )? $acc:ident ( $($arg:tt)* )
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[doc = $doc])+ $fvis $field: $ty, )*
        }
        impl $name {
            /// The declarations of these parameters, in field order.
            pub const DECLS: &'static [$crate::profile::Decl] = &[
                $( $crate::__param_decl!(
                    [$pres $( ($def) )?] $acc ($($arg)*) concat!($($doc, "\n"),+)
                ) ),*
            ];
            /// Every field from the profile, each checked against its
            /// declaration.
            pub fn read(p: &$crate::profile::Profile) -> $crate::Result<$name> {
                Ok($name {
                    $( $field: $crate::__param_read!(p, $pres $( ($def) )? $acc ($($arg)*)), )*
                })
            }
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __param_read {
    ($p:ident, required $acc:ident ($($arg:tt)*)) => {
        $crate::__param_get!($p, $acc ($($arg)*))
    };
    ($p:ident, optional $acc:ident ($key:literal $($rest:tt)*)) => {
        if $p.has($key) {
            Some($crate::__param_get!($p, $acc ($key $($rest)*)))
        } else {
            None
        }
    };
    ($p:ident, default ($def:expr) $acc:ident ($key:literal $($rest:tt)*)) => {
        if $p.has($key) {
            $crate::__param_get!($p, $acc ($key $($rest)*))
        } else {
            $def
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __param_get {
    ($p:ident, choice ($key:literal, $t:ty)) => {
        $p.choice::<$t>($key)?
    };
    ($p:ident, $acc:ident ($($arg:expr),* $(,)?)) => {
        $p.$acc($($arg),*)?
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __param_decl {
    (@req [required]) => { true };
    (@req [optional]) => { false };
    (@req [default ($d:expr)]) => { false };
    (@def [required]) => { None };
    (@def [optional]) => { None };
    (@def [default ($d:expr)]) => { Some(stringify!($d)) };
    ($pres:tt choice ($key:literal, $t:ty) $doc:expr) => {
        $crate::profile::Decl {
            key: $key,
            kind: $crate::profile::Kind::Choice(<$t as $crate::profile::Choice>::NAMES),
            range: None,
            required: $crate::__param_decl!(@req $pres),
            default: $crate::__param_decl!(@def $pres),
            doc: $doc,
        }
    };
    ($pres:tt flag ($key:literal) $doc:expr) => {
        $crate::profile::Decl {
            key: $key,
            kind: $crate::profile::Kind::Flag,
            range: None,
            required: $crate::__param_decl!(@req $pres),
            default: $crate::__param_decl!(@def $pres),
            doc: $doc,
        }
    };
    ($pres:tt text ($key:literal) $doc:expr) => {
        $crate::profile::Decl {
            key: $key,
            kind: $crate::profile::Kind::Text,
            range: None,
            required: $crate::__param_decl!(@req $pres),
            default: $crate::__param_decl!(@def $pres),
            doc: $doc,
        }
    };
    ($pres:tt list ($key:literal, $fam:literal, $r:expr, $max:expr $(,)?) $doc:expr) => {
        $crate::profile::Decl {
            key: $key,
            kind: $crate::profile::Kind::List($fam, $max),
            range: Some($r),
            required: $crate::__param_decl!(@req $pres),
            default: $crate::__param_decl!(@def $pres),
            doc: $doc,
        }
    };
    ($pres:tt $acc:ident ($key:literal, $r:expr $(,)?) $doc:expr) => {
        $crate::profile::Decl {
            key: $key,
            kind: $crate::profile::Kind::Number($crate::__param_decl!(@fam $acc)),
            range: Some($r),
            required: $crate::__param_decl!(@req $pres),
            default: $crate::__param_decl!(@def $pres),
            doc: $doc,
        }
    };
    (@fam ns) => { "time" };
    (@fam ns_f) => { "time" };
    (@fam bytes) => { "bytes" };
    (@fam rate) => { "rate" };
    (@fam hz) => { "frequency" };
    (@fam ratio) => { "ratio" };
    (@fam count) => { "count" };
    (@fam count_u32) => { "count" };
    (@fam signed) => { "count" };
}

/// A group of declarations under a component's name, for the registry
/// (`crate::parameters`).
pub type Group = (&'static str, &'static [Decl]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_read_as_written() {
        assert_eq!(show_bound(0.0), "0");
        assert_eq!(show_bound(-1.0), "-1");
        assert_eq!(show_bound(0.001), "0.001");
        assert_eq!(show_bound(65535.0), "65535");
        assert_eq!(show_bound(1e9), "1e9");
        assert_eq!(show_bound(60e9), "6e10");
        assert_eq!(show_bound(u64::MAX as f64), "1.845e19");
        assert_eq!(show_bound((1u64 << 20) as f64), "1.049e6");
        let r = super::super::range(1.0, 8192.0, "x");
        assert_eq!(show_range(&r, "count"), "1 to 8192");
        assert_eq!(show_range(&r, "time"), "1 to 8192 ns");
    }
}
