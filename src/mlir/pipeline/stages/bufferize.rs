//! `tessera-bufferize`: one-shot bufferization across function boundaries with identity
//! layouts (compiled functions take plain strided memrefs); results become caller-owned
//! out-parameters (the buffer computing a result is the out-parameter: no allocation, no
//! copy); temporaries are freed after their last use. Precondition: MLIR on tensors.

use crate::diag::Diagnostic;
use crate::mlir::bridge::walk::{walk, WalkedOp};
use crate::mlir::pipeline::stages::{
    expect_mlir, run_upstream, Program, Stage, StageEnv, StageOptions, CANONICALIZE,
};
use melior::ir::attribute::{BoolAttribute, FlatSymbolRefAttribute, StringAttribute};
use melior::ir::BlockLike;
use std::collections::{HashMap, HashSet};

/// Bufferization as a stage.
pub struct Bufferize;

/// One-shot bufferization, after widely read parameters and constants are read through
/// tensors of their own per group of readers and shared fills are repeated per writer
/// (src/mlir/pipeline/cxx/shared_tensors.cpp: the analysis is quadratic in the users of one value).
const BUFFERIZE: &str = "tessera-split-shared-tensors,tessera-pad-in-place,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}";

/// Results as out-parameters, the buffer computing each result being the out-parameter itself
/// (no copy). MLIR 19 crashes hoisting a result that is a parameter or another result: those
/// are copied into a tensor of their own first (`copy_aliased_results`), and parameters are
/// not writable (`bufferization.writable = false`: an op writing into one writes into a copy),
/// which also keeps the caller's inputs intact.
const OUT_PARAMS: &str = "buffer-results-to-out-params{hoist-static-allocs}";

/// Freeing temporaries, once CSE and canonicalization have folded away the copies of a buffer
/// into itself that bufferizing in place leaves: each right after its last use where no
/// buffer can leave its block (src/mlir/pipeline/cxx/deallocation.cpp), else by upstream's
/// ownership-based pipeline.
const DEALLOCATE: &str = "tessera-deallocate,convert-bufferization-to-memref";

impl Stage for Bufferize {
    fn name(&self) -> &'static str {
        "tessera-bufferize"
    }

    fn summary(&self) -> &'static str {
        "Bufferize across functions; results become out-parameters; temporaries are freed after their last use. Input: tensors."
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        _: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let mut module = expect_mlir(program, self.name())?;
        let ctx = env.context.context();
        walk(&module, |op| {
            if op.name() == "func.func" {
                op.set_argument_attributes(
                    "bufferization.writable",
                    BoolAttribute::new(ctx, false).into(),
                );
            }
        });
        copy_aliased_results(&module);
        run_upstream(env, &mut module, BUFFERIZE, self.name())?;
        number_globals(env.context.context(), &module);
        run_upstream(
            env,
            &mut module,
            &format!("{CANONICALIZE},{OUT_PARAMS}"),
            self.name(),
        )?;
        run_upstream(
            env,
            &mut module,
            &format!("cse,{CANONICALIZE},{DEALLOCATE}"),
            self.name(),
        )?;
        Ok(Program::Mlir(module))
    }
}

/// Gives each function result that is a parameter, or the same value as an earlier result,
/// a tensor of its own (a copy), so that every result can be computed in its out-parameter.
fn copy_aliased_results(module: &melior::ir::Module<'_>) {
    let mut returns = Vec::new();
    walk(module, |op| {
        if op.name() == "func.return" {
            let aliased = op.aliased_operands();
            if !aliased.is_empty() {
                returns.push((op.raw(), aliased));
            }
        }
    });
    for (op, aliased) in returns {
        let op = WalkedOp::from_raw(op);
        for index in aliased {
            op.copy_operand(index);
        }
    }
}

/// Renames the module's `memref.global`s `__constant_0`, `__constant_1`, ... in the order the
/// functions first read them, and puts them first in that order. Bufferization names and
/// places the globals of tensor constants in an order that follows pointer hashing (of the
/// functions it visits), which differs from run to run; renumbered, the output of every stage
/// after it is reproducible.
fn number_globals(context: &melior::Context, module: &melior::ir::Module<'_>) {
    let mut globals = HashMap::new();
    let mut taken = HashSet::new();
    let mut reads = Vec::new();
    walk(module, |op| {
        let symbol = || op.string_attribute("sym_name");
        match op.name().as_str() {
            "memref.global" => {
                if let Some(name) = symbol() {
                    globals.insert(name, op.raw());
                }
            }
            "memref.get_global" => reads.push(op.raw()),
            _ => taken.extend(symbol()),
        }
    });
    let mut renamed: HashMap<String, String> = HashMap::new();
    let mut order = Vec::new();
    let mut next = 0;
    for read in reads {
        let read = WalkedOp::from_raw(read);
        let Some(old) = read
            .attribute("name")
            .map(|a| a.to_string().trim_start_matches('@').to_string())
        else {
            continue;
        };
        let Some(&global) = globals.get(&old) else {
            continue;
        };
        let new = renamed.entry(old).or_insert_with(|| {
            let name = loop {
                let candidate = format!("__constant_{next}");
                next += 1;
                if !taken.contains(&candidate) {
                    break candidate;
                }
            };
            order.push(global);
            WalkedOp::from_raw(global)
                .set_attribute("sym_name", StringAttribute::new(context, &name).into());
            name
        });
        read.set_attribute("name", FlatSymbolRefAttribute::new(context, new).into());
    }
    let Some(first) = module.body().first_operation() else {
        return;
    };
    let mut anchor = WalkedOp::from_raw(first.to_raw());
    for global in order.into_iter().rev() {
        let global = WalkedOp::from_raw(global);
        if global.raw().ptr != anchor.raw().ptr {
            global.move_before(&anchor);
        }
        anchor = global;
    }
}
