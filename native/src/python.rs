//! The Python binding: `trainwatch._scan.Scanner`, whose feed and finish return a dict of numpy arrays
//! (trainwatch/scan/native.py turns it into a `Chunk`).

use crate::scan::scanner::{ChunkOut, Core};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadwriteArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyDict;

#[pyclass(module = "trainwatch._scan")]
struct Scanner {
    core: Core,
}

#[pymethods]
impl Scanner {
    #[new]
    #[pyo3(signature = (keywords = Vec::new()))]
    fn new(keywords: Vec<String>) -> PyResult<Self> {
        let keywords: Vec<Vec<u8>> = keywords.into_iter().map(String::into_bytes).collect();
        let core = Core::new(&keywords).map_err(PyValueError::new_err)?;
        Ok(Scanner { core })
    }

    /// Scans the complete lines of `data` (after the held partial line); keeps the new partial line.
    /// `bytes` is read in place; a `bytearray` is copied first, so nothing can change it mid-scan.
    fn feed<'py>(&mut self, py: Python<'py>, data: PyBackedBytes) -> PyResult<Bound<'py, PyDict>> {
        let bytes: &[u8] = &data;
        let core = &mut self.core;
        let out = py.detach(move || core.feed(bytes));
        self.hand_over(py, out)
    }

    /// The held partial line as a last line, then nothing is held.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let core = &mut self.core;
        let out = py.detach(move || core.finish());
        self.hand_over(py, out)
    }

    /// The key table, decoded with replacement characters; ids index it.
    #[getter]
    fn keys(&self) -> Vec<String> {
        self.core
            .keys()
            .iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect()
    }

    /// Bytes of the partial line held.
    #[getter]
    fn pending(&self) -> u64 {
        self.core.pending()
    }

    /// The buffers kept for the next chunk given back; the bytes they held.
    fn release(&mut self) -> usize {
        self.core.release()
    }
}

impl Scanner {
    /// The chunk as a dict of numpy arrays (moved, not copied) and its data as bytes (copied, and the
    /// buffer handed back to the core for the next chunk).
    fn hand_over<'py>(
        &mut self,
        py: Python<'py>,
        mut out: ChunkOut,
    ) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("first_lineno", out.first_lineno)?;
        d.set_item("base_offset", out.base_offset)?;
        d.set_item("data", bytes_of(py, &out.data)?)?;
        self.core.recycle(std::mem::take(&mut out.data));
        out_arrays(py, &d, out)?;
        Ok(d)
    }
}

/// A new bytes object holding `data`. A chunk's data is a block's size (megabytes): `PyBytes::new`
/// copies it with the GIL held, and `new_with` zero-fills it first with the GIL held, either of which
/// was most of what the scan thread held the GIL for. Here CPython makes the object uninitialised and
/// the bytes are copied in with the GIL let go.
fn bytes_of<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let len = isize::try_from(data.len()).map_err(|_| PyValueError::new_err("chunk too large"))?;
    // SAFETY: with a NULL source CPython returns a new bytes object of `len` uninitialised bytes (or
    // NULL and an error, which `from_owned_ptr_or_err` turns into Err); the reference is ours.
    let obj = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), len),
        )?
    };
    // SAFETY: `obj` is that bytes object; its buffer holds `data.len()` bytes, and no other code can
    // reach the object, so writing the buffer (from another thread's view, without the GIL) races nothing.
    let dst = unsafe {
        std::slice::from_raw_parts_mut(
            pyo3::ffi::PyBytes_AsString(obj.as_ptr()).cast::<u8>(),
            data.len(),
        )
    };
    py.detach(|| dst.copy_from_slice(data));
    Ok(obj)
}

fn out_arrays(py: Python<'_>, d: &Bound<'_, PyDict>, out: ChunkOut) -> PyResult<()> {
    macro_rules! arrays {
        ($($name:ident),*) => {
            $( d.set_item(stringify!($name), out.$name.into_pyarray(py))?; )*
        };
    }
    arrays!(
        line_start,
        line_end,
        visible_start,
        kw_line,
        kw_id,
        dict_line,
        dict_start,
        dict_end,
        dict_json,
        dict_layout,
        ent_dict,
        ent_key,
        ent_value,
        kv_line,
        kv_key,
        kv_value,
        kv_pos,
        prog_line,
        prog_n,
        prog_total
    );
    Ok(())
}

/// tqdm's plain bars at the given `%|` positions of `data` (see `bars`): (plain, N, M), N and M 0 where
/// the bar is not plain. Positions outside the data read as no bar.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn plain_bars<'py>(
    py: Python<'py>,
    data: PyBackedBytes,
    p: PyReadonlyArray1<'py, i64>,
    seg: PyReadonlyArray1<'py, i64>,
    limit: PyReadonlyArray1<'py, i64>,
) -> PyResult<(
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
)> {
    let (p, seg, limit) = (p.as_slice()?, seg.as_slice()?, limit.as_slice()?);
    if seg.len() != p.len() || limit.len() != p.len() {
        return Err(PyValueError::new_err("p, seg and limit differ in length"));
    }
    let bytes: &[u8] = &data;
    let (ok, n, m) = py.detach(move || {
        let mut ok = Vec::with_capacity(p.len());
        let mut n = Vec::with_capacity(p.len());
        let mut m = Vec::with_capacity(p.len());
        for ((&p, &seg), &limit) in p.iter().zip(seg).zip(limit) {
            let pos = |v: i64| usize::try_from(v).ok();
            let found = match (pos(p), pos(seg), pos(limit)) {
                (Some(p), Some(seg), Some(limit)) => {
                    crate::scan::bars::plain_bar(bytes, p, seg, limit)
                }
                _ => None,
            };
            ok.push(found.is_some());
            let (a, b) = found.unwrap_or((0, 0));
            n.push(a);
            m.push(b);
        }
        (ok, n, m)
    });
    Ok((ok.into_pyarray(py), n.into_pyarray(py), m.into_pyarray(py)))
}

/// Byte counts over spans (see `census`): (outside `allowed`, marks, misplaced marks, counted bytes).
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn span_census<'py>(
    py: Python<'py>,
    data: PyBackedBytes,
    start: PyReadonlyArray1<'py, i64>,
    length: PyReadonlyArray1<'py, i64>,
    allowed: PyReadonlyArray1<'py, bool>,
    mark: u8,
    before: u8,
    after: u8,
    count: u8,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
)> {
    let (start, length) = (start.as_slice()?, length.as_slice()?);
    let table: [bool; 256] = allowed
        .as_slice()?
        .try_into()
        .map_err(|_| PyValueError::new_err("allowed must hold 256 flags"))?;
    if start.len() != length.len() {
        return Err(PyValueError::new_err("start and length differ in length"));
    }
    let bytes: &[u8] = &data;
    let what = crate::scan::census::Census {
        allowed: table,
        mark,
        before,
        after,
        count,
    };
    let cols = py.detach(move || {
        let mut cols: [Vec<i64>; 4] = Default::default();
        for (&s, &n) in start.iter().zip(length) {
            let counts = match (usize::try_from(s), usize::try_from(n)) {
                (Ok(s), Ok(n)) => what.of(bytes, s, n),
                _ => [0; 4],
            };
            for (col, c) in cols.iter_mut().zip(counts) {
                col.push(c);
            }
        }
        cols
    });
    let [a, b, c, d] = cols;
    Ok((
        a.into_pyarray(py),
        b.into_pyarray(py),
        c.into_pyarray(py),
        d.into_pyarray(py),
    ))
}

/// The smoothed noise after each row (see `smooth`): `ema = ema + (value - ema) * 2.0 / window`.
#[pyfunction]
fn ema_path<'py>(
    py: Python<'py>,
    ema: f64,
    values: PyReadonlyArray1<'py, f64>,
    windows: PyReadonlyArray1<'py, i64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (values, windows) = (values.as_slice()?, windows.as_slice()?);
    if values.len() != windows.len() {
        return Err(PyValueError::new_err("values and windows differ in length"));
    }
    Ok(py
        .detach(|| crate::kernels::smooth::ema_path(ema, values, windows))
        .into_pyarray(py))
}

/// The store's history buckets of `size` rows over `values` (see `buckets`): (lows, highs, totals,
/// finite counts), whole buckets only.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn fold_buckets<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, f64>,
    size: usize,
) -> PyResult<(
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
)> {
    let values = values.as_slice()?;
    let (lo, hi, total, n) = py.detach(|| crate::kernels::buckets::fold(values, size));
    Ok((
        lo.into_pyarray(py),
        hi.into_pyarray(py),
        total.into_pyarray(py),
        n.into_pyarray(py),
    ))
}

/// The median of each row's trailing `window` values, NaN left out (see `median`): bottleneck's
/// `move_median(x, window, min_count=1)`.
#[pyfunction]
fn move_median<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    window: usize,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let x = x.as_slice()?;
    Ok(py
        .detach(|| crate::kernels::median::move_median(x, window))
        .into_pyarray(py))
}

/// A series' rows of a stretch (see `gather`): rows `rows` of the stretch's five columns written into
/// the series' from `at` on; (finite, NaN, least, greatest) of the values taken. ValueError, with
/// nothing written, when a row or the room is out of range.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn gather_rows(
    py: Python<'_>,
    rows: PyReadonlyArray1<'_, i64>,
    from: (
        PyReadonlyArray1<'_, i64>,
        PyReadonlyArray1<'_, f64>,
        PyReadonlyArray1<'_, i64>,
        PyReadonlyArray1<'_, f64>,
        PyReadonlyArray1<'_, bool>,
    ),
    mut into: (
        PyReadwriteArray1<'_, i64>,
        PyReadwriteArray1<'_, f64>,
        PyReadwriteArray1<'_, i64>,
        PyReadwriteArray1<'_, f64>,
        PyReadwriteArray1<'_, bool>,
    ),
    at: usize,
) -> PyResult<(i64, i64, f64, f64)> {
    let rows = rows.as_slice()?;
    let from = crate::kernels::gather::Columns {
        step: from.0.as_slice()?,
        value: from.1.as_slice()?,
        line: from.2.as_slice()?,
        time: from.3.as_slice()?,
        inferred: from.4.as_slice()?,
    };
    let mut to = crate::kernels::gather::ColumnsMut {
        step: into.0.as_slice_mut()?,
        value: into.1.as_slice_mut()?,
        line: into.2.as_slice_mut()?,
        time: into.3.as_slice_mut()?,
        inferred: into.4.as_slice_mut()?,
    };
    let t = py
        .detach(|| crate::kernels::gather::gather(rows, &from, &mut to, at))
        .ok_or_else(|| PyValueError::new_err("a row or the room to write it is out of range"))?;
    Ok((t.finite, t.nan, t.least, t.greatest))
}

/// A stretch's rows by engine metric id (see `group`): each row's id (`table` at its batch name id) and
/// the rows of each id ascending, `order[starts[k]:starts[k + 1]]`. ValueError when a name id is outside
/// the table, an id outside `0..kinds`, or `kinds` past what memory holds.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn group_rows<'py>(
    py: Python<'py>,
    name: PyReadonlyArray1<'py, i32>,
    table: PyReadonlyArray1<'py, i64>,
    kinds: usize,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
)> {
    let (name, table) = (name.as_slice()?, table.as_slice()?);
    let g = py
        .detach(|| crate::kernels::group::group(name, table, kinds))
        .ok_or_else(|| {
            PyValueError::new_err("a name or metric id is out of range, or too many metric ids")
        })?;
    Ok((
        g.ids.into_pyarray(py),
        g.order.into_pyarray(py),
        g.starts.into_pyarray(py),
    ))
}

/// The least (`greatest` false) or greatest value of each row's trailing `window` values, NaN left out
/// (see `extremes`): bottleneck's `move_min` / `move_max(x, window, min_count=1)`.
#[pyfunction]
fn move_extreme<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    window: usize,
    greatest: bool,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let x = x.as_slice()?;
    Ok(py
        .detach(|| crate::kernels::extremes::move_extreme(x, window, greatest))
        .into_pyarray(py))
}

/// The median of each span `x[start..end]`, NaN left out (see `median`).
#[pyfunction]
fn span_medians<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    start: PyReadonlyArray1<'py, i64>,
    end: PyReadonlyArray1<'py, i64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (x, start, end) = (x.as_slice()?, start.as_slice()?, end.as_slice()?);
    if start.len() != end.len() {
        return Err(PyValueError::new_err("start and end differ in length"));
    }
    Ok(py
        .detach(|| crate::kernels::median::span_medians(x, start, end))
        .into_pyarray(py))
}

/// Every offset of `needle` in `data` (see `find`), ascending, overlapping ones included.
#[pyfunction]
fn positions<'py>(
    py: Python<'py>,
    data: PyBackedBytes,
    needle: PyBackedBytes,
) -> Bound<'py, PyArray1<i64>> {
    let (bytes, needle): (&[u8], &[u8]) = (&data, &needle);
    py.detach(move || crate::scan::find::positions(bytes, needle))
        .into_pyarray(py)
}

/// How many `byte`s `data[..end]` holds (a vector count): the follower counts the lines of a backlog it
/// hands over as bytes.
#[pyfunction]
fn count_byte(py: Python<'_>, data: PyBackedBytes, end: usize, byte: u8) -> usize {
    let bytes: &[u8] = &data;
    let hay = bytes.get(..end.min(bytes.len())).unwrap_or(&[]);
    py.detach(move || memchr::memchr_iter(byte, hay).count())
}

/// The cells of the run of plain table rows at `data[start..end]` (see `kernels::table`), row after row,
/// and how many rows.
#[pyfunction]
fn table_cells<'py>(
    py: Python<'py>,
    data: PyBackedBytes,
    start: usize,
    end: usize,
    width: usize,
) -> (Bound<'py, PyArray1<f64>>, usize) {
    let bytes: &[u8] = &data;
    let part = bytes.get(start..end.min(bytes.len())).unwrap_or(&[]);
    let (cells, rows) = py.detach(move || crate::kernels::table::table_cells(part, width));
    (cells.into_pyarray(py), rows)
}

type Lines<'py> = (PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, i64>);
type Dicts<'py> = (
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
);
type Entries<'py> = (
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i32>,
    PyReadonlyArray1<'py, f64>,
);

/// A scanned chunk as the native passes read it: its data and its lines', dicts' and entries' columns
/// (line start and end; dict line, start and end; entry dict, key and value).
fn chunk_view<'a>(
    data: &'a [u8],
    base: i64,
    lines: &'a Lines<'_>,
    dicts: &'a Dicts<'_>,
    entries: &'a Entries<'_>,
) -> PyResult<crate::formats::console::ChunkView<'a>> {
    Ok(crate::formats::console::ChunkView {
        data,
        base,
        line_start: lines.0.as_slice()?,
        line_end: lines.1.as_slice()?,
        dict_line: dicts.0.as_slice()?,
        dict_start: dicts.1.as_slice()?,
        dict_end: dicts.2.as_slice()?,
        ent_dict: entries.0.as_slice()?,
        ent_key: entries.1.as_slice()?,
        ent_value: entries.2.as_slice()?,
    })
}

/// Which lines of a JSON-lines chunk the arrays say everything about (see `readable`): per line its
/// dict or -1, per line its nesting layout group or -1, and per group the dict to judge its layout by
/// and its count of nested objects. `forms`: per dict, plain JSON of numbers, and its layout.
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn jsonl_readable<'py>(
    py: Python<'py>,
    data: PyBackedBytes,
    base: i64,
    lines: Lines<'py>,
    dicts: Dicts<'py>,
    entries: Entries<'py>,
    forms: (PyReadonlyArray1<'py, bool>, PyReadonlyArray1<'py, i64>),
    is_step: PyReadonlyArray1<'py, bool>,
    is_total: PyReadonlyArray1<'py, bool>,
    safe_int: f64,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
)> {
    let view = chunk_view(&data, base, &lines, &dicts, &entries)?;
    let forms = crate::formats::readable::DictForms {
        json: forms.0.as_slice()?,
        layout: forms.1.as_slice()?,
    };
    let keys = crate::formats::readable::KeyFlags {
        is_step: is_step.as_slice()?,
        is_total: is_total.as_slice()?,
        safe_int,
    };
    let out = py.detach(|| crate::formats::readable::readable(&view, &forms, &keys));
    Ok((
        out.per_line.into_pyarray(py),
        out.group.into_pyarray(py),
        out.group_dict.into_pyarray(py),
        out.group_objects.into_pyarray(py),
    ))
}

/// JSON-lines rows from a run of consecutive dicts' entries (see `rows`): the metric entries' name,
/// step, value, line and time columns, how many rows were taken and the last step they set.
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn jsonl_rows<'py>(
    py: Python<'py>,
    key: PyReadonlyArray1<'py, i32>,
    value: PyReadonlyArray1<'py, f64>,
    row: PyReadonlyArray1<'py, i64>,
    lineno: PyReadonlyArray1<'py, i64>,
    is_step: PyReadonlyArray1<'py, bool>,
    rank: PyReadonlyArray1<'py, i64>,
    is_time: PyReadonlyArray1<'py, bool>,
    name: PyReadonlyArray1<'py, i32>,
    last_step: Option<i64>,
) -> PyResult<(
    Bound<'py, PyArray1<i32>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
    usize,
    Option<i64>,
)> {
    let (key, value, row, lineno) = (
        key.as_slice()?,
        value.as_slice()?,
        row.as_slice()?,
        lineno.as_slice()?,
    );
    if value.len() != key.len() || row.len() != key.len() {
        return Err(PyValueError::new_err("key, value and row differ in length"));
    }
    let meaning = crate::formats::rows::Meaning {
        is_step: is_step.as_slice()?,
        rank: rank.as_slice()?,
        is_time: is_time.as_slice()?,
        name: name.as_slice()?,
    };
    let out =
        py.detach(|| crate::formats::rows::emit_rows(key, value, row, lineno, &meaning, last_step));
    Ok((
        out.name.into_pyarray(py),
        out.step.into_pyarray(py),
        out.value.into_pyarray(py),
        out.line.into_pyarray(py),
        out.time.into_pyarray(py),
        out.take,
        out.last_step,
    ))
}

/// Key tables of the JSON-lines pass, by key id: step, total (the readable decision); rank, time and
/// batch name id (the rows).
type JsonKeys<'py> = (
    PyReadonlyArray1<'py, bool>,
    PyReadonlyArray1<'py, bool>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, bool>,
    PyReadonlyArray1<'py, i32>,
);

/// The JSON-lines fast path over a chunk's hit lines from `hits[start]` (see `jsonl`): the rows of the
/// lines taken as name, step, value, line and time columns, how many hit lines were taken, the last step
/// they set, and why it stopped: (0, 0, -1, 0) at the end, (1, n, -1, 0) at n lines for the per-line
/// path, (2, 0, d, k) at a nesting layout to judge, that of dict d holding k nested objects. `nesting`:
/// the layout verdicts by layout id (see `jsonl::Tables`).
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn jsonl_take<'py>(
    py: Python<'py>,
    data: PyBackedBytes,
    base: i64,
    lines: Lines<'py>,
    dicts: Dicts<'py>,
    entries: Entries<'py>,
    forms: (PyReadonlyArray1<'py, bool>, PyReadonlyArray1<'py, i64>),
    keys: JsonKeys<'py>,
    nesting: PyReadonlyArray1<'py, i64>,
    hits: PyReadonlyArray1<'py, i64>,
    start: usize,
    first_lineno: i64,
    last_step: Option<i64>,
    safe_int: f64,
) -> PyResult<(
    (
        Bound<'py, PyArray1<i32>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<f64>>,
    ),
    usize,
    Option<i64>,
    (u8, usize, i64, i64),
)> {
    let view = chunk_view(&data, base, &lines, &dicts, &entries)?;
    let tables = crate::formats::jsonl::Tables {
        forms: crate::formats::readable::DictForms {
            json: forms.0.as_slice()?,
            layout: forms.1.as_slice()?,
        },
        flags: crate::formats::readable::KeyFlags {
            is_step: keys.0.as_slice()?,
            is_total: keys.1.as_slice()?,
            safe_int,
        },
        meaning: crate::formats::rows::Meaning {
            is_step: keys.0.as_slice()?,
            rank: keys.2.as_slice()?,
            is_time: keys.3.as_slice()?,
            name: keys.4.as_slice()?,
        },
        nesting: nesting.as_slice()?,
    };
    let hits = hits.as_slice()?;
    let out = py.detach(|| {
        crate::formats::jsonl::take_lines(&view, &tables, hits, start, first_lineno, last_step)
    });
    let stop = match out.stop {
        crate::formats::jsonl::Stop::End => (0, 0, -1, 0),
        crate::formats::jsonl::Stop::Parse(count) => (1, count, -1, 0),
        crate::formats::jsonl::Stop::Judge { dict, objects } => (2, 0, dict, objects),
    };
    let r = out.rows;
    Ok((
        (
            r.name.into_pyarray(py),
            r.step.into_pyarray(py),
            r.value.into_pyarray(py),
            r.line.into_pyarray(py),
            r.time.into_pyarray(py),
        ),
        r.take,
        r.last_step,
        stop,
    ))
}

/// The Trainer console's line plan of a chunk's hit lines (see `console`), as a dict of arrays named
/// as the reference's `LinePlan` and `PlanArrays` fields.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn console_plan<'py>(
    py: Python<'py>,
    data: PyBackedBytes,
    base: i64,
    lines: Lines<'py>,
    dicts: Dicts<'py>,
    entries: Entries<'py>,
    hits: PyReadonlyArray1<'py, i64>,
    flags: (
        PyReadonlyArray1<'py, bool>,
        PyReadonlyArray1<'py, bool>,
        PyReadonlyArray1<'py, bool>,
    ),
    keys: (
        PyReadonlyArray1<'py, bool>,
        PyReadonlyArray1<'py, bool>,
        PyReadonlyArray1<'py, bool>,
        PyReadonlyArray1<'py, bool>,
    ),
) -> PyResult<Bound<'py, PyDict>> {
    let c = chunk_view(&data, base, &lines, &dicts, &entries)?;
    let hits = hits.as_slice()?;
    let flags = crate::formats::console::HitFlags {
        fine: flags.0.as_slice()?,
        has_dict: flags.1.as_slice()?,
        has_bar: flags.2.as_slice()?,
    };
    let keys = crate::formats::console::KeyFlags {
        slow: keys.0.as_slice()?,
        known: keys.1.as_slice()?,
        eval: keys.2.as_slice()?,
        epoch: keys.3.as_slice()?,
    };
    if flags.fine.len() != hits.len()
        || flags.has_dict.len() != hits.len()
        || flags.has_bar.len() != hits.len()
    {
        return Err(PyValueError::new_err(
            "hits and their flags differ in length",
        ));
    }
    let p = py.detach(|| crate::formats::console::plan(&c, hits, &flags, &keys));
    let d = PyDict::new(py);
    d.set_item("how", p.how.into_pyarray(py))?;
    d.set_item("bar_from", p.bar_from.into_pyarray(py))?;
    d.set_item("limit", p.limit.into_pyarray(py))?;
    d.set_item("line_from", p.line_from.into_pyarray(py))?;
    d.set_item("dict_of", p.dict_of.into_pyarray(py))?;
    d.set_item("plain", p.plain.into_pyarray(py))?;
    d.set_item("bar_n", p.bar_n.into_pyarray(py))?;
    d.set_item("bar_m", p.bar_m.into_pyarray(py))?;
    d.set_item("train", p.train.into_pyarray(py))?;
    d.set_item("train_epoch", p.train_epoch.into_pyarray(py))?;
    d.set_item("breaks", p.breaks.into_pyarray(py))?;
    d.set_item("bounds", p.bounds.into_pyarray(py))?;
    d.set_item("trainer", p.trainer.into_pyarray(py))?;
    d.set_item("is_eval", p.is_eval.into_pyarray(py))?;
    d.set_item("epoch", p.epoch.into_pyarray(py))?;
    Ok(d)
}

/// The samples of dict lines read from a chunk's arrays (see `console::dict_entries`).
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn dict_entries<'py>(
    py: Python<'py>,
    dicts: PyReadonlyArray1<'py, i64>,
    steps: PyReadonlyArray1<'py, i64>,
    lines: PyReadonlyArray1<'py, i64>,
    bounds: PyReadonlyArray1<'py, i64>,
    ent_key: PyReadonlyArray1<'py, i32>,
    ent_value: PyReadonlyArray1<'py, f64>,
    names: PyReadonlyArray1<'py, i32>,
) -> PyResult<(
    Bound<'py, PyArray1<i32>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
)> {
    let (dicts, steps, lines) = (dicts.as_slice()?, steps.as_slice()?, lines.as_slice()?);
    let (bounds, ent_key, ent_value) = (
        bounds.as_slice()?,
        ent_key.as_slice()?,
        ent_value.as_slice()?,
    );
    let names = names.as_slice()?;
    let (n, s, v, l) = py.detach(|| {
        crate::formats::console::dict_entries(
            dicts, steps, lines, bounds, ent_key, ent_value, names,
        )
    });
    Ok((
        n.into_pyarray(py),
        s.into_pyarray(py),
        v.into_pyarray(py),
        l.into_pyarray(py),
    ))
}

/// A steady run of a console plan from hit line `start` (see `console::steady`): the hit line it
/// stops at when too short, else ((end, bar step after, train lines, the bar at each, their epochs,
/// their steps, redraw lines, redraw steps), (the run buffer's columns, see `console::columns`: dict,
/// line, redraw samples, events, lines and totals, samples added, steps per epoch)).
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn console_steady<'py>(
    py: Python<'py>,
    rows: (
        PyReadonlyArray1<'py, i64>,
        PyReadonlyArray1<'py, bool>,
        PyReadonlyArray1<'py, i64>,
        PyReadonlyArray1<'py, i64>,
        PyReadonlyArray1<'py, bool>,
        PyReadonlyArray1<'py, f64>,
    ),
    start: usize,
    run: (usize, usize),
    total: i64,
    bar_step: i64,
    bar_used: Option<i64>,
    progress_sent: Option<i64>,
    last: Option<i64>,
    place: (
        PyReadonlyArray1<'py, i64>,
        PyReadonlyArray1<'py, i64>,
        PyReadonlyArray1<'py, i64>,
        i64,
        i64,
        i64,
    ),
) -> PyResult<Bound<'py, PyAny>> {
    let a = crate::formats::console::PlanRows {
        breaks: rows.0.as_slice()?,
        plain: rows.1.as_slice()?,
        bar_n: rows.2.as_slice()?,
        bar_m: rows.3.as_slice()?,
        train: rows.4.as_slice()?,
        epoch: rows.5.as_slice()?,
    };
    let st = crate::formats::console::SteadyState {
        min_run: run.0,
        max_run: run.1,
        total,
        bar_step,
        bar_used,
        progress_sent,
        last,
    };
    let at = crate::formats::console::RunPlace {
        dict_of: place.0.as_slice()?,
        hits: place.1.as_slice()?,
        bounds: place.2.as_slice()?,
        first: place.3,
        samples: place.4,
        events: place.5,
        total,
    };
    let got = py.detach(|| {
        crate::formats::console::steady(&a, start, &st).map(|r| {
            let c = crate::formats::console::columns(&r, &at);
            (r, c)
        })
    });
    match got {
        Err(end) => Ok(end.into_pyobject(py)?.into_any()),
        Ok((r, c)) => {
            let k = r.redraws.len();
            let run = (
                r.end,
                r.bar_step,
                r.train.into_pyarray(py),
                r.bar_at_train.into_pyarray(py),
                r.epochs.into_pyarray(py),
                r.steps.into_pyarray(py),
                r.redraws.into_pyarray(py),
                r.redraw_steps.into_pyarray(py),
            );
            let cols = (
                c.dict.into_pyarray(py),
                c.line.into_pyarray(py),
                c.redraw_samples.into_pyarray(py),
                vec![at.events; k].into_pyarray(py),
                c.redraw_lines.into_pyarray(py),
                vec![total; k].into_pyarray(py),
                c.entries,
                c.per_epoch,
            );
            Ok((run, cols).into_pyobject(py)?.into_any())
        }
    }
}

#[pymodule]
fn _scan(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Scanner>()?;
    m.add_function(wrap_pyfunction!(plain_bars, m)?)?;
    m.add_function(wrap_pyfunction!(ema_path, m)?)?;
    m.add_function(wrap_pyfunction!(move_median, m)?)?;
    m.add_function(wrap_pyfunction!(span_medians, m)?)?;
    m.add_function(wrap_pyfunction!(move_extreme, m)?)?;
    m.add_function(wrap_pyfunction!(span_census, m)?)?;
    m.add_function(wrap_pyfunction!(positions, m)?)?;
    m.add_function(wrap_pyfunction!(count_byte, m)?)?;
    m.add_function(wrap_pyfunction!(table_cells, m)?)?;
    m.add_function(wrap_pyfunction!(fold_buckets, m)?)?;
    m.add_function(wrap_pyfunction!(gather_rows, m)?)?;
    m.add_function(wrap_pyfunction!(group_rows, m)?)?;
    m.add_function(wrap_pyfunction!(jsonl_rows, m)?)?;
    m.add_function(wrap_pyfunction!(jsonl_readable, m)?)?;
    m.add_function(wrap_pyfunction!(jsonl_take, m)?)?;
    m.add_function(wrap_pyfunction!(console_plan, m)?)?;
    m.add_function(wrap_pyfunction!(console_steady, m)?)?;
    m.add_function(wrap_pyfunction!(dict_entries, m)?)?;
    m.add("MAX_LINE", crate::scan::lines::MAX_LINE)?;
    m.add("MEDIAN_WINDOW_MAX", crate::kernels::median::window_max())?;
    Ok(())
}
