//! A fio job file as fio 3.33 assembles it into jobs (init.c
//! `parse_jobs_ini`, `add_job`): the ini layer's items ([`super::ini`]),
//! global sections as defaults, options in fio's priority order, each
//! option looked up in the table ([`super::options`]), its value read
//! ([`super::value`], [`super::number`]) and checked by its callback
//! ([`super::callbacks`]), then given its meaning. The quirks are
//! reproduced on purpose; each is checked by a probe in
//! `fixtures/fio/parse-probes/` (see FORMAT-NOTES.md there).

use std::path::Path;

use super::callbacks::{callback, numeric_callback};
use super::draft::{Draft, Given};
use super::ini::{read_items, Item, ParseContext, MAX_JOB_TEXT_BYTES, TEXT_BOUND};
use super::job::*;
use super::options::{self, Handling, Ty};
use super::value::{handle_option, posval_match};
use crate::error::{clip, nearest, Diagnostic, InputError};
use crate::Result;

/// Parse a job file from disk. Includes are looked up as fio does: relative
/// to the current directory first, then next to the including file.
pub fn parse_job_file(path: &Path, ctx: &ParseContext) -> Result<JobFile> {
    let name = path.display().to_string();
    let text = crate::input::read_bounded(path, MAX_JOB_TEXT_BYTES, TEXT_BOUND)
        .map_err(|e| InputError::new(name.clone(), None, format!("cannot read job file: {e}")))?;
    let text = String::from_utf8_lossy(&text);
    let base = path.parent().unwrap_or_else(|| Path::new("."));
    parse_job_str(&name, &text, base, ctx)
}

/// Parse job-file text. `path_for_messages` names it in errors;
/// `base_dir` is where `include` files are looked for.
pub fn parse_job_str(
    path_for_messages: &str,
    text: &str,
    base_dir: &Path,
    ctx: &ParseContext,
) -> Result<JobFile> {
    let items = read_items(path_for_messages, text, base_dir, ctx)?;
    build(path_for_messages, &items, ctx, base_dir)
}

// ---------------------------------------------------------------------------
// Building jobs.

fn build(path: &str, items: &[Item], ctx: &ParseContext, base_dir: &Path) -> Result<JobFile> {
    let mut jf = JobFile {
        path: path.to_string(),
        ..JobFile::default()
    };
    let mut defaults = Draft::new();
    let mut i = 0;
    while i < items.len() {
        let Item::Section { name, file, line } = &items[i] else {
            // read_lines never yields an option before the first section.
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while j < items.len() && matches!(items[j], Item::Opt { .. }) {
            j += 1;
        }
        let opts = &items[i + 1..j];
        // init.c: a section is global when its first 6 characters are "global".
        let is_global = name.starts_with("global");
        let mut draft = if is_global {
            defaults.clone()
        } else {
            let mut d = defaults.clone();
            d.spec.name = name.clone();
            d.spec.line = *line;
            d.spec.own_options.clear();
            d
        };
        // options.c sort_options: ioengine and kb_base are parsed first, as
        // the engine decides which engine options exist and kb_base how
        // sizes read.
        // options.c sort_options: a stable sort by option priority.
        // ioengine, kb_base and unit_base go first (the engine decides which
        // engine options exist, kb_base how sizes read); filename (prio -1)
        // goes last. fio's JSON "job options" come out in this order too.
        let prio = |o: &Item| match o {
            Item::Opt { key, .. } => match key.as_str() {
                "ioengine" | "kb_base" | "unit_base" => 0,
                "filename" => 2,
                _ => 1,
            },
            Item::Section { .. } => 1,
        };
        let mut ordered: Vec<&Item> = opts.iter().collect();
        ordered.sort_by_key(|o| prio(o));
        for it in &ordered {
            if let Item::Opt {
                file,
                line,
                key,
                value,
            } = it
            {
                apply(
                    &mut draft,
                    &mut jf,
                    ctx,
                    base_dir,
                    file,
                    *line,
                    key,
                    value.as_deref(),
                )?;
            }
        }
        // "job options" / "global options" as written, bare flags left out.
        let written: Vec<(String, String)> = ordered
            .iter()
            .filter_map(|o| match o {
                Item::Opt {
                    key,
                    value: Some(v),
                    ..
                } => Some((key.clone(), v.clone())),
                _ => None,
            })
            .collect();
        if is_global {
            jf.global_options
                .get_or_insert_with(Vec::new)
                .extend(written);
            defaults = draft;
        } else {
            draft.spec.own_options = written;
            let mut spec = draft.finish();
            // init.c fixup_options: without a runtime, time_based is
            // dropped with a warning and the job does its size once.
            if spec.time_based && spec.runtime.is_none() {
                spec.time_based = false;
                jf.warnings.push(Diagnostic {
                    file: file.clone(),
                    line: Some(spec.line),
                    message: format!(
                        "job '{}': time_based requires a runtime/timeout setting \
                         (fio 3.33 drops it and runs the job's size once)",
                        spec.name
                    ),
                });
            }
            jf.jobs.push(spec);
        }
        i = j;
    }
    Ok(jf)
}

/// "did you mean": only for names no longer than twice the longest option
/// name, since a longer one is farther than half its length from every
/// option (error::nearest's bound) and the distance costs its length times
/// each name's.
fn option_hint(key: &str) -> String {
    let longest = options::all_names().map(str::len).max().unwrap_or(0);
    if key.len() > 2 * longest {
        return String::new();
    }
    nearest(key, options::all_names())
        .map(|n| format!("; did you mean '{n}'?"))
        .unwrap_or_default()
}

#[allow(clippy::too_many_arguments)]
fn apply(
    d: &mut Draft,
    jf: &mut JobFile,
    ctx: &ParseContext,
    base_dir: &Path,
    file: &str,
    line: u32,
    key: &str,
    value: Option<&str>,
) -> Result<()> {
    let err = |m: String| InputError::new(file, Some(line), m);
    let shown = match value {
        Some(v) => clip(&format!("{key}={v}")),
        None => clip(key),
    };
    let Some(def) = options::find(key) else {
        return Err(err(format!(
            "bad option <{shown}>: not a fio option{}",
            option_hint(key)
        )));
    };
    if let Some(engines) = def.engines {
        let cur = d.spec.ioengine.fio_name();
        if !engines.contains(&cur) {
            return Err(err(format!(
                "bad option <{shown}>: '{key}' is an option of ioengine {}, not of {cur}",
                engines.join("/")
            )));
        }
    }
    let kb = u64::from(d.spec.kb_base);
    let bad = |why: &str| err(format!("failed parsing {shown}: {why}"));

    // What fio's parser makes of the value (parse.c), then the option's
    // own callback (options.c): fio refuses the job when either fails,
    // whatever flashpath does with the option afterwards.
    let ncpus = ctx.ncpus;
    let num_check = |v: u64| numeric_callback(def, v, ncpus);
    let parsed = handle_option(&def.kind, value, kb, Some(&num_check)).map_err(|w| bad(&w))?;
    callback(def, value, kb, ncpus, base_dir).map_err(|w| bad(&w))?;
    // parse.c prints a failing part's range error and goes on when another
    // part succeeds (handle_option keeps the first success); an integer's
    // message starts with the option's name, a boolean's does not.
    for e in &parsed.part_errors {
        if e.starts_with("min value out of range") || e.starts_with("max value out of range") {
            jf.fio_messages.push(match def.kind.ty {
                Ty::Bool | Ty::Set => e.clone(),
                _ => format!("{}: {e}", def.name),
            });
        }
    }

    // The bs= quirk: a blank after '=' hides the unit suffix.
    if let Some(v) = value {
        if v.starts_with(char::is_whitespace)
            && matches!(
                def.kind.ty,
                Ty::Int | Ty::Ull | Ty::Val | Ty::Zone | Ty::Time
            )
            && v.trim_start().contains(|c: char| c.is_ascii_alphabetic())
        {
            jf.warnings.push(Diagnostic {
                file: file.to_string(),
                line: Some(line),
                message: format!(
                    "'{}': the blank after '=' makes fio 3.33 ignore the unit suffix \
                     (read as {}); write '{key}={}' if that is not meant",
                    shown,
                    parsed.first().map(|n| n.to_string()).unwrap_or_default(),
                    clip(v.trim())
                ),
            });
        }
    }

    let ignore = |jf: &mut JobFile, why: &str| {
        jf.ignored.push(Diagnostic {
            file: file.to_string(),
            line: Some(line),
            message: format!("option '{}' ignored: {why}", def.name),
        });
    };
    match def.handling {
        Handling::Model(meaning) | Handling::Record(meaning) => {
            let given = Given {
                def,
                text: value,
                parsed: &parsed,
                kb,
                ncpus,
            };
            meaning.apply(d, &given).map_err(err)
        }
        Handling::Ignore => {
            ignore(jf, "it cannot change the simulated I/O");
            Ok(())
        }
        Handling::Inert(master) => {
            ignore(
                jf,
                &format!("it only acts together with '{master}', which flashpath refuses"),
            );
            Ok(())
        }
        Handling::RefuseUnless(ok) => {
            let v = value.unwrap_or("1").trim();
            let same = ok.iter().any(|a| {
                a.eq_ignore_ascii_case(v)
                    || (parsed.first().is_some()
                        && handle_option(&def.kind, Some(a), kb, None)
                            .is_ok_and(|p| p.first() == parsed.first()))
                    || (!def.kind.values.is_empty() && posval_match(def.kind.values, v) == Some(a))
            });
            if same {
                ignore(jf, "its value is fio's default (no effect)");
                Ok(())
            } else {
                Err(err(format!(
                    "option '{}' is not modelled by flashpath (accepted only as {key}={})",
                    def.name,
                    ok.join(" or ")
                )))
            }
        }
        Handling::Refuse => Err(err(format!(
            "option '{}' is not modelled by flashpath",
            def.name
        ))),
    }
}
