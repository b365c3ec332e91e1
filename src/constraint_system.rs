//! What cuzk's own constraint systems share: bellperson's [`ConstraintSystem`] asks each of
//! them for the same generic plumbing (names, namespaces, a root), which the ones that prove,
//! record or compute witnesses ignore. Such a system says only what it does with a new
//! variable and a constraint ([`NamelessSystem`]); [`nameless_constraint_system!`] makes it
//! a `ConstraintSystem`. The one that reports names (`witness::check`) keeps its own.
//!
//! [`ConstraintSystem`]: bellperson::ConstraintSystem

use bellperson::{LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;

/// A constraint system that ignores names and namespaces.
pub trait NamelessSystem {
    /// A new aux variable whose value `value` computes (called at most once).
    fn new_aux<F>(&mut self, value: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>;

    /// A new public input whose value `value` computes.
    fn new_input<F>(&mut self, value: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>;

    /// The constraint `a * b = c`; each linear combination is built only if called, so a
    /// system that needs none of them costs nothing here.
    fn constrain<LA, LB, LC>(&mut self, a: LA, b: LB, c: LC)
    where
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>;
}

/// Implements bellperson's `ConstraintSystem<Fr>` for a [`NamelessSystem`]: names are never
/// computed, namespaces are ignored, and the system is its own root.
macro_rules! nameless_constraint_system {
    ($system:ty) => {
        impl bellperson::ConstraintSystem<blstrs::Scalar> for $system {
            type Root = Self;

            fn alloc<F, A, AR>(
                &mut self,
                _: A,
                f: F,
            ) -> Result<bellperson::Variable, bellperson::SynthesisError>
            where
                F: FnOnce() -> Result<blstrs::Scalar, bellperson::SynthesisError>,
                A: FnOnce() -> AR,
                AR: Into<String>,
            {
                $crate::constraint_system::NamelessSystem::new_aux(self, f)
            }

            fn alloc_input<F, A, AR>(
                &mut self,
                _: A,
                f: F,
            ) -> Result<bellperson::Variable, bellperson::SynthesisError>
            where
                F: FnOnce() -> Result<blstrs::Scalar, bellperson::SynthesisError>,
                A: FnOnce() -> AR,
                AR: Into<String>,
            {
                $crate::constraint_system::NamelessSystem::new_input(self, f)
            }

            fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
            where
                A: FnOnce() -> AR,
                AR: Into<String>,
                LA: FnOnce(
                    bellperson::LinearCombination<blstrs::Scalar>,
                ) -> bellperson::LinearCombination<blstrs::Scalar>,
                LB: FnOnce(
                    bellperson::LinearCombination<blstrs::Scalar>,
                ) -> bellperson::LinearCombination<blstrs::Scalar>,
                LC: FnOnce(
                    bellperson::LinearCombination<blstrs::Scalar>,
                ) -> bellperson::LinearCombination<blstrs::Scalar>,
            {
                $crate::constraint_system::NamelessSystem::constrain(self, a, b, c)
            }

            fn push_namespace<NR, N>(&mut self, _: N)
            where
                NR: Into<String>,
                N: FnOnce() -> NR,
            {
                // Names only matter for debugging constraint systems; these ignore them.
            }

            fn pop_namespace(&mut self) {}

            fn get_root(&mut self) -> &mut Self::Root {
                self
            }
        }
    };
}
pub(crate) use nameless_constraint_system;
