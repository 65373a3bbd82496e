//! The key table: each distinct key (raw bytes) gets the next id the first time it is seen.

use std::collections::HashMap;
#[derive(Default)]
pub struct Keys {
    ids: HashMap<Vec<u8>, i32, foldhash::fast::RandomState>,
    names: Vec<Vec<u8>>,
}

impl Keys {
    /// The id of `key`, interning it when new.
    pub fn intern(&mut self, key: &[u8]) -> i32 {
        if let Some(&id) = self.ids.get(key) {
            return id;
        }
        let id = i32::try_from(self.names.len()).unwrap_or(i32::MAX);
        self.ids.insert(key.to_vec(), id);
        self.names.push(key.to_vec());
        id
    }

    /// The name of key `id` (empty for an id never given).
    #[inline]
    pub fn name(&self, id: i32) -> &[u8] {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.names.get(i))
            .map_or(&[], Vec::as_slice)
    }

    /// Every key in id order, as raw bytes.
    pub fn names(&self) -> &[Vec<u8>] {
        &self.names
    }
}
