//! The Python binding: `trainwatch._scan.Scanner`, whose feed and finish return a dict of numpy arrays
//! (trainwatch/scan/native.py turns it into a `Chunk`).

use crate::scanner::{ChunkOut, Core};
use numpy::IntoPyArray;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyDict};

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
        to_dict(py, out)
    }

    /// The held partial line as a last line, then nothing is held.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let core = &mut self.core;
        let out = py.detach(move || core.finish());
        to_dict(py, out)
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
}

fn to_dict(py: Python<'_>, out: ChunkOut) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("first_lineno", out.first_lineno)?;
    d.set_item("base_offset", out.base_offset)?;
    d.set_item("data", PyBytes::new(py, &out.data))?;
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
    Ok(d)
}

#[pymodule]
fn _scan(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Scanner>()?;
    m.add("MAX_LINE", crate::lines::MAX_LINE)?;
    Ok(())
}
