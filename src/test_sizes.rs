//! Test sizes with several partitions, for the test suite's runs of the real binary.
//!
//! 2KiB, 8MiB and 512MiB sectors have one partition; 32GiB and 64GiB sectors have ten. The
//! crash tests need sectors of several partitions that prove in seconds, through the binary a
//! user runs (so that they can kill it), so `CUZK_TEST_POREP_PARTITIONS=2048=2` (sector bytes
//! and partitions, comma-separated) sets a test size's partition count in this process, as
//! filecoin-proofs' own tests do through its `POREP_PARTITIONS` map. Such sectors have their
//! own circuit, and their own parameter files (`cuzk params gen` under the same variable
//! makes them). Production sizes are refused, and a process that applies the variable says so
//! on stderr.

use anyhow::{bail, Context, Result};

/// The variable that sets test sizes' partition counts.
pub const VARIABLE: &str = "CUZK_TEST_POREP_PARTITIONS";

/// Applies [`VARIABLE`] if it is set: before anything reads a sector's partition count.
pub fn apply_from_env() -> Result<()> {
    let Ok(spec) = std::env::var(VARIABLE) else {
        return Ok(());
    };
    let counts = parse(&spec)?;
    let mut partitions = filecoin_proofs::POREP_PARTITIONS
        .write()
        .map_err(|_| anyhow::anyhow!("filecoin-proofs' POREP_PARTITIONS lock is poisoned"))?;
    for &(sector_size, count) in &counts {
        partitions.insert(sector_size, count);
        log::info!(
            "{VARIABLE}: {sector_size}-byte sectors have {count} partitions in this process (a test setting; their parameters are their own)"
        );
    }
    Ok(())
}

/// `2048=2,8388608=3` as (sector bytes, partitions), test sizes only.
fn parse(spec: &str) -> Result<Vec<(u64, u8)>> {
    let mut counts = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (size, count) = item
            .split_once('=')
            .with_context(|| format!("{VARIABLE}: {item:?} is not <sector bytes>=<partitions>"))?;
        let size: u64 = size
            .parse()
            .with_context(|| format!("{VARIABLE}: {size:?} is not a number of bytes"))?;
        let count: u8 = count
            .parse()
            .with_context(|| format!("{VARIABLE}: {count:?} is not a partition count"))?;
        if !crate::params::is_test_size(size) || count == 0 {
            bail!("{VARIABLE}: {item:?}: only the test sizes (2048, 8388608, 536870912 bytes) take another partition count, and at least one");
        }
        counts.push((size, count));
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_test_sizes_take_a_count() {
        assert_eq!(
            parse("2048=2, 8388608=3").expect("test sizes"),
            vec![(2048, 2), (8_388_608, 3)]
        );
        for bad in ["34359738368=2", "2048=0", "2048", "2KiB=2", "2048=x"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
