//! Rows of a space-aligned numeric table (`trainwatch/adapters/table_rows.py`): whole lines of `width`
//! cells, blanks (spaces and tabs) before, between and after them, each cell a number as the template
//! reader's `NUM` reads it less `nan.0` and a `%`: an optional sign, then digits with an optional
//! fraction and exponent, a fraction alone with an optional exponent, or `nan`, `NaN`, `inf`, `Inf`.
//! The run stops at the first line that is anything else (a `\r`, a word, a cell too many) or that has
//! no `\n` before the end.

/// The cells of the run of rows at the start of `data`, row after row, and how many rows.
pub fn table_cells(data: &[u8], width: usize) -> (Vec<f64>, usize) {
    let mut out = Vec::new();
    let mut rows = 0;
    let mut pos = 0;
    if width == 0 {
        return (out, 0);
    }
    while pos < data.len() {
        let mark = out.len();
        match row(data, pos, width, &mut out) {
            Some(next) => {
                pos = next;
                rows += 1;
            }
            None => {
                out.truncate(mark);
                break;
            }
        }
    }
    (out, rows)
}

fn blanks(data: &[u8], mut pos: usize) -> usize {
    while matches!(data.get(pos), Some(b' ' | b'\t')) {
        pos += 1;
    }
    pos
}

/// One row from `pos`: its cells pushed onto `out`, and where the next line starts.
fn row(data: &[u8], pos: usize, width: usize, out: &mut Vec<f64>) -> Option<usize> {
    let mut pos = blanks(data, pos);
    for i in 0..width {
        if i > 0 {
            let after = blanks(data, pos);
            if after == pos {
                return None;
            }
            pos = after;
        }
        let end = cell(data, pos)?;
        out.push(value(data.get(pos..end)?)?);
        pos = end;
    }
    pos = blanks(data, pos);
    (data.get(pos) == Some(&b'\n')).then_some(pos + 1)
}

fn digits(data: &[u8], mut pos: usize) -> usize {
    while data.get(pos).is_some_and(u8::is_ascii_digit) {
        pos += 1;
    }
    pos
}

/// The end of the cell at `pos`, when one starts there and a blank or the line's end follows it.
fn cell(data: &[u8], start: usize) -> Option<usize> {
    let mut pos = start;
    if matches!(data.get(pos), Some(b'+' | b'-')) {
        pos += 1;
    }
    let rest = data.get(pos..).unwrap_or(&[]);
    let end = if [&b"nan"[..], b"NaN", b"inf", b"Inf"]
        .iter()
        .any(|w| rest.starts_with(w))
    {
        pos + 3
    } else {
        let int_end = digits(data, pos);
        let mut end = int_end;
        if data.get(end) == Some(&b'.') {
            let frac_end = digits(data, end + 1);
            if int_end == pos && frac_end == end + 1 {
                return None; // a dot alone
            }
            end = frac_end;
        } else if int_end == pos {
            return None;
        }
        if matches!(data.get(end), Some(b'e' | b'E')) {
            let mut e = end + 1;
            if matches!(data.get(e), Some(b'+' | b'-')) {
                e += 1;
            }
            let e_end = digits(data, e);
            if e_end > e {
                end = e_end;
            }
        }
        end
    };
    matches!(data.get(end), Some(b' ' | b'\t' | b'\n')).then_some(end)
}

fn value(text: &[u8]) -> Option<f64> {
    let (negative, word) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    let special = match word {
        b"nan" | b"NaN" => Some(f64::NAN),
        b"inf" | b"Inf" => Some(f64::INFINITY),
        _ => None,
    };
    match special {
        Some(v) if negative => Some(-v),
        Some(v) => Some(v),
        None => fast_float2::parse::<f64, _>(text).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::table_cells;

    #[test]
    fn reads_rows_and_stops_at_the_first_other_line() {
        let (v, n) = table_cells(b"  1  2.5  nan\n\t3 -.5e1 Inf \n4 5 6%\n7 8 9\n", 3);
        assert_eq!(n, 2);
        assert_eq!(&v[..2], &[1.0, 2.5]);
        assert!(v[2].is_nan());
        assert_eq!(&v[3..], &[3.0, -5.0, f64::INFINITY]);
    }

    #[test]
    fn refuses_what_the_reader_reads_otherwise() {
        for bad in [
            &b"1 2\r\n"[..],
            b"1 2 3\n",
            b"1\n",
            b"1 nan.0\n",
            b"1 .\n",
            b"1 2",
            b"1 2e\n",
            b"1 e5\n",
        ] {
            assert_eq!(
                table_cells(bad, 2).1,
                0,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
