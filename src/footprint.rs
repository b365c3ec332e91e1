//! What a circuit's jobs occupy in memory ([`Footprint`]): a parameter set and one of its
//! partitions, from the counts in the parameter file, which say exactly how long every vector
//! is. The run's budget ([`memory`](crate::memory)) reserves these sizes.

use std::path::Path;

use crate::params::load::ParamsLayout;

/// Bytes of one field element (a scalar of BLS12-381) in memory.
const SCALAR_BYTES: u64 = 32;

/// What a parameter set and one of its partitions occupy in memory, from the counts in the
/// parameter file (which are the circuit's: domain, aux variables, inputs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// The decoded parameter set.
    pub params_bytes: u64,
    /// One partition at its peak: a, b and c padded to the FFT domain while the quotient is
    /// computed, plus the witness (inputs and aux variables).
    pub partition_bytes: u64,
    /// The FFT domain (constraints rounded up to a power of two).
    pub domain: u64,
    /// Aux variables per partition.
    pub aux: u64,
    /// Public inputs per partition, the constant one included.
    pub inputs: u64,
    /// One partition whose a, b and c are left to the prover: its witness alone.
    pub witness_bytes: u64,
    /// Set when the prover evaluates pre-compiled constraints on its GPU (the cuda
    /// backend): the device memory they may take. Constraints that fit are left to it, and
    /// a partition in flight holds only [`Footprint::witness_bytes`].
    pub gpu_room_for_constraints: Option<u64>,
    /// Set when the prover's thread may evaluate a, b and c on the host right before the
    /// proof ([`Evaluation::AtProver`]): the room the budget keeps for the partitions the
    /// provers hold at once. Partitions then wait as their witness, and only the ones at a
    /// prover hold a, b and c.
    pub room_at_provers: Option<u64>,
}

/// Where a partition's a = A·w, b = B·w and c = C·w are computed from its witness and the
/// pre-compiled constraints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evaluation {
    /// In synthesis, on the synthesis pool: the partition waits for its prover whole. Full
    /// synthesis (no recorded constraints yet) makes them this way too.
    InSynthesis,
    /// On the GPU, from constraints resident there: a, b and c never exist on the host.
    OnGpu,
    /// On the host by the prover's thread, with every core, right before the proof: the
    /// partition waits as its witness and grows to [`Footprint::partition_bytes`] at the
    /// prover ([`crate::memory::Reservation::grow_to`]).
    AtProver,
}

impl Evaluation {
    /// True when a, b and c are left out of the synthesized partition.
    pub fn is_deferred(self) -> bool {
        self != Evaluation::InSynthesis
    }
}

impl Footprint {
    /// The footprint of the circuit whose parameters have `layout`.
    pub fn of(layout: &ParamsLayout) -> Footprint {
        let domain = layout.h + 1;
        let (aux, inputs) = (layout.l, layout.ic);
        Footprint {
            params_bytes: layout.memory_bytes(),
            partition_bytes: SCALAR_BYTES * (3 * domain + inputs + aux),
            domain,
            aux,
            inputs,
            witness_bytes: SCALAR_BYTES * (inputs + aux),
            gpu_room_for_constraints: None,
            room_at_provers: None,
        }
    }

    /// Where a partition about to start gets its a, b and c, given its shape's pre-compiled
    /// constraints (the bytes a GPU keeps of them, `ConstraintMatrices::gpu_bytes`, once
    /// ready), and the bytes it holds in flight: its witness alone when they are left to the
    /// prover, everything when synthesis evaluates them.
    pub fn partition_in_flight(&self, constraints_bytes: Option<u64>) -> (Evaluation, u64) {
        let Some(bytes) = constraints_bytes else {
            return (Evaluation::InSynthesis, self.partition_bytes);
        };
        if self
            .gpu_room_for_constraints
            .is_some_and(|room| bytes <= room)
        {
            (Evaluation::OnGpu, self.witness_bytes)
        } else if self.room_at_provers.is_some() {
            (Evaluation::AtProver, self.witness_bytes)
        } else {
            (Evaluation::InSynthesis, self.partition_bytes)
        }
    }

    /// The footprint of the parameter file at `path`, read from its counts.
    pub fn of_file(path: &Path) -> std::io::Result<Footprint> {
        ParamsLayout::read(path).map(|layout| Footprint::of(&layout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::show_bytes;

    #[test]
    fn footprint_follows_the_parameter_counts() {
        // The 32GiB circuit: 2^27 domain, 130,169,893 aux, 328 inputs.
        let layout = ParamsLayout {
            vk_bytes: 868 + 96 * 328,
            ic: 328,
            h: (1 << 27) - 1,
            l: 130_169_893,
            a: 328 + 129_753_292,
            b: 1 + 33_112_281,
        };
        let footprint = Footprint::of(&layout);
        assert_eq!(footprint.domain, 1 << 27);
        assert_eq!(
            footprint.partition_bytes,
            32 * (3 * (1 << 27) + 328 + 130_169_893)
        );
        // ~17 GB a partition, ~47 GB of parameters.
        assert_eq!(show_bytes(footprint.partition_bytes), "17.1 GB");
        assert_eq!(show_bytes(footprint.params_bytes), "47.4 GB");
        // Left to the GPU, a partition in flight is its witness: a quarter of that.
        assert_eq!(footprint.witness_bytes, 32 * (328 + 130_169_893));
        assert_eq!(show_bytes(footprint.witness_bytes), "4.2 GB");
        assert_eq!(
            footprint.gpu_room_for_constraints, None,
            "the host decides nothing"
        );
        let full = footprint.partition_bytes;
        assert_eq!(
            footprint.partition_in_flight(Some(9 << 30)),
            (Evaluation::InSynthesis, full)
        );

        // The cuda backend with 20 GB of room for the 8.9 GB of constraints.
        let gpu = Footprint {
            gpu_room_for_constraints: Some(20_000_000_000),
            ..footprint
        };
        let witness = gpu.witness_bytes;
        assert_eq!(
            gpu.partition_in_flight(None),
            (Evaluation::InSynthesis, full),
            "still recording"
        );
        assert_eq!(
            gpu.partition_in_flight(Some(8_900_000_000)),
            (Evaluation::OnGpu, witness)
        );
        assert_eq!(
            gpu.partition_in_flight(Some(21_000_000_000)),
            (Evaluation::InSynthesis, full),
            "constraints larger than the room stay on the host"
        );

        // A prover that evaluates on the host just in time: the partition waits as its
        // witness wherever the constraints do not fit the GPU.
        let at_prover = Footprint {
            room_at_provers: Some(2 * full),
            ..gpu
        };
        assert_eq!(
            at_prover.partition_in_flight(Some(21_000_000_000)),
            (Evaluation::AtProver, witness)
        );
        assert_eq!(
            at_prover.partition_in_flight(Some(8_900_000_000)),
            (Evaluation::OnGpu, witness),
            "the GPU first, where they fit"
        );
        assert_eq!(
            at_prover.partition_in_flight(None),
            (Evaluation::InSynthesis, full),
            "no constraints to evaluate yet"
        );
        assert!(!Evaluation::InSynthesis.is_deferred());
        assert!(Evaluation::AtProver.is_deferred() && Evaluation::OnGpu.is_deferred());
    }
}
