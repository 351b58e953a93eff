//! The `bc` fio pipes a job-file line to after replacing a `$keyword` in
//! it (init.c): integer arithmetic at scale 0.

/// A small `bc` with scale=0: integers, + - * / % ^ and parentheses.
pub(super) fn bc_eval(s: &str) -> Option<i64> {
    let toks: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    let mut pos = 0;
    let v = bc_sum(&toks, &mut pos, 0)?;
    (pos == toks.len()).then_some(v)
}

fn bc_sum(t: &[char], p: &mut usize, depth: u32) -> Option<i64> {
    let mut v = bc_prod(t, p, depth)?;
    while *p < t.len() && (t[*p] == '+' || t[*p] == '-') {
        let op = t[*p];
        *p += 1;
        let r = bc_prod(t, p, depth)?;
        v = if op == '+' {
            v.checked_add(r)?
        } else {
            v.checked_sub(r)?
        };
    }
    Some(v)
}

fn bc_prod(t: &[char], p: &mut usize, depth: u32) -> Option<i64> {
    let mut v = bc_pow(t, p, depth)?;
    while *p < t.len() && matches!(t[*p], '*' | '/' | '%') {
        let op = t[*p];
        *p += 1;
        let r = bc_pow(t, p, depth)?;
        v = match op {
            '*' => v.checked_mul(r)?,
            '/' => v.checked_div(r)?,
            _ => v.checked_rem(r)?,
        };
    }
    Some(v)
}

fn bc_pow(t: &[char], p: &mut usize, depth: u32) -> Option<i64> {
    let b = bc_atom(t, p, depth)?;
    if *p < t.len() && t[*p] == '^' {
        *p += 1;
        // Right-associative: each `^` nests one level (`2^2^...^2` of a
        // long line must not overflow the stack).
        let e = bc_pow(t, p, depth + 1)?;
        return b.checked_pow(u32::try_from(e).ok()?);
    }
    Some(b)
}

fn bc_atom(t: &[char], p: &mut usize, depth: u32) -> Option<i64> {
    if depth > 64 || *p >= t.len() {
        return None;
    }
    match t[*p] {
        '(' => {
            *p += 1;
            let v = bc_sum(t, p, depth + 1)?;
            (*p < t.len() && t[*p] == ')').then(|| *p += 1)?;
            Some(v)
        }
        '-' => {
            *p += 1;
            bc_atom(t, p, depth + 1)?.checked_neg()
        }
        c if c.is_ascii_digit() => {
            let mut v: i64 = 0;
            while *p < t.len() && t[*p].is_ascii_digit() {
                v = v
                    .checked_mul(10)?
                    .checked_add(i64::from(t[*p] as u8 - b'0'))?;
                *p += 1;
            }
            Some(v)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bc_math() {
        assert_eq!(bc_eval("2*24105"), Some(48210));
        assert_eq!(bc_eval("1+2*3"), Some(7));
        assert_eq!(bc_eval("(1+2)*3"), Some(9));
        assert_eq!(bc_eval("7/2"), Some(3));
        assert_eq!(bc_eval("1/0"), None);
        assert_eq!(bc_eval("2*"), None);
    }
}
