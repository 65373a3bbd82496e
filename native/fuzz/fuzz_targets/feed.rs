//! Arbitrary bytes fed in arbitrary cuts with arbitrary keywords: the scanner must not panic, and the
//! cut feeds must give the arrays of one whole feed.
//!
//! Input layout: byte 0 = number of keywords (mod 4), each keyword = 1 length byte (mod 5) + bytes;
//! then 1 byte = number of cuts (mod 8), each cut = 2 bytes (little-endian, taken mod the data length);
//! the rest is the log. The tqdm bar reader is run at every `%|` of the log as well.
#![no_main]

use _scan::scan::scanner::{ChunkOut, Core};
use libfuzzer_sys::fuzz_target;

fn take<'a>(input: &mut &'a [u8], n: usize) -> &'a [u8] {
    let n = n.min(input.len());
    let (head, tail) = input.split_at(n);
    *input = tail;
    head
}

fn byte(input: &mut &[u8]) -> usize {
    take(input, 1).first().copied().unwrap_or(0) as usize
}

/// Every array joined over the parts (chunk-relative indices made absolute), and the data.
fn flat(parts: &[ChunkOut]) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new(); 21];
    let (mut lines, mut dicts) = (0i64, 0i64);
    for p in parts {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits() as i64).collect::<Vec<_>>();
        out[0].extend(&p.line_start);
        out[1].extend(&p.line_end);
        out[2].extend(&p.visible_start);
        out[3].extend(p.kw_line.iter().map(|l| l + lines));
        out[4].extend(p.kw_id.iter().map(|&k| i64::from(k)));
        out[5].extend(p.dict_line.iter().map(|l| l + lines));
        out[6].extend(&p.dict_start);
        out[7].extend(&p.dict_end);
        out[8].extend(p.ent_dict.iter().map(|d| d + dicts));
        out[9].extend(p.ent_key.iter().map(|&k| i64::from(k)));
        out[10].extend(bits(&p.ent_value));
        out[11].extend(p.kv_line.iter().map(|l| l + lines));
        out[12].extend(p.kv_key.iter().map(|&k| i64::from(k)));
        out[13].extend(bits(&p.kv_value));
        out[14].extend(&p.kv_pos);
        out[15].extend(p.prog_line.iter().map(|l| l + lines));
        out[16].extend(&p.prog_n);
        out[17].extend(&p.prog_total);
        out[18].extend(p.data.iter().map(|&b| i64::from(b)));
        out[19].extend(p.dict_json.iter().map(|&j| i64::from(j)));
        out[20].extend(&p.dict_layout);
        lines += p.line_start.len() as i64;
        dicts += p.dict_line.len() as i64;
    }
    out
}

/// The log fed in pieces cut at `cuts`; with `recycle`, each piece's data handed back to the core
/// as the Python binding does (a copy: the pieces are compared later), so the next piece is built in it.
fn run(core: &mut Core, log: &[u8], cuts: &[usize], recycle: bool) -> Vec<ChunkOut> {
    let mut parts = Vec::new();
    let mut start = 0;
    for &c in cuts.iter().chain(std::iter::once(&log.len())) {
        let part = core.feed(&log[start..c]);
        if recycle {
            core.recycle(part.data.clone());
        }
        parts.push(part);
        start = c;
    }
    parts.push(core.finish());
    parts
}

fuzz_target!(|input: &[u8]| {
    let mut input = input;
    let n_keywords = byte(&mut input) % 4;
    let mut keywords = Vec::new();
    for _ in 0..n_keywords {
        let len = byte(&mut input) % 5;
        keywords.push(take(&mut input, len).to_vec());
    }
    let n_cuts = byte(&mut input) % 8;
    let raw_cuts: Vec<usize> = (0..n_cuts)
        .map(|_| {
            let b = take(&mut input, 2);
            usize::from(b.first().copied().unwrap_or(0))
                | usize::from(b.get(1).copied().unwrap_or(0)) << 8
        })
        .collect();
    let log = input;
    let mut cuts: Vec<usize> = raw_cuts.iter().map(|c| c % (log.len() + 1)).collect();
    cuts.sort_unstable();

    let Ok(mut whole_core) = Core::new(&keywords) else {
        return;
    };
    let Ok(mut split_core) = Core::new(&keywords) else {
        return;
    };
    let whole = run(&mut whole_core, log, &[], false);
    let split = run(&mut split_core, log, &cuts, true);
    assert_eq!(flat(&whole), flat(&split));
    assert_eq!(whole_core.keys(), split_core.keys());

    // the bar reader at every `%|` of the log, with segment starts and limits taken from the cuts
    for p in (0..log.len().saturating_sub(1)).filter(|&i| log.get(i..i + 2) == Some(b"%|")) {
        let seg = cuts.iter().copied().filter(|&c| c <= p).max().unwrap_or(0);
        let limit = cuts.iter().copied().find(|&c| c > p).unwrap_or(log.len());
        for (s, l) in [(seg, limit), (0, log.len()), (p, usize::MAX)] {
            if let Some((n, m)) = _scan::scan::bars::plain_bar(log, p, s, l) {
                assert!(n >= 0 && m >= 0);
            }
        }
    }
});
