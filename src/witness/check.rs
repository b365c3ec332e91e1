//! Native against gadget: the same partition's witness both ways, element for element, and
//! for the first difference the variable's index and the gadget (namespace path) that
//! allocated it.

use std::time::Instant;

use anyhow::Result;
use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

use super::sink::Sink;
use super::Witness;

/// The outcome of a comparison.
#[derive(Debug)]
pub struct WitnessCheck {
    /// Public inputs, the constant one included (the gadget path's count).
    pub inputs: usize,
    /// Aux variables (the gadget path's count).
    pub aux: usize,
    /// Wall-clock milliseconds of the gadget path's witness.
    pub gadget_ms: f64,
    /// Its CPU milliseconds (one thread: the gadgets run in order).
    pub gadget_cpu_ms: f64,
    /// Wall-clock milliseconds of the native witness (measured by the caller).
    pub native_ms: f64,
    /// The first difference, described; `None` when the witnesses are identical.
    pub mismatch: Option<String>,
}

/// Computes the witness of the circuit `circuit` makes with its gadgets and compares
/// `native` with it (a second circuit names the first difference's gadget).
pub fn compare<C: Circuit<Fr>>(
    circuit: impl Fn() -> Result<C>,
    native: &Witness,
    native_ms: f64,
) -> Result<WitnessCheck> {
    let started = Instant::now();
    let cpu_started = crate::synth::thread_cpu_ms();
    let mut gadget = Sink::new(0, 0, native.aux.len());
    gadget.input(Fr::ONE);
    circuit()?.synthesize(&mut gadget)?;
    let gadget_ms = started.elapsed().as_secs_f64() * 1e3;
    let gadget_cpu_ms = crate::synth::thread_cpu_ms() - cpu_started;
    let gadget_aux = gadget.take_aux();

    let first = |ours: &[Fr], theirs: &[Fr]| {
        (0..ours.len().max(theirs.len())).find(|&i| ours.get(i) != theirs.get(i))
    };
    let mismatch = if let Some(i) = first(&native.inputs, &gadget.inputs) {
        Some(describe(
            circuit()?,
            Kind::Input,
            i,
            &native.inputs,
            &gadget.inputs,
        )?)
    } else if let Some(i) = first(&native.aux, &gadget_aux) {
        Some(describe(
            circuit()?,
            Kind::Aux,
            i,
            &native.aux,
            &gadget_aux,
        )?)
    } else {
        None
    };
    Ok(WitnessCheck {
        inputs: gadget.inputs.len(),
        aux: gadget_aux.len(),
        gadget_ms,
        gadget_cpu_ms,
        native_ms,
        mismatch,
    })
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Input,
    Aux,
}

fn describe<C: Circuit<Fr>>(
    circuit: C,
    kind: Kind,
    index: usize,
    native: &[Fr],
    gadget: &[Fr],
) -> Result<String> {
    let mut naming = Naming {
        kind,
        target: index,
        seen: [1, 0], // the constant one input is allocated before the circuit runs
        path: Vec::new(),
        found: None,
    };
    circuit.synthesize(&mut naming)?;
    let show = |v: Option<&Fr>| v.map_or("nothing".to_owned(), |v| format!("{v:?}"));
    Ok(format!(
        "{kind:?} variable {index} differs (native {}, gadget {}); the gadget allocated it at {} \
         ({} {kind:?} variables natively, {} by the gadgets)",
        show(native.get(index)),
        show(gadget.get(index)),
        naming
            .found
            .unwrap_or_else(|| "no variable (the gadgets made fewer)".into()),
        native.len(),
        gadget.len(),
    ))
}

/// A witness-only constraint system that remembers the namespace path of one variable.
struct Naming {
    kind: Kind,
    target: usize,
    /// Inputs and aux variables allocated so far.
    seen: [usize; 2],
    path: Vec<String>,
    found: Option<String>,
}

impl Naming {
    fn allocated(&mut self, kind: Kind, name: String) -> usize {
        let slot = usize::from(kind == Kind::Aux);
        let index = self.seen[slot];
        self.seen[slot] += 1;
        if kind == self.kind && index == self.target && self.found.is_none() {
            self.found = Some(format!("{}/{name}", self.path.join("/")));
        }
        index
    }
}

impl ConstraintSystem<Fr> for Naming {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, name: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        f()?;
        let index = self.allocated(Kind::Aux, name().into());
        Ok(Variable::new_unchecked(Index::Aux(index)))
    }

    fn alloc_input<F, A, AR>(&mut self, name: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        f()?;
        let index = self.allocated(Kind::Input, name().into());
        Ok(Variable::new_unchecked(Index::Input(index)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
    }

    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        self.path.push(name().into());
    }

    fn pop_namespace(&mut self) {
        self.path.pop();
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two namespaces deep, three variables and an input.
    #[derive(Clone)]
    struct Toy;

    impl Circuit<Fr> for Toy {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let mut outer = cs.namespace(|| "labeling_1");
            outer.alloc(|| "first", || Ok(Fr::from(1u64)))?;
            let mut inner = outer.namespace(|| "create_label");
            inner.alloc(|| "second", || Ok(Fr::from(2u64)))?;
            inner.alloc_input(|| "challenge", || Ok(Fr::from(9u64)))?;
            inner.alloc(|| "third", || Ok(Fr::from(3u64)))?;
            Ok(())
        }
    }

    fn witness(aux: [u64; 3]) -> Witness {
        Witness {
            inputs: vec![Fr::ONE, Fr::from(9u64)],
            aux: aux.iter().map(|&v| Fr::from(v)).collect(),
        }
    }

    #[test]
    fn identical_witnesses_have_no_mismatch() {
        let check = compare(|| Ok(Toy), &witness([1, 2, 3]), 0.0).unwrap();
        assert!(check.mismatch.is_none(), "{:?}", check.mismatch);
        assert_eq!((check.inputs, check.aux), (2, 3));
    }

    #[test]
    fn a_mismatch_names_the_variable_and_the_gadget_that_made_it() {
        let mismatch = compare(|| Ok(Toy), &witness([1, 2, 4]), 0.0)
            .unwrap()
            .mismatch
            .unwrap();
        assert!(mismatch.starts_with("Aux variable 2 differs"), "{mismatch}");
        assert!(
            mismatch.contains("labeling_1/create_label/third"),
            "{mismatch}"
        );

        let mut short = witness([1, 2, 3]);
        short.inputs.pop();
        let mismatch = compare(|| Ok(Toy), &short, 0.0).unwrap().mismatch.unwrap();
        assert!(
            mismatch.starts_with("Input variable 1 differs (native nothing"),
            "{mismatch}"
        );
        assert!(mismatch.contains("create_label/challenge"), "{mismatch}");
    }
}
