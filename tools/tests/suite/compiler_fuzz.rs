//! Whole-compiler fuzzing: structure-aware mutants of the models in `testdata/models` —
//! dimensions (0, 1, primes, large), attribute values, element types (of one value or all),
//! ops swapped for others of the same arity, rank-0 values, deleted or duplicated
//! statements — re-typed by the ops' own shape rules; each one the front end accepts is
//! compiled at every preset and on two threads, run, and compared with the reference
//! interpreter (`compile_check`). `TESSERA_FUZZ_CASES` sets how many mutants (default 10;
//! hours of them have run), `TESSERA_FUZZ_SEED` the first seed (default: fixed, so CI is
//! reproducible); a failure prints the saved program and the tool's report.

use crate::common::{load_text, root, tsr_files};
use crate::compile_check::check_everywhere;
use std::collections::BTreeMap;
use tessera::attr::Attribute;
use tessera::dialect::{Arity, AttrKind, OpDef};
use tessera::infer::InferContext;
use tessera::ir::{Module, OpKind};
use tessera::source::Span;
use tessera::syntax::printer::print_module;
use tessera::types::{ElementType, TensorType};
use tessera_tools::registry;

/// SplitMix64: a small, reproducible generator.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// One of `items` (not empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// One of `items`, if there is one.
    pub fn choose<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        (!items.is_empty()).then(|| self.pick(items))
    }

    /// One of `items` to change, if there is one.
    pub fn choose_mut<'a, T>(&mut self, items: &'a mut [T]) -> Option<&'a mut T> {
        if items.is_empty() {
            return None;
        }
        let at = self.below(items.len());
        items.get_mut(at)
    }
}

/// Environment variable `name` as a number, or `default`.
pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The extents a dimension is mutated to.
const DIMENSIONS: &[u64] = &[0, 1, 1, 2, 3, 5, 7, 13, 17, 31, 64, 97, 128, 257, 1000];

/// Ops no swap introduces: steps of a float argument. Put after a matmul (seed 20280 put
/// floor in place of a gelu), the last-bit difference between f32 accumulation and the f64
/// reference became a difference of 1 wherever a value sat next to an integer: a true
/// disagreement of the two, but not a miscompilation.
const DISCONTINUOUS: &[&str] = &["array.floor", "array.ceil"];

/// One structural change of a module. Returns `None` when it does not apply.
fn mutate(module: &Module, rng: &mut Rng) -> Option<Module> {
    let mut m = module.clone();
    let f = rng.below(m.funcs.len());
    let func = &mut m.funcs[f];
    match rng.below(8) {
        // A dimension of a parameter.
        0 => {
            let p = *rng.choose(&func.params)?;
            let ty = &mut func.values[p.index()].ty;
            if ty.shape.is_empty() {
                return None;
            }
            let d = rng.below(ty.shape.len());
            ty.shape[d] = *rng.pick(DIMENSIONS);
        }
        // A parameter becomes rank 0, or gains a leading dimension.
        1 => {
            let p = *rng.choose(&func.params)?;
            let ty = &mut func.values[p.index()].ty;
            if rng.below(2) == 0 {
                ty.shape.clear();
            } else {
                ty.shape.insert(0, *rng.pick(&DIMENSIONS[1..]));
            }
        }
        // The element type of one parameter, or of every value.
        2 => {
            let element = *rng.pick(&ElementType::ALL);
            if rng.below(2) == 0 {
                let p = *rng.choose(&func.params)?;
                func.values[p.index()].ty.element = element;
            } else {
                for value in &mut func.values {
                    value.ty.element = element;
                }
            }
        }
        // An attribute value.
        3 => {
            let i = rng.below(func.ops.len().max(1));
            let op = func.ops.get_mut(i)?;
            let OpKind::Dialect(def) = op.kind else {
                return None;
            };
            let spec = rng.choose(def.schema().attrs)?;
            let value = mutated_attribute(spec.kind, op.attrs.get(spec.name), rng)?;
            op.attrs.insert(spec.name.to_string(), value);
        }
        // An op swapped for another with as many operands.
        4 => {
            let i = rng.below(func.ops.len().max(1));
            let op = func.ops.get_mut(i)?;
            let OpKind::Dialect(def) = op.kind else {
                return None;
            };
            let same_arity: Vec<&'static dyn OpDef> = all_ops()
                .into_iter()
                .filter(|other| {
                    let (a, b) = (other.schema(), def.schema());
                    a.operands.len() == b.operands.len()
                        && a.results == b.results
                        && a.literal.is_none()
                        && b.literal.is_none()
                        && !DISCONTINUOUS.contains(&a.full_name().as_str())
                })
                .collect();
            let swapped = *rng.choose(&same_arity)?;
            op.kind = OpKind::Dialect(swapped);
            let known: Vec<&str> = swapped.schema().attrs.iter().map(|a| a.name).collect();
            op.attrs.retain(|key, _| known.contains(&key.as_str()));
        }
        // A statement deleted: its uses read its first operand instead.
        5 => {
            let i = rng.below(func.ops.len().max(1));
            let op = func.ops.get(i)?;
            let (&replacement, &result) = (op.operands.first()?, op.results.first()?);
            if op.results.len() != 1 {
                return None;
            }
            func.ops.remove(i);
            for later in &mut func.ops {
                for operand in &mut later.operands {
                    if *operand == result {
                        *operand = replacement;
                    }
                }
            }
            for returned in &mut func.returns {
                if *returned == result {
                    *returned = replacement;
                }
            }
        }
        // A statement duplicated: the copy's result feeds the uses after it.
        6 => {
            let i = rng.below(func.ops.len().max(1));
            let op = func.ops.get(i)?.clone();
            if op.results.len() != 1 {
                return None;
            }
            let original = op.results[0];
            let copy = tessera::ir::ValueId(func.values.len() as u32);
            let mut info = func.values[original.index()].clone();
            info.name = format!("{}_dup", info.name);
            func.values.push(info);
            let mut duplicate = op;
            duplicate.results = vec![copy];
            func.ops.insert(i + 1, duplicate);
            for later in &mut func.ops[i + 2..] {
                for operand in &mut later.operands {
                    if *operand == original {
                        *operand = copy;
                    }
                }
            }
            for returned in &mut func.returns {
                if *returned == original {
                    *returned = copy;
                }
            }
        }
        // An operand read from another value of the function.
        _ => {
            let i = rng.below(func.ops.len().max(1));
            let available: Vec<_> = func
                .params
                .iter()
                .copied()
                .chain(
                    func.ops[..i.min(func.ops.len())]
                        .iter()
                        .flat_map(|o| o.results.clone()),
                )
                .collect();
            let op = func.ops.get_mut(i)?;
            if op.operands.is_empty() || available.is_empty() {
                return None;
            }
            let k = rng.below(op.operands.len());
            op.operands[k] = *rng.pick(&available);
        }
    }
    retype(&mut m)?;
    Some(m)
}

/// A new value for an attribute of `kind` (whose current value is `current`).
fn mutated_attribute(
    kind: AttrKind,
    current: Option<&Attribute>,
    rng: &mut Rng,
) -> Option<Attribute> {
    let int = |rng: &mut Rng| *rng.pick(&[-3i64, -2, -1, 0, 1, 2, 3, 4, 7, 64, 1 << 40]);
    Some(match kind {
        AttrKind::Int => Attribute::Int(int(rng)),
        AttrKind::Float | AttrKind::Number => {
            Attribute::Float(*rng.pick(&[0.0, -1.0, 1.0e-30, 0.5, 1.0e30, f64::MAX]))
        }
        AttrKind::Bool => Attribute::Bool(rng.below(2) == 0),
        AttrKind::Enum(names) => Attribute::Str(rng.pick(names).to_string()),
        AttrKind::IntList | AttrKind::IntListOrEnum(_) => {
            if let (AttrKind::IntListOrEnum(names), 0) = (kind, rng.below(3)) {
                return Some(Attribute::Str(rng.pick(names).to_string()));
            }
            let mut items = match current {
                Some(Attribute::List(items)) => items.clone(),
                _ => Vec::new(),
            };
            match rng.below(3) {
                0 if !items.is_empty() => {
                    let at = rng.below(items.len());
                    items[at] = Attribute::Int(int(rng));
                }
                1 => items.push(Attribute::Int(int(rng))),
                _ => {
                    items.pop();
                }
            }
            Attribute::List(items)
        }
    })
}

/// Whether `def` takes `count` operands (the verifier checks this before a shape rule runs).
fn takes_operands(def: &dyn OpDef, count: usize) -> bool {
    let specs = def.schema().operands;
    let required = specs.iter().filter(|s| s.arity == Arity::One).count();
    let variadic = specs.iter().any(|s| s.arity == Arity::Variadic);
    count >= required + usize::from(variadic) && (variadic || count <= specs.len())
}

/// Every op of the tools' registry.
fn all_ops() -> Vec<&'static dyn OpDef> {
    let registry = registry();
    let names: Vec<String> = registry.op_names().map(str::to_string).collect();
    names.iter().filter_map(|n| registry.op(n)).collect()
}

/// Infers every result type again after a mutation (callees first), with each op's shape
/// rule; the result types of each function become those of what it returns. `None` when a
/// rule rejects the mutant.
fn retype(module: &mut Module) -> Option<()> {
    let mut done = vec![false; module.funcs.len()];
    for f in 0..module.funcs.len() {
        retype_func(module, f, &mut done, 0)?;
    }
    Some(())
}

fn retype_func(module: &mut Module, f: usize, done: &mut [bool], depth: usize) -> Option<()> {
    if done[f] {
        return Some(());
    }
    if depth > module.funcs.len() {
        return None;
    }
    let callees: Vec<usize> = module.funcs[f]
        .ops
        .iter()
        .filter_map(|op| match op.kind {
            OpKind::Call(callee) => Some(callee),
            OpKind::Dialect(_) => None,
        })
        .collect();
    for callee in callees {
        retype_func(module, callee, done, depth + 1)?;
    }
    let signatures: Vec<(Vec<TensorType>, Vec<TensorType>)> = module
        .funcs
        .iter()
        .map(|g| (g.param_types().cloned().collect(), g.result_types.clone()))
        .collect();
    let func = &mut module.funcs[f];
    for i in 0..func.ops.len() {
        let op = &func.ops[i];
        let operands: Vec<(TensorType, Span)> = op
            .operands
            .iter()
            .map(|&v| (func.values[v.index()].ty.clone(), Span::at(0)))
            .collect();
        let types = match op.kind {
            OpKind::Call(callee) => {
                let (params, results) = &signatures[callee];
                let given: Vec<TensorType> = operands.iter().map(|(t, _)| t.clone()).collect();
                if &given != params {
                    return None;
                }
                results.clone()
            }
            OpKind::Dialect(def) => {
                let schema = def.schema();
                if !takes_operands(def, operands.len()) {
                    return None;
                }
                let attrs: BTreeMap<String, (Attribute, Span)> = op
                    .attrs
                    .iter()
                    .map(|(k, v)| (k.clone(), (v.clone(), Span::at(0))))
                    .collect();
                let written: Vec<(TensorType, Span)> = op
                    .results
                    .iter()
                    .map(|&r| (func.values[r.index()].ty.clone(), Span::at(0)))
                    .collect();
                let mut diagnostics = Vec::new();
                let mut ctx = InferContext::new(
                    schema,
                    &operands,
                    &attrs,
                    schema.result_type_required.then_some(&written[..]),
                    Span::at(0),
                    &mut diagnostics,
                );
                let inferred = def.infer(&mut ctx)?;
                inferred
                    .into_iter()
                    .map(|ty| ctx.check_extent(ty))
                    .collect::<Option<Vec<_>>>()?
            }
        };
        if types.len() != func.ops[i].results.len() {
            return None;
        }
        for (&result, ty) in func.ops[i].results.clone().iter().zip(types) {
            func.values[result.index()].ty = ty;
        }
    }
    func.result_types = func
        .returns
        .iter()
        .map(|&r| func.values[r.index()].ty.clone())
        .collect();
    done[f] = true;
    Some(())
}

/// The most elements any value of a mutant may have, and the most arithmetic per call:
/// larger ones take seconds per configuration in the (debug-built) reference interpreter.
const MAX_VALUE_ELEMENTS: u64 = 1 << 16;
const MAX_FLOPS: u64 = 1 << 22;

/// Whether `module` is small enough to check in every configuration quickly.
fn small(module: &Module) -> bool {
    let elements_fit = module.funcs.iter().all(|f| {
        f.values
            .iter()
            .all(|v| v.ty.num_elements().is_some_and(|n| n <= MAX_VALUE_ELEMENTS))
    });
    elements_fit && (0..module.funcs.len()).all(|f| module.flops(f) <= MAX_FLOPS)
}

/// Mutants of every model, seeds from `first`, until `cases` were accepted by the front end
/// (or ten times as many were tried); each is checked everywhere. Returns the failures and
/// how many mutants ran.
pub fn fuzz(first: u64, cases: u64) -> (Vec<String>, u64) {
    let models: Vec<(String, Module)> = tsr_files("testdata/models")
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("model is readable");
            let name = path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (
                name.clone(),
                load_text(&name, text.as_bytes()).expect("models are valid"),
            )
        })
        .collect();
    let mut failures = Vec::new();
    let mut accepted = 0;
    let mut seed = first;
    while accepted < cases && seed < first + 10 * cases.max(1) {
        let mut rng = Rng::new(seed);
        let (name, model) = rng.pick(&models);
        let mut mutant = model.clone();
        // One to three changes, each re-typed.
        for _ in 0..1 + rng.below(3) {
            if let Some(next) = mutate(&mutant, &mut rng) {
                mutant = next;
            }
        }
        seed += 1;
        if &mutant == model {
            continue;
        }
        let text = print_module(&mutant);
        let Ok(accepted_module) = load_text("mutant", text.as_bytes()) else {
            continue;
        };
        if !small(&accepted_module) {
            continue;
        }
        accepted += 1;
        let Some(entry) = rng.choose(&accepted_module.funcs).map(|f| f.name.clone()) else {
            continue;
        };
        failures.extend(check_everywhere(
            &text,
            &format!("mutant-{name}-{}", seed - 1),
            &entry,
        ));
    }
    (failures, accepted)
}

#[test]
fn mutants_of_every_model_compile_everywhere_and_agree_with_the_reference() {
    let cases = env_number("TESSERA_FUZZ_CASES", 10);
    let first = env_number("TESSERA_FUZZ_SEED", 1);
    let (failures, ran) = fuzz(first, cases);
    assert!(ran > 0, "no mutant was accepted by the front end");
    assert!(
        failures.is_empty(),
        "{} of {ran} mutants failed (seeds from {first}; programs under {}):\n\n{}",
        failures.len(),
        root().join("target/compile-check").display(),
        failures.join("\n\n")
    );
}
